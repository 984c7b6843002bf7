package prepare

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func TestOrderedParallel(t *testing.T) {
	tests := []struct {
		desc    string
		n       int
		workers int
		stopAt  int // consume returns false at this result; -1 = never
	}{
		{desc: "empty", n: 0, workers: 3, stopAt: -1},
		{desc: "one worker keeps order", n: 50, workers: 1, stopAt: -1},
		{desc: "many workers keep order", n: 500, workers: 8, stopAt: -1},
		{desc: "consume stops early", n: 500, workers: 4, stopAt: 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			produce := func(_ context.Context, emit func(int) bool) {
				for i := range tc.n {
					if !emit(i) {
						return
					}
				}
			}
			work := func(i int) int {
				// Uneven work, so that later items often finish before earlier ones.
				if i%7 == 0 {
					runtime.Gosched()
				}
				return i * i
			}
			var got []int
			consume := func(v int) bool {
				got = append(got, v)
				return len(got)-1 != tc.stopAt
			}
			if err := orderedParallel(context.Background(), tc.workers, produce, work, consume); err != nil {
				t.Fatal(err)
			}
			want := tc.n
			if tc.stopAt >= 0 {
				want = tc.stopAt + 1
			}
			if len(got) != want {
				t.Fatalf("got %d results, want %d", len(got), want)
			}
			for i, v := range got {
				if v != i*i {
					t.Fatalf("result %d = %d, want %d", i, v, i*i)
				}
			}
		})
	}
}

// TestOrderedParallelCanceled checks that an endless producer stops once ctx is canceled. Whether the
// cancellation is seen while a result is awaited (an error) or after the producer stopped (nil, and
// the caller checks ctx) depends on scheduling.
func TestOrderedParallelCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	produce := func(ctx context.Context, emit func(int) bool) {
		for i := 0; ; i++ {
			if !emit(i) {
				return
			}
		}
	}
	consume := func(v int) bool {
		if v == 20 {
			cancel()
		}
		return true
	}
	err := orderedParallel(ctx, 3, produce, func(i int) int { return i }, consume)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled or nil", err)
	}
}

package prepare

import (
	"context"
	"iter"
	"sync"

	"github.com/tracksum/tracksum/dataset"
)

// orderedParallel runs work on every item that produce emits, in a pool of workers, and hands the
// results to consume on the calling goroutine in the order the items were emitted: the work is
// parallel, but what consume does with the results cannot depend on scheduling, which keeps the
// prepared output byte-identical from run to run.
//
// produce runs in its own goroutine with a context that is canceled when orderedParallel returns;
// emit returns false once that context is done, and produce should then return. consume returns
// false to stop early. orderedParallel returns ctx's error when ctx is canceled while a result is
// awaited, and nil otherwise: produce and consume keep their own errors for the caller, who reads
// them after orderedParallel returns (produce has returned by then unless ctx's error is returned).
func orderedParallel[In, Out any](ctx context.Context, workers int,
	produce func(ctx context.Context, emit func(In) bool), work func(In) Out, consume func(Out) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type slot struct {
		in   In
		out  Out
		done chan struct{}
	}
	// Every slot goes both to the workers and, in order, to the consumer, which waits on its done.
	jobs := make(chan *slot, workers*2)
	ordered := make(chan *slot, workers*4)
	go func() {
		defer close(jobs)
		defer close(ordered)
		produce(ctx, func(in In) bool {
			s := &slot{in: in, done: make(chan struct{})}
			select {
			case ordered <- s:
			case <-ctx.Done():
				return false
			}
			select {
			case jobs <- s:
			case <-ctx.Done():
				return false
			}
			return true
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				s.out = work(s.in)
				close(s.done)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	for s := range ordered {
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !consume(s.out) {
			return nil
		}
	}
	return nil
}

// decoded is one line after the parallel stage.
type decoded struct {
	line dataset.Line
	in   dataset.Instance
	err  error
}

// parallelDecode applies decode to the lines in a pool of workers and yields the results in input
// order. A read error is yielded (in order) and ends the sequence; decode errors are yielded with
// their line and the caller decides. JSON decoding dominates the cost of reading, and it is
// independent per line.
func parallelDecode(ctx context.Context, lines iter.Seq2[dataset.Line, error], workers int,
	decode func(dataset.Line) (dataset.Instance, error)) iter.Seq2[decoded, error] {
	return func(yield func(decoded, error) bool) {
		var readErr error
		stopped := false
		produce := func(_ context.Context, emit func([]dataset.Line) bool) {
			var cur []dataset.Line
			for l, err := range lines {
				if err != nil {
					readErr = err
					break
				}
				cur = append(cur, l)
				if len(cur) == batchLines {
					if !emit(cur) {
						return
					}
					cur = nil
				}
			}
			if len(cur) > 0 {
				emit(cur)
			}
		}
		work := func(ls []dataset.Line) []decoded {
			out := make([]decoded, len(ls))
			for i, l := range ls {
				in, err := decode(l)
				out[i] = decoded{line: l, in: in, err: err}
			}
			return out
		}
		consume := func(out []decoded) bool {
			for _, d := range out {
				if !yield(d, nil) {
					stopped = true
					return false
				}
			}
			return true
		}
		if err := orderedParallel(ctx, workers, produce, work, consume); err != nil {
			yield(decoded{}, err)
			return
		}
		if stopped {
			return
		}
		if readErr != nil {
			yield(decoded{}, readErr)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(decoded{}, err)
		}
	}
}

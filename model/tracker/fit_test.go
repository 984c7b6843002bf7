package tracker

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// TestWeigh: tracker.imbalance as every backbone applies it (Weigh): a relevant pair's example
// repeated in place under oversample, weighted under pos_weight, the pairs' order kept; a failed
// example and a cancelled context stop it.
func TestWeigh(t *testing.T) {
	labels := []bool{false, true, false, false, true, false, false}
	type ex struct {
		pair int
		w    float32
	}
	build := func(i int, w float32) (ex, error) { return ex{i, w}, nil }
	for _, tc := range []struct {
		desc, imbalance string
		oversample      int
		posWeight       float64
		want            []ex
	}{
		{"oversample repeats each positive in place", "oversample", 3, 0,
			[]ex{{0, 1}, {1, 1}, {1, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {4, 1}, {4, 1}, {5, 1}, {6, 1}}},
		{"pos_weight as set", "pos_weight", 3, 2.5,
			[]ex{{0, 1}, {1, 2.5}, {2, 1}, {3, 1}, {4, 2.5}, {5, 1}, {6, 1}}},
		{"pos_weight 0 is #neg/#pos", "pos_weight", 3, 0,
			[]ex{{0, 1}, {1, 2.5}, {2, 1}, {3, 1}, {4, 2.5}, {5, 1}, {6, 1}}},
		{"none", "none", 3, 2.5,
			[]ex{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := config.DefaultTracker()
			c.Imbalance, c.Oversample, c.PosWeight = tc.imbalance, tc.oversample, tc.posWeight
			got, err := Weigh(context.Background(), c, labels, build)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Weigh = %v, %v; want %v", got, err, tc.want)
			}
		})
	}

	c := config.DefaultTracker()
	bad := errors.New("sentence 2 does not fit")
	if _, err := Weigh(context.Background(), c, labels, func(i int, w float32) (ex, error) {
		if i == 2 {
			return ex{}, bad
		}
		return ex{i, w}, nil
	}); !errors.Is(err, bad) {
		t.Errorf("a failed example: err %v, want %v", err, bad)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Weigh(ctx, c, labels, build); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: err %v, want context.Canceled", err)
	}
}

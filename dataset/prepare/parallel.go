package prepare

import (
	"context"
	"iter"
	"sync"

	"github.com/tracksum/tracksum/dataset"
)

// decoded is one line after the parallel stage.
type decoded struct {
	line dataset.Line
	in   dataset.Instance
	err  error
}

type lineBatch struct {
	lines []dataset.Line
	out   []decoded
	done  chan struct{}
}

// parallelDecode applies decode to the lines in a pool of workers and yields the results in input
// order. A read error is yielded (in order) and ends the sequence; decode errors are yielded with
// their line and the caller decides. JSON decoding dominates the cost of reading, and it is
// independent per line.
func parallelDecode(ctx context.Context, lines iter.Seq2[dataset.Line, error], workers int,
	decode func(dataset.Line) (dataset.Instance, error)) iter.Seq2[decoded, error] {
	return func(yield func(decoded, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		jobs := make(chan *lineBatch, workers*2)
		ordered := make(chan *lineBatch, workers*4)
		var readErr error
		go func() {
			defer close(jobs)
			defer close(ordered)
			cur := &lineBatch{done: make(chan struct{})}
			send := func() bool {
				select {
				case ordered <- cur:
				case <-ctx.Done():
					return false
				}
				select {
				case jobs <- cur:
				case <-ctx.Done():
					return false
				}
				cur = &lineBatch{done: make(chan struct{})}
				return true
			}
			for l, err := range lines {
				if err != nil {
					readErr = err
					break
				}
				cur.lines = append(cur.lines, l)
				if len(cur.lines) == batchLines && !send() {
					return
				}
			}
			if len(cur.lines) > 0 {
				send()
			}
		}()
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range jobs {
					b.out = make([]decoded, len(b.lines))
					for i, l := range b.lines {
						in, err := decode(l)
						b.out[i] = decoded{line: l, in: in, err: err}
					}
					close(b.done)
				}
			}()
		}
		defer wg.Wait()
		defer cancel()
		for b := range ordered {
			select {
			case <-b.done:
			case <-ctx.Done():
				yield(decoded{}, ctx.Err())
				return
			}
			for _, d := range b.out {
				if !yield(d, nil) {
					return
				}
			}
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

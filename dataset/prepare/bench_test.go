package prepare

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
)

// BenchmarkPrepare measures prepare end to end on synthetic abstracts (100,000 unless
// TRACKSUM_BENCH_ABSTRACTS says otherwise):
//
//	go test ./dataset/prepare -run '^$' -bench Prepare -benchtime 1x
//	TRACKSUM_BENCH_ABSTRACTS=10000 go test ./dataset/prepare -run '^$' -bench Prepare -benchtime 1x
//
// "jsonl" reads a sample written to a JSONL file beforehand (validating reader, the path of real
// data); "sample" generates the abstracts on the fly (prepare without --input). Reported: abstracts/s,
// rows/s (all tasks), input MB/s, CPU seconds (user+system; the fair figure on a shared machine),
// abstracts per CPU second, the peak Go heap sampled during the run and the process's peak RSS.
// Run it at two sizes to check that memory stays flat in the input size.
func BenchmarkPrepare(b *testing.B) {
	n := 100000
	if s := os.Getenv("TRACKSUM_BENCH_ABSTRACTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("TRACKSUM_BENCH_ABSTRACTS=%q: want a positive integer", s)
		}
		n = v
	}
	dir := b.TempDir()
	cfg := config.Default()
	cfg.Prepare.SampleSize = n
	input := filepath.Join(dir, "sample.jsonl")
	f, err := os.Create(input)
	if err != nil {
		b.Fatal(err)
	}
	if err := dataset.WriteSynthetic(f, cfg.Seed, n); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"jsonl", "sample"} {
		b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
			var inputs []string
			if mode == "jsonl" {
				inputs = []string{input}
			}
			var sum *Summary
			runtime.GC()
			stop := sampleHeap()
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for i := range b.N {
				out := filepath.Join(dir, fmt.Sprintf("out-%s-%d", mode, i))
				sum, err = Run(context.Background(), &cfg, Options{Inputs: inputs, Out: out})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			b.StopTimer()
			cpu := (cpuSeconds() - cpu0) / float64(b.N)
			heap := stop()
			secs := b.Elapsed().Seconds() / float64(b.N)
			rows := 0
			for _, t := range sum.Manifest.Tasks {
				for _, s := range t.Splits {
					rows += s.Rows
				}
			}
			b.ReportMetric(float64(n)/secs, "abstracts/s")
			b.ReportMetric(float64(rows)/secs, "rows/s")
			if sum.InputBytes > 0 {
				b.ReportMetric(float64(sum.InputBytes)/1e6/secs, "MB/s")
			}
			// CPU time is the fair figure on a shared machine: wall time depends on other load.
			b.ReportMetric(cpu, "cpu-s/op")
			b.ReportMetric(float64(n)/cpu, "abstracts/cpu-s")
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
		})
	}
}

// sampleHeap records the largest HeapInuse seen until the returned function is called.
func sampleHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// cpuSeconds returns the user+system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSS returns the process's peak resident set size (VmHWM, Linux), or 0 when unknown.
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

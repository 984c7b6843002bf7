package prepare

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/dataset"
)

// Print writes the closing report of a run: rows and positives per task and split, positives per
// aspect, tokenizer size and throughput.
func (s *Summary) Print(w io.Writer) {
	m := s.Manifest
	src := fmt.Sprintf("%d input file(s)", len(m.Inputs))
	if m.Source == "sample" {
		src = fmt.Sprintf("built-in sample (%d abstracts, seed %d)", m.SampleSize, m.Seed)
	}
	fmt.Fprintf(w, "prepared %d instances (%d abstracts, %d negative) from %s, aspect set %s\n",
		m.Counts.Instances, m.Counts.Abstracts, m.Counts.Negatives, src, m.AspectSet)
	fmt.Fprintf(w, "splits by %s: train %d, dev %d, test %d groups\n", m.SplitInfo.By,
		m.SplitInfo.Groups[dataset.SplitTrain], m.SplitInfo.Groups[dataset.SplitDev], m.SplitInfo.Groups[dataset.SplitTest])
	fmt.Fprintf(w, "%-15s %-6s %9s %9s %7s\n", "task", "split", "rows", "positive", "shards")
	for _, t := range dataset.Tasks {
		total, pos := 0, 0
		for _, sp := range dataset.Splits {
			c := m.Tasks[t].Splits[sp]
			total += c.Rows
			pos += c.Positives
			fmt.Fprintf(w, "%-15s %-6s %9d %9d %7d\n", t, sp, c.Rows, c.Positives, len(c.Shards))
		}
		fmt.Fprintf(w, "%-15s %-6s %9d %9d\n", t, "all", total, pos)
	}
	byAspect := map[string]int{}
	for _, sp := range dataset.Splits {
		for a, n := range m.Tasks[dataset.TaskTracker].Splits[sp].PositivesByAspect {
			byAspect[a] += n
		}
	}
	var parts []string
	order := dataset.Aspects(m.AspectSet)
	for _, a := range order {
		parts = append(parts, fmt.Sprintf("%s %d", a.Code, byAspect[a.Code]))
	}
	if len(order) == 0 {
		keys := make([]string, 0, len(byAspect))
		for a := range byAspect {
			keys = append(keys, a)
		}
		slices.Sort(keys)
		for _, a := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", a, byAspect[a]))
		}
	}
	fmt.Fprintf(w, "cited sentences per aspect (tracker positives): %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "tokenizer: %s, %d tokens, learned from %d training texts\n", m.Tokenizer.Kind, m.Tokenizer.VocabSize, m.Tokenizer.TrainTexts)
	secs := max(s.Elapsed.Seconds(), 1e-9)
	rows := 0
	for _, t := range dataset.Tasks {
		for _, sp := range dataset.Splits {
			rows += m.Tasks[t].Splits[sp].Rows
		}
	}
	line := fmt.Sprintf("time %.2fs: %.0f abstracts/s, %.0f rows/s", secs, float64(m.Counts.Abstracts)/secs, float64(rows)/secs)
	if s.InputBytes > 0 {
		line += fmt.Sprintf(", %.1f MB/s of input", float64(s.InputBytes)/1e6/secs)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	line += fmt.Sprintf(", Go runtime memory %d MiB", ms.Sys>>20)
	fmt.Fprintln(w, line)
}

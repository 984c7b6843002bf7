package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
)

func runInto(out string, overwrite bool) error {
	_, err := Run(context.Background(), Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Out: out, Overwrite: overwrite, Config: testConfig()})
	return err
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Issue 10 item 14: `eval --out` into a prepared directory overwrote its config.yaml. A non-empty
// directory that is not a previous eval output is refused, since issue 22 (defects 6 and 7) with
// --overwrite too; a previous eval output is replaced as a whole, since issue 35 item 17 only with
// --overwrite, as every command's output.
func TestRunOutIntoForeignDirectoryRefused(t *testing.T) {
	parent := t.TempDir()
	prepared := filepath.Join(parent, "prepared")
	os.MkdirAll(prepared, 0o755)
	for name, content := range map[string]string{"config.yaml": "seed: 1\n", "manifest.json": "{}\n"} {
		os.WriteFile(filepath.Join(prepared, name), []byte(content), 0o644)
	}
	err := runInto(prepared, false)
	if err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("err = %v, want a refusal naming --overwrite", err)
	}
	if got, _ := os.ReadFile(filepath.Join(prepared, "config.yaml")); string(got) != "seed: 1\n" {
		t.Errorf("config.yaml changed to %q", got)
	}
	if got := listDir(t, parent); !slices.Equal(got, []string{"prepared"}) {
		t.Errorf("left behind: %v", got)
	}

	evalDir := filepath.Join(parent, "eval")
	if err := runInto(evalDir, false); err != nil {
		t.Fatal(err)
	}
	if err := runInto(evalDir, true); err != nil {
		t.Fatalf("--overwrite of a previous eval output: %v", err)
	}
	if got := listDir(t, evalDir); !slices.Equal(got, []string{"config.yaml", "instances.jsonl", "report.html", "report.json"}) {
		t.Errorf("eval output holds %v", got)
	}
	// A user's file beside a previous output makes it foreign.
	os.WriteFile(filepath.Join(evalDir, "notes.txt"), []byte("mine"), 0o644)
	if err := runInto(evalDir, true); !errors.Is(err, atomicio.ErrForeign) {
		t.Errorf("--overwrite of an eval directory holding a user's file: %v, want ErrForeign", err)
	}
	if err := runInto(prepared, true); !errors.Is(err, atomicio.ErrForeign) || !strings.Contains(err.Error(), "holds manifest.json, not written by tracksum-eval") {
		t.Fatalf("--overwrite into a prepared directory: %v, want ErrForeign", err)
	}
	if _, err := os.Stat(filepath.Join(prepared, "manifest.json")); err != nil {
		t.Errorf("--overwrite deleted a file eval did not write: %v", err)
	}
	os.Remove(filepath.Join(evalDir, "notes.txt"))
	if err := runInto(evalDir, true); err != nil {
		t.Fatalf("--overwrite of a previous eval output: %v", err)
	}
	file := filepath.Join(parent, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	if err := runInto(file, true); !errors.Is(err, atomicio.ErrNotDir) {
		t.Errorf("--out FILE: %v, want ErrNotDir", err)
	}
	if got, _ := os.ReadFile(file); string(got) != "keep" {
		t.Errorf("--out FILE changed it to %q", got)
	}
}

// Issue 10 item 14: a full disk left a partial eval directory. A write error half-way leaves
// --out as it was (absent, or the previous complete output).
func TestRunWriteErrorLeavesNoPartialOutput(t *testing.T) {
	full := errors.New("no space left on device")
	defer func(w func(string, *Outcome, *config.Config) error) { writeOutputs = w }(writeOutputs)
	writeOutputs = func(dir string, out *Outcome, cfg *config.Config) error {
		if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("{"), 0o644); err != nil {
			return err
		}
		return full
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "eval")
	if err := runInto(out, false); !errors.Is(err, full) {
		t.Fatalf("err = %v, want the write error", err)
	}
	if got := listDir(t, parent); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	writeOutputs = WriteOutputs
	if err := runInto(out, false); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(out, "report.json"))
	writeOutputs = func(dir string, o *Outcome, cfg *config.Config) error { return full }
	if err := runInto(out, true); !errors.Is(err, full) {
		t.Fatalf("err = %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "report.json")); string(after) != string(before) || len(before) == 0 {
		t.Error("a failed run changed the previous output")
	}
	if got := listDir(t, parent); !slices.Equal(got, []string{"eval"}) {
		t.Errorf("left behind: %v", got)
	}
}

// Issue 10 item 4: two eval runs on one --out mixed report.json, instances.jsonl and report.html
// of different runs. While a run holds the output, another fails at once and writes nothing.
func TestRunLockedOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "eval")
	l, err := atomicio.Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := runInto(out, true); !errors.Is(err, atomicio.ErrLocked) || !strings.Contains(err.Error(), "another tracksum run holds") {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a locked-out run wrote the output")
	}
}

// TestReportSampledPastLimit is the regression test of issue 22's report rough edge: an eval of
// 100k instances wrote a 310 MB report.html (1.56 GB RSS). Past ReportInstances the page shows an
// evenly spaced sample of whole abstracts and says so; instances.jsonl keeps every instance.
func TestReportSampledPastLimit(t *testing.T) {
	defer func(n int) { ReportInstances = n }(ReportInstances)
	dir := filepath.Join(t.TempDir(), "eval")
	ReportInstances = 4
	if err := runInto(dir, false); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	cards := strings.Count(string(html), `<div class="card" `)
	// At least one abstract is shown whole, even when it alone passes the limit.
	if cards == 0 || cards >= 9 || !strings.Contains(string(html), "This page shows "+fmt.Sprint(cards)+" of the 9 instances: every 3rd abstract") {
		t.Errorf("report.html shows %d cards; note: %v", cards, strings.Contains(string(html), "This page shows"))
	}
	inst, _ := os.ReadFile(filepath.Join(dir, "instances.jsonl"))
	if n := strings.Count(string(inst), "\n"); n != 9 {
		t.Errorf("instances.jsonl holds %d instances, want all 9", n)
	}
	// Under the limit, every instance is shown and there is no note.
	ReportInstances = 2000
	if err := runInto(dir, true); err != nil {
		t.Fatal(err)
	}
	html, _ = os.ReadFile(filepath.Join(dir, "report.html"))
	if n := strings.Count(string(html), `<div class="card" `); n != 9 || strings.Contains(string(html), "This page shows") {
		t.Errorf("under the limit: %d cards, want 9 and no note", n)
	}
}

// TestRerunNeedsOverwrite (issue 35 item 17): eval replaced its previous output without
// --overwrite while prepare and export required it, and --help described --overwrite backwards.
// A previous eval output is replaced only with --overwrite, as every command's --out; without it
// the rerun is refused, naming --overwrite, and the previous output stays.
func TestRerunNeedsOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "eval")
	if err := runInto(out, false); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), append(before, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runInto(out, false); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("rerun without --overwrite: %v, want a refusal naming --overwrite", err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "report.json")); string(got) != string(before)+" " {
		t.Error("a refused rerun changed the previous output")
	}
	if err := runInto(out, true); err != nil {
		t.Fatalf("rerun with --overwrite: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "report.json")); string(got) != string(before) {
		t.Error("--overwrite did not replace the previous output")
	}
	usage := Command().Flags.Lookup("overwrite").Usage
	for _, want := range []string{"replace a previous eval output", "without it a non-empty --out is refused", "anything else is never replaced"} {
		if !strings.Contains(usage, want) {
			t.Errorf("--overwrite's help %q does not say %q", usage, want)
		}
	}
}

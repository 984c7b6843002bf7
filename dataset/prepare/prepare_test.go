package prepare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/subword"
)

func testConfig() *config.Config {
	cfg := config.Default()
	cfg.Prepare.SampleSize = 40
	cfg.Prepare.RowsPerShard = 300
	cfg.Prepare.RowGroupRows = 64
	cfg.Tokenizer.VocabSize = 600
	cfg.Tokenizer.MinFrequency = 1
	return &cfg
}

func run(t *testing.T, cfg *config.Config, inputs []string, out string) *Summary {
	t.Helper()
	sum, err := Run(context.Background(), cfg, Options{Inputs: inputs, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func readAll[T any](t *testing.T, dir, task, split string) []T {
	t.Helper()
	var out []T
	for r, err := range dataset.ReadShards[T](dir, task, split) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestRunSample prepares the built-in sample and checks the shards against the instances they come
// from, the manifest against the shards, and the token ids against the written tokenizer.json.
func TestRunSample(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prepared")
	cfg := testConfig()
	sum := run(t, cfg, nil, out)
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "sample" || m.Counts.Abstracts != 40 || m.Counts.Instances != 280 || m.AspectSet != dataset.AspectSetTracSum {
		t.Errorf("manifest header %+v %+v", m.Source, m.Counts)
	}
	if sum.Manifest.Counts != m.Counts {
		t.Errorf("summary counts %+v != manifest %+v", sum.Manifest.Counts, m.Counts)
	}
	for _, f := range []string{dataset.SplitsFile, dataset.TokenizerFile, dataset.ConfigFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := config.ReadFile(filepath.Join(out, dataset.ConfigFile)); err != nil {
		t.Errorf("config.yaml does not load back: %v", err)
	}
	tok, err := subword.Load(filepath.Join(out, dataset.TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	sep, _ := tok.SpecialID("[SEP]")

	// Expected rows, rebuilt from the generator and the split assignment.
	want := map[string]map[string]int{}
	for _, task := range dataset.Tasks {
		want[task] = map[string]int{}
	}
	splits := map[string]string{}
	for _, split := range dataset.Splits {
		c := m.Tasks[dataset.TaskTracker].Splits[split]
		if len(c.Shards) > 0 && c.Shards[0].Path != fmt.Sprintf("tracker/%s-00000-of-%05d.parquet", split, len(c.Shards)) {
			t.Errorf("shard path %s", c.Shards[0].Path)
		}
	}
	assign := readSplits(t, out)
	for abs := range dataset.Synthetic(cfg.Seed, 40) {
		for _, in := range abs {
			split := assign[in.PMID]
			splits[in.PMID] = split
			want[dataset.TaskTracker][split] += len(in.Document)
			want[dataset.TaskEndToEnd][split]++
			if !in.IsNegative() {
				want[dataset.TaskSummarizer][split]++
				want[dataset.TaskSumThenTrack][split] += len(in.Document)
			}
		}
	}
	for _, task := range dataset.Tasks {
		for _, split := range dataset.Splits {
			c := m.Tasks[task].Splits[split]
			if c.Rows != want[task][split] {
				t.Errorf("%s/%s: manifest rows %d, want %d", task, split, c.Rows, want[task][split])
			}
			n := 0
			for _, sh := range c.Shards {
				n += sh.Rows
				if sh.Rows > cfg.Prepare.RowsPerShard || len(sh.SHA256) != 64 {
					t.Errorf("shard %+v", sh)
				}
			}
			if n != c.Rows {
				t.Errorf("%s/%s: shards hold %d rows, manifest says %d", task, split, n, c.Rows)
			}
		}
	}
	if len(m.Tasks[dataset.TaskTracker].Splits[dataset.SplitTrain].Shards) < 2 {
		t.Error("rows_per_shard did not roll over to a second shard")
	}

	tracker := readAll[dataset.TrackerRow](t, out, dataset.TaskTracker, dataset.SplitTrain)
	pos := 0
	for i, r := range tracker {
		if r.Label {
			pos++
		}
		if splits[r.PMID] != dataset.SplitTrain {
			t.Fatalf("row %d: %s is not in train", i, r.PMID)
		}
		if got := tok.Encode(r.Sentence); !slices.Equal(got, r.SentenceIDs) {
			t.Fatalf("row %d: SentenceIDs %v, tokenizer.json gives %v", i, r.SentenceIDs, got)
		}
		if r.DocLength < 1 || r.RelPosition < 0 || r.RelPosition > 1 {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if c := m.Tasks[dataset.TaskTracker].Splits[dataset.SplitTrain]; pos != c.Positives || pos == 0 {
		t.Errorf("tracker train positives: read %d, manifest %d", pos, c.Positives)
	}
	for _, r := range readAll[dataset.SummarizerRow](t, out, dataset.TaskSummarizer, dataset.SplitTrain) {
		var parts [][]int32
		for k, i := range r.CitedIndexes {
			if r.Document[i] != r.CitedSentences[k] {
				t.Fatalf("%s/%s: cited sentence %d is not Document[%d]", r.PMID, r.Aspect, k, i)
			}
			parts = append(parts, tok.Encode(r.CitedSentences[k]))
		}
		if !slices.IsSorted(r.CitedIndexes) {
			t.Errorf("cited indexes not in document order: %v", r.CitedIndexes)
		}
		var wantIDs []int32
		for k, p := range parts {
			if k > 0 {
				wantIDs = append(wantIDs, sep)
			}
			wantIDs = append(wantIDs, p...)
		}
		if !slices.Equal(r.CitedIDs, wantIDs) {
			t.Fatalf("%s/%s: CitedIDs are not the cited sentences joined by [SEP]", r.PMID, r.Aspect)
		}
		if got := tok.Decode(r.SummaryIDs); got != r.Summary {
			t.Fatalf("summary does not decode back: %q vs %q", got, r.Summary)
		}
	}
	for _, r := range readAll[dataset.EndToEndRow](t, out, dataset.TaskEndToEnd, dataset.SplitDev) {
		if (len(r.Citations) == 0) != (r.Summary == dataset.UnknownSummary) {
			t.Errorf("end_to_end %s/%s: citations %v with summary %q", r.PMID, r.Aspect, r.Citations, r.Summary)
		}
	}
}

func readSplits(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dataset.SplitsFile))
	if err != nil {
		t.Fatal(err)
	}
	var a dataset.SplitAssignment
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for split, ids := range a.IDs {
		for _, id := range ids {
			out[id] = split
		}
	}
	return out
}

// sameTree fails unless two directories hold the same files with the same bytes, except the
// files named in ignore.
func sameTree(t *testing.T, a, b string, ignore ...string) {
	t.Helper()
	files := func(root string) map[string][]byte {
		out := map[string][]byte{}
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out[rel], _ = os.ReadFile(p)
			return nil
		})
		return out
	}
	fa, fb := files(a), files(b)
	if len(fa) != len(fb) {
		t.Fatalf("%d files vs %d", len(fa), len(fb))
	}
	for name, x := range fa {
		if slices.Contains(ignore, name) {
			continue
		}
		if !bytes.Equal(x, fb[name]) {
			t.Errorf("%s differs between runs", name)
		}
	}
}

func TestRunDeterministic(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	run(t, cfg, nil, filepath.Join(dir, "a"))
	run(t, cfg, nil, filepath.Join(dir, "b"))
	sameTree(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	// Scheduling must not matter: with one worker only the recorded config differs.
	cfg.Prepare.Workers = 1
	run(t, cfg, nil, filepath.Join(dir, "c"))
	sameTree(t, filepath.Join(dir, "a"), filepath.Join(dir, "c"), dataset.ConfigFile, dataset.ManifestFile)
}

func TestRunInputFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Prepare.SplitBy = dataset.SplitByInstance
	cfg.Prepare.TrainRatio, cfg.Prepare.DevRatio, cfg.Prepare.TestRatio = 0.5, 0, 0.5
	out := filepath.Join(dir, "out")
	run(t, cfg, []string{"../testdata/valid.jsonl"}, out)
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Inputs) != 1 || m.Inputs[0].Instances != 6 || len(m.Inputs[0].SHA256) != 64 {
		t.Errorf("inputs %+v", m.Inputs)
	}
	rows, pos := 0, 0
	for _, s := range m.Tasks[dataset.TaskTracker].Splits {
		rows += s.Rows
		pos += s.Positives
	}
	// 4 instances of a 5-sentence abstract, 2 of a 3-sentence one; 6 cited sentences.
	if rows != 26 || pos != 5 || m.Counts.Negatives != 1 {
		t.Errorf("tracker rows %d positives %d negatives %d, want 26, 5, 1", rows, pos, m.Counts.Negatives)
	}
	if g := m.SplitInfo.Groups; g[dataset.SplitTrain] != 3 || g[dataset.SplitTest] != 3 || g[dataset.SplitDev] != 0 {
		t.Errorf("groups %v", g)
	}
}

// TestRunMalformedLeavesNothing checks that every validation failure is one line naming the file
// and line, and that neither the output directory nor a temporary one is left behind.
func TestRunMalformedLeavesNothing(t *testing.T) {
	files, err := filepath.Glob("../testdata/malformed/*.jsonl")
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			_, err := Run(context.Background(), testConfig(), Options{Inputs: []string{f}, Out: out})
			var ve *dataset.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if !strings.HasPrefix(err.Error(), f+":") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not start with %s:LINE", err, f)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

func TestRunRefusesExistingOutput(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), testConfig(), Options{Out: out}); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("err = %v", err)
	}
	// Since issue 22 (defect 7), --overwrite replaces only a previous prepared directory: a
	// user's file is never deleted.
	if _, err := Run(context.Background(), testConfig(), Options{Out: out, Overwrite: true}); !errors.Is(err, atomicio.ErrForeign) {
		t.Fatalf("--overwrite of a foreign directory: %v, want ErrForeign", err)
	}
	os.Remove(filepath.Join(out, "keep"))
	if _, err := Run(context.Background(), testConfig(), Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), testConfig(), Options{Out: out}); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("previous output without --overwrite: %v", err)
	}
	if _, err := Run(context.Background(), testConfig(), Options{Out: out, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	if _, err := Run(ctx, testConfig(), Options{Out: filepath.Join(parent, "out")}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func sharedData(t testing.TB, rel string) string {
	t.Helper()
	path := filepath.Join("..", "..", "..", "shared", rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not available (needs ../shared beside the repository): %v", rel, err)
	}
	return path
}

// TestRunTracSumDev is the acceptance check of the issue: the figures of the benchmark's dev file
// and byte-identical output on a second run.
func TestRunTracSumDev(t *testing.T) {
	in := sharedData(t, "data/tracsum/tracsum-dev.jsonl")
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	dir := t.TempDir()
	cfg := config.Default()
	run(t, &cfg, []string{in}, filepath.Join(dir, "a"))
	run(t, &cfg, []string{in}, filepath.Join(dir, "b"))
	m, err := dataset.ReadManifest(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	total := func(task string) (rows, pos int) {
		for _, s := range m.Tasks[task].Splits {
			rows += s.Rows
			pos += s.Positives
		}
		return
	}
	if rows, pos := total(dataset.TaskTracker); rows != 6768 || pos != 833 {
		t.Errorf("tracker rows %d (positive %d), want 6768 (833)", rows, pos)
	}
	if rows, _ := total(dataset.TaskSummarizer); rows != 444 {
		t.Errorf("summarizer rows %d, want 444", rows)
	}
	if m.Counts != (dataset.Counts{Instances: 544, Abstracts: 310, Negatives: 100}) {
		t.Errorf("counts %+v", m.Counts)
	}
	sameTree(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
}

func TestRunPCoA(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig()
	cfg.Prepare.SplitBy = dataset.SplitByInstance
	sum := run(t, cfg, []string{"../testdata/pcoa.jsonl"}, out)
	m := sum.Manifest
	if m.AspectSet != dataset.AspectSetPCoA || m.Counts.Instances != 6 || m.Counts.Negatives != 1 {
		t.Errorf("aspect set %s, counts %+v", m.AspectSet, m.Counts)
	}
	var buf bytes.Buffer
	sum.Print(&buf)
	if !strings.Contains(buf.String(), "OB 0, P 1, I 0") || !strings.Contains(buf.String(), "FU 1") {
		t.Errorf("summary does not list PCoA aspects:\n%s", buf.String())
	}
}

// TestRunNastyText feeds text that crashes sugarme/tokenizer when not cleaned (control
// characters, a byte-order mark, combining marks, odd Unicode) through the whole pipeline.
func TestRunNastyText(t *testing.T) {
	doc := []string{
		"\ufeffControl\x00 char\x07acters\x1b[0m and a BOM.",
		"Combining marks: e\u0301 a\u0308\u0308\u0308 \u0301 alone.",
		"Right-to-left \u202emark\u202c, zero width\u200b space, emoji 💊 and 漢字.",
		"Tabs\tand\r\nnewlines\u2028inside.",
	}
	var lines []string
	for i, a := range []string{"a", "o", "s"} {
		in := dataset.Instance{PMID: "N1", Document: doc, Aspect: a, Summary: doc[i] + " summary", Indexes: []int{i}, Sentences: []string{doc[i]}}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	path := filepath.Join(t.TempDir(), "nasty.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Prepare.TrainRatio, cfg.Prepare.DevRatio, cfg.Prepare.TestRatio = 1, 0, 0
	out := filepath.Join(t.TempDir(), "out")
	run(t, cfg, []string{path}, out)
	n := 0
	for _, r := range readAll[dataset.TrackerRow](t, out, dataset.TaskTracker, dataset.SplitTrain) {
		n++
		if len(r.SentenceIDs) == 0 {
			t.Errorf("sentence %d has no ids", r.SentenceIndex)
		}
	}
	if n != 12 {
		t.Errorf("%d tracker rows, want 12", n)
	}
}

// TestRunFolds checks prepare --folds: the folds are recorded in splits.json, grouped by PMID,
// cover every abstract, are reproducible byte for byte, and leave the train/dev/test split and
// every shard exactly as without folds.
func TestRunFolds(t *testing.T) {
	for _, by := range []string{dataset.SplitByPMID, dataset.SplitByInstance} {
		t.Run(by, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.Prepare.SplitBy = by
			run(t, cfg, nil, filepath.Join(dir, "plain"))
			cfg.Prepare.Folds = 3
			run(t, cfg, nil, filepath.Join(dir, "a"))
			run(t, cfg, nil, filepath.Join(dir, "b"))
			sameTree(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
			// Only splits.json (the folds), config.yaml and manifest.json (the folds key) differ.
			sameTree(t, filepath.Join(dir, "plain"), filepath.Join(dir, "a"), dataset.SplitsFile, dataset.ConfigFile, dataset.ManifestFile)
			if !reflect.DeepEqual(readSplits(t, filepath.Join(dir, "plain")), readSplits(t, filepath.Join(dir, "a"))) {
				t.Error("folds changed the train/dev/test split")
			}
			folds, err := dataset.ReadFolds(filepath.Join(dir, "a"))
			if err != nil {
				t.Fatal(err)
			}
			if folds.K != 3 || folds.Seed != cfg.Seed {
				t.Errorf("k %d seed %d", folds.K, folds.Seed)
			}
			n := 0
			for _, s := range folds.Sizes() {
				n += s
			}
			if n != cfg.Prepare.SampleSize {
				t.Errorf("%d abstracts in folds, want %d", n, cfg.Prepare.SampleSize)
			}
			for _, split := range dataset.Splits {
				for _, r := range readAll[dataset.TrackerRow](t, filepath.Join(dir, "a"), dataset.TaskTracker, split) {
					if folds.Fold(r.PMID) < 0 {
						t.Fatalf("%s row of PMID %s has no fold", split, r.PMID)
					}
				}
			}
			if _, err := dataset.ReadFolds(filepath.Join(dir, "plain")); err == nil {
				t.Error("a directory prepared without --folds has folds")
			}
		})
	}
}

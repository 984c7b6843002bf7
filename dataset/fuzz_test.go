package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of package dataset: the TracSum/PCoA JSONL reader, the raw-text reader, the
// sentence splitter and the manifest/shard reader. Seeds live in testdata/fuzz/FuzzXxx (run with
// every `go test`, crashers found once included); `make fuzz` runs each target for FUZZTIME.
//
//	go test ./dataset -run '^$' -fuzz '^FuzzStreamInstances$' -fuzztime 60s

// fuzzFile writes data to a fresh file named name and returns its path.
func fuzzFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// FuzzStreamInstances feeds arbitrary bytes to the strict JSONL reader: it must return either
// valid instances (canonical aspect, citations inside the document, non-empty sentences) or one
// *ValidationError, never panic.
func FuzzStreamInstances(f *testing.F) {
	for _, name := range []string{"valid.jsonl", "pcoa.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := fuzzFile(t, "in.jsonl", data)
		v := NewValidator("auto")
		for in, err := range StreamWith(v, path) {
			if err != nil {
				if !strings.HasPrefix(err.Error(), path) {
					t.Fatalf("error does not name the file: %v", err)
				}
				return
			}
			if _, ok := LookupAspect(v.AspectSet(), in.Aspect); !ok {
				t.Fatalf("aspect %q not in set %s", in.Aspect, v.AspectSet())
			}
			if a, _ := LookupAspect(v.AspectSet(), in.Aspect); a.Code != in.Aspect {
				t.Fatalf("aspect %q not canonical (%q)", in.Aspect, a.Code)
			}
			if len(in.Document) == 0 {
				t.Fatal("empty document accepted")
			}
			for _, i := range in.Indexes {
				if i < 0 || i >= len(in.Document) {
					t.Fatalf("index %d outside %d sentences", i, len(in.Document))
				}
			}
		}
	})
}

// FuzzReadRaw feeds arbitrary bytes to the raw-text reader: either abstracts with non-empty,
// valid UTF-8 sentences whose words are at most MaxWordBytes long, or an error naming the file.
func FuzzReadRaw(f *testing.F) {
	f.Add([]byte("We studied drug X in adults. Patients received 20 mg daily for 8 weeks.\nPain decreased by 30%.\n\nChildren with asthma were enrolled. Inhaler use fell.\n"))
	f.Add([]byte("RESULTS: Pain fell (P = .01). CONCLUSIONS: It works \xf0\x9f\x98\x80.\r\n"))
	f.Add([]byte("\x00\x01\x02binary\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := fuzzFile(t, "abstract.txt", data)
		abs, err := ReadRaw(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(abs) == 0 {
			t.Fatal("no abstract and no error")
		}
		for _, a := range abs {
			checkSentences(t, a.Document)
		}
	})
}

// FuzzSplitSentences checks the sentence splitter on arbitrary text: no panic, no empty or
// untrimmed sentence, valid UTF-8, no word over MaxWordBytes, and no non-space text lost (the
// splitter only cleans, collapses spaces and breaks long words).
func FuzzSplitSentences(f *testing.F) {
	for _, s := range []string{
		"Chronic cough is common. We tested lorvatide 20 mg vs. placebo (P = .002). RESULTS: It fell.",
		"e.g. U.S. No. 5 et al. Smith", "a.b.c.d", "DESIGN, SETTING, AND PARTICIPANTS: Adults.", "95% CI: 1.2-3.4.",
		"\ufeff\u2028x\ty\u00a0z", strings.Repeat("x", MaxWordBytes+3),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SplitSentences(s)
		checkSentences(t, got)
		want := strings.Join(strings.Fields(collapseSpaces(CleanText(s))), "")
		if joined := strings.Join(strings.Fields(strings.Join(got, " ")), ""); joined != want {
			t.Fatalf("text lost: %q -> %q", want, joined)
		}
	})
}

func checkSentences(t *testing.T, doc []string) {
	t.Helper()
	for _, s := range doc {
		if s == "" || strings.TrimSpace(s) != s {
			t.Fatalf("empty or untrimmed sentence %q", s)
		}
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 in %q", s)
		}
		for _, w := range strings.Split(s, " ") {
			if len(w) > MaxWordBytes {
				t.Fatalf("word of %d bytes > MaxWordBytes", len(w))
			}
		}
	}
}

// FuzzReadShards feeds an arbitrary manifest.json and an arbitrary shard file to ReadShards: it
// must yield rows only from a shard that matches its manifest entry, and otherwise one error.
func FuzzReadShards(f *testing.F) {
	dir := f.TempDir()
	w := NewShardWriter[TrackerRow](dir, TaskTracker, SplitTrain, 100, 16)
	for i := range 3 {
		if err := w.Write(TrackerRow{PMID: "1", Aspect: "a", SentenceIndex: int32(i), Sentence: "s", DocLength: 3, SentenceIDs: []int32{1, 2}}); err != nil {
			f.Fatal(err)
		}
	}
	shards, err := w.Close()
	if err != nil {
		f.Fatal(err)
	}
	writeManifestForFuzz(f, dir, shards)
	manifest, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	shard, _ := os.ReadFile(filepath.Join(dir, shards[0].Path))
	f.Add(manifest, shard)
	seedPath := filepath.FromSlash(shards[0].Path)
	f.Fuzz(func(t *testing.T, manifest, shard []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, TaskTracker), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, seedPath), shard, 0o644); err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, err := range ReadShards[TrackerRow](dir, TaskTracker, SplitTrain) {
			if err != nil {
				return
			}
			rows++
		}
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatalf("rows read from a directory whose manifest does not load: %v", err)
		}
		sh, _ := m.Shards(TaskTracker, SplitTrain)
		want := 0
		for _, s := range sh {
			want += s.Rows
		}
		if rows != want {
			t.Fatalf("%d rows read, manifest lists %d", rows, want)
		}
	})
}

func writeManifestForFuzz(f *testing.F, dir string, shards []ShardInfo) {
	f.Helper()
	n := 0
	for _, s := range shards {
		n += s.Rows
	}
	m := Manifest{SchemaVersion: ShardSchemaVersion, Tasks: map[string]TaskInfo{
		TaskTracker: {Splits: map[string]SplitShards{SplitTrain: {Rows: n, Shards: slices.Clone(shards)}}}}}
	b, err := json.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		f.Fatal(err)
	}
}

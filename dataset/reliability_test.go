package dataset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTrackerShards writes n tracker rows as one shard of split train under dir and returns the
// manifest entries.
func writeTrackerShards(t *testing.T, dir string, n int, sentence string) []ShardInfo {
	t.Helper()
	w := NewShardWriter[TrackerRow](dir, TaskTracker, SplitTrain, 1000, 64)
	for i := range n {
		if err := w.Write(TrackerRow{PMID: "P", Aspect: "o", SentenceIndex: int32(i), Sentence: sentence, DocLength: int32(n), SentenceIDs: []int32{1}}); err != nil {
			t.Fatal(err)
		}
	}
	shards, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// TestShardSwappedIn is the regression test of issue 10 item 8: a shard swapped in from another
// prepared directory trained with exit 0, because the manifest's sha256 and row counts were never
// checked. Now reading fails with one error naming the shard and what differs, before any row.
func TestShardSwappedIn(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		mutate func(t *testing.T, dir string, sh []ShardInfo) []ShardInfo
		want   string
	}{
		{"shard from another prepared directory", func(t *testing.T, dir string, sh []ShardInfo) []ShardInfo {
			other := t.TempDir()
			writeTrackerShards(t, other, 3, "other")
			b, err := os.ReadFile(filepath.Join(other, sh[0].Path))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, sh[0].Path), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return sh
		}, "tracker/train-00000-of-00001.parquet: shard does not match manifest.json: sha256 "},
		{"row count edited in the manifest", func(t *testing.T, dir string, sh []ShardInfo) []ShardInfo {
			sh[0].Rows = 81
			return sh
		}, "tracker/train-00000-of-00001.parquet: shard does not match manifest.json: 5 rows, manifest.json says 81"},
		{"sha256 missing", func(t *testing.T, dir string, sh []ShardInfo) []ShardInfo {
			sh[0].SHA256 = ""
			return sh
		}, "manifest.json lists no sha256"},
		{"path leaving the directory", func(t *testing.T, dir string, sh []ShardInfo) []ShardInfo {
			sh[0].Path = "../elsewhere.parquet"
			return sh
		}, "leaves the prepared directory"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			sh := tc.mutate(t, dir, writeTrackerShards(t, dir, 5, "mine"))
			writeManifestForTest(t, dir, map[string]TaskInfo{TaskTracker: {Splits: map[string]SplitShards{SplitTrain: {Rows: 5, Shards: sh}}}})
			rows := 0
			var err error
			for _, e := range ReadShards[TrackerRow](dir, TaskTracker, SplitTrain) {
				if e != nil {
					err = e
					break
				}
				rows++
			}
			if rows != 0 || !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%d rows, err = %v\nwant no row and ErrShardMismatch containing %q", rows, err, tc.want)
			}
		})
	}
}

// TestUnbrokenMultiMegabyteToken is the regression test of issue 10 item 12: one unbroken 50 MB
// token made prepare take 50 s and 5.9 GB. The sentence splitter now breaks words longer than
// MaxWordBytes, so the work downstream is linear; the test checks the pieces, not the time.
func TestUnbrokenMultiMegabyteToken(t *testing.T) {
	token := "Q" + strings.Repeat("ab", 2<<20) // 4 MiB without a space, starting a sentence
	got := SplitSentences("Patients improved. " + token + " was seen. Nothing else.")
	if len(got) != 3 || got[0] != "Patients improved." || got[2] != "Nothing else." {
		t.Fatalf("sentences around the token: %d, first %.40q", len(got), got[0])
	}
	words := strings.Split(got[1], " ")
	if want := (len(token)+MaxWordBytes-1)/MaxWordBytes + 2; len(words) != want {
		t.Errorf("%d words, want %d pieces of <= %d bytes + 2", len(words), want, MaxWordBytes)
	}
	for _, w := range words {
		if len(w) > MaxWordBytes {
			t.Fatalf("a word of %d bytes", len(w))
		}
	}
	if strings.Join(words[:len(words)-2], "") != token {
		t.Error("the pieces do not put the token back together")
	}
}

// captureWarnings redirects Warnings for the test and returns what was written.
func captureWarnings(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := Warnings
	Warnings = &buf
	t.Cleanup(func() { Warnings = prev })
	return &buf
}

// TestRawTextProblems is the regression test of issue 10 item 14 (raw text): a binary file was
// accepted as an abstract, and invalid UTF-8 and over-long words changed the text silently.
func TestRawTextProblems(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		data    string
		wantErr error
		warn    string // expected in the warnings ("" = none)
	}{
		{desc: "NUL bytes", data: "PK\x03\x04\x00\x00binary", wantErr: ErrBinary},
		{desc: "mostly control bytes", data: strings.Repeat("\x01\x02\x03\x1b", 20) + "text", wantErr: ErrBinary},
		{desc: "invalid UTF-8 is warned with file:line", data: "Good first line.\nPatients \xff improved.\n", warn: "abstract.txt:2: invalid UTF-8"},
		{desc: "a long word is warned with file:line", data: "First.\n\nA " + strings.Repeat("x", 3*MaxWordBytes) + " word.\n", warn: "abstract.txt:3: 1 word(s) longer than 256 bytes broken"},
		{desc: "Latin-1 accents are text, not binary", data: "Caf\xe9 and na\xefve patients improved in the trial of drug X.", warn: "abstract.txt:1: invalid UTF-8"},
		{desc: "clean text, no warning", data: "Patients improved. Pain fell \U0001F600."},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			warnings := captureWarnings(t)
			path := filepath.Join(t.TempDir(), "abstract.txt")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			abs, err := ReadRaw(path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want %v naming the file", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(abs) == 0 {
				t.Fatalf("%d abstracts, err %v", len(abs), err)
			}
			if tc.warn == "" && warnings.Len() > 0 || !strings.Contains(warnings.String(), tc.warn) {
				t.Errorf("warnings %q, want %q", warnings.String(), tc.warn)
			}
		})
	}
}

// TestJSONLInvalidUTF8Warned is the JSONL part of issue 10 item 14: encoding/json turned invalid
// UTF-8 into U+FFFD silently; the reader now warns with file:line (and about over-long words).
func TestJSONLInvalidUTF8Warned(t *testing.T) {
	warnings := captureWarnings(t)
	long := strings.Repeat("y", MaxWordBytes+1)
	data := "{\"PMID\": \"1\", \"Document\": [\"A \xff b.\"], \"Aspect\": \"a\", \"Summary\": \"Unknown.\", \"Indexes\": []}\n" +
		"{\"PMID\": \"2\", \"Document\": [\"Fine.\", \"" + long + "\"], \"Aspect\": \"a\", \"Summary\": \"Unknown.\", \"Indexes\": []}\n"
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInstances(path); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{path + ":1: invalid UTF-8", path + ":2: Document[1]: a word of 257 bytes"} {
		if !strings.Contains(warnings.String(), want) {
			t.Errorf("warnings %q, want %q", warnings.String(), want)
		}
	}
}

package nli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editJSON returns an edit of a snapshot's JSON file name (decoded as a map, changed by change,
// written back).
func editJSON(name string, change func(m map[string]any)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		if data, err = json.MarshalIndent(m, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// probabilities returns j's probability of each pair.
func probabilities(t *testing.T, j *Judge, pairs [][2]string) []float64 {
	t.Helper()
	var out []float64
	for _, p := range pairs {
		v, err := j.Probability(context.Background(), p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestCacheKeyCoversModel (issue 35 item 1): the cache key covered the weights, the length limit
// and the entailment index only, so a snapshot whose tokenizer normalizer, activation or
// layer-norm epsilon was edited got the old model's probabilities from the same cache directory.
// Every such edit, and another length limit, must change the judge's identity: the edited model
// computes every pair again and gives what it gives without a cache.
func TestCacheKeyCoversModel(t *testing.T) {
	pairs := [][2]string{{"The Trial enrolled 151 Patients. Toxicity was Low.", "151 Patients took part."},
		{"No Toxicity was seen.", "Toxicity was low."}}
	for _, tc := range []struct {
		desc string
		edit func(t *testing.T, dir string)
		opts Options
	}{
		{desc: "tokenizer.json normalizer lowercase off", edit: editJSON("tokenizer.json", func(m map[string]any) {
			m["normalizer"].(map[string]any)["lowercase"] = false
		})},
		{desc: "config.json hidden_act", edit: editJSON("config.json", func(m map[string]any) { m["hidden_act"] = "relu" })},
		{desc: "config.json layer_norm_eps", edit: editJSON("config.json", func(m map[string]any) { m["layer_norm_eps"] = 0.5 })},
		{desc: "max length", opts: Options{MaxLength: 16}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := snap(t, "bert", []string{"contradiction", "neutral", "entailment"}, nil)
			cache := t.TempDir()
			before := newJudge(t, dir, Options{CacheDir: cache})
			probabilities(t, before, pairs)
			if tc.edit != nil {
				tc.edit(t, dir)
			}
			opts := tc.opts
			opts.CacheDir = cache
			after := newJudge(t, dir, opts)
			got := probabilities(t, after, pairs)
			if st := after.Stats(); st.CacheHits != 0 || st.Computed != st.Pairs {
				t.Errorf("changed model with the old cache: %s, want every pair computed", st)
			}
			if before.ModelSHA256() == after.ModelSHA256() {
				t.Errorf("model identity %s unchanged", after.ModelSHA256())
			}
			opts.CacheDir = ""
			want := probabilities(t, newJudge(t, dir, opts), pairs)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("pair %d: %v with the old cache, %v without a cache", i, got[i], want[i])
				}
			}
		})
	}
}

// cacheFiles returns the entries under a cache directory.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCacheEntryExact (issue 35 item 2): an entry without its entailment field read as
// probability 0, and any JSON file up to 64 MB was read whole and taken. An entry that is not
// exactly what the judge writes for its key is a miss: the pair is computed again and the entry
// rewritten.
func TestCacheEntryExact(t *testing.T) {
	dir := snap(t, "bert", []string{"contradiction", "neutral", "entailment"}, []float32{0, 0, 1})
	pairs := [][2]string{{premise, hypothesis}}
	for _, tc := range []struct {
		desc   string
		damage func(good []byte) []byte
	}{
		{"no entailment field", func(good []byte) []byte {
			i := bytes.Index(good, []byte(`,"entailment"`))
			return append(append([]byte{}, good[:i]...), '}')
		}},
		{"an extra field", func(good []byte) []byte {
			return append([]byte(`{"note":"x",`), good[1:]...)
		}},
		{"the entailment field twice", func(good []byte) []byte {
			return append(append([]byte{}, good[:len(good)-1]...), []byte(`,"entailment":1}`)...)
		}},
		{"another premise than its key's", func(good []byte) []byte {
			return bytes.Replace(good, []byte("151 patients."), []byte("152 patients."), 1)
		}},
		{"another model", func(good []byte) []byte {
			var e cacheEntry
			if err := json.Unmarshal(good, &e); err != nil {
				t.Fatal(err)
			}
			b, _ := encodeEntry(strings.Repeat("0", 64), e.Premise, e.Hypothesis, e.Entailment)
			return b
		}},
		{"padded past the size bound", func(good []byte) []byte {
			return append(append([]byte{}, good...), bytes.Repeat([]byte(" "), 2<<20)...)
		}},
		{"out of range", func(good []byte) []byte {
			var e cacheEntry
			if err := json.Unmarshal(good, &e); err != nil {
				t.Fatal(err)
			}
			b, _ := encodeEntry(e.Model, e.Premise, e.Hypothesis, 0)
			return bytes.Replace(b, []byte(`"entailment":0}`), []byte(`"entailment":1.5}`), 1)
		}},
		{"truncated", func(good []byte) []byte { return good[:len(good)/2] }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cache := t.TempDir()
			want := probabilities(t, newJudge(t, dir, Options{CacheDir: cache}), pairs)
			files := cacheFiles(t, cache)
			if len(files) != 1 {
				t.Fatalf("cache holds %v, want one entry", files)
			}
			good, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files[0], tc.damage(good), 0o644); err != nil {
				t.Fatal(err)
			}
			j := newJudge(t, dir, Options{CacheDir: cache})
			got := probabilities(t, j, pairs)
			if st := j.Stats(); st.Computed != 1 || st.CacheHits != 0 {
				t.Errorf("damaged entry: %s, want the pair computed", st)
			}
			if got[0] != want[0] {
				t.Errorf("probability %v, want %v", got[0], want[0])
			}
			if again, err := os.ReadFile(files[0]); err != nil || !bytes.Equal(again, good) {
				t.Errorf("entry after the rerun %q (%v), want it rewritten as %q", again, err, good)
			}
		})
	}
}

// TestCacheDirUnusable (issue 35 item 6): a cache directory that cannot be written (a file, a
// device, removed during the run) was ignored silently; the judge says once that the cache is
// off, and why, and scores every pair.
func TestCacheDirUnusable(t *testing.T) {
	dir := snap(t, "bert", []string{"contradiction", "neutral", "entailment"}, nil)
	pairs := [][2]string{{premise, hypothesis}, {"no toxicity was seen.", "toxicity was low."}, {premise, "the trial was small."}}
	for _, tc := range []struct {
		desc  string
		cache func(t *testing.T) string
		// during runs after the judge is built, before it scores (the directory goes away).
		during func(t *testing.T, cache string)
	}{
		{desc: "a file", cache: func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "cache")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{desc: "/dev/null", cache: func(*testing.T) string { return os.DevNull }},
		{desc: "below a file", cache: func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "cache")
		}},
		{desc: "replaced by a file during the run", cache: func(t *testing.T) string { return filepath.Join(t.TempDir(), "cache") },
			during: func(t *testing.T, cache string) {
				if err := os.RemoveAll(cache); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cache, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cache := tc.cache(t)
			var log bytes.Buffer
			j := newJudge(t, dir, Options{CacheDir: cache, Log: &log, BatchSize: 1})
			if tc.during != nil {
				tc.during(t, cache)
			}
			probabilities(t, j, pairs)
			if st := j.Stats(); st.Computed != int64(len(pairs)) {
				t.Errorf("%s, want %d computed", st, len(pairs))
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "cache "+cache+" off") {
				t.Errorf("log %q: want one line saying the cache %s is off and why", log.String(), cache)
			}
		})
	}
}

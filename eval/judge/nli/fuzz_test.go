package nli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCacheEntry: readEntry never panics, and accepts only what encodeEntry writes for the key
// it is asked about: a probability in [0, 1], the model's identity, the texts of the key.
func FuzzCacheEntry(f *testing.F) {
	ident := strings.Repeat("ab", 32)
	good, _ := encodeEntry(ident, "the trial enrolled 151 patients.", "151 patients took part.", 0.75)
	f.Add(good)
	f.Add([]byte(`{"model_sha256":"` + ident + `","premise":"a","hypothesis":"b"}`))
	f.Add([]byte(`{"model_sha256":"` + ident + `","premise":"a","hypothesis":"b","entailment":1e400}`))
	f.Add([]byte(`{"model_sha256":"` + ident + `","premise":"<a>","hypothesis":"\u00e9","entailment":0}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The key of the texts the entry claims to hold: the lenient decoding lets readEntry's
		// acceptance path run on whatever the fuzzer makes.
		var loose cacheEntry
		_ = json.Unmarshal(data, &loose)
		key := entryKey(ident, loose.Premise, loose.Hypothesis)
		p, ok := readEntry(data, key, ident)
		if !ok {
			return
		}
		if !(p >= 0 && p <= 1) {
			t.Fatalf("accepted probability %v", p)
		}
		want, err := encodeEntry(ident, loose.Premise, loose.Hypothesis, p)
		if err != nil || !bytes.Equal(want, data) {
			t.Fatalf("accepted %q, which is not what the judge writes (%q)", data, want)
		}
		if _, ok := readEntry(data, entryKey(ident, loose.Premise+"x", loose.Hypothesis), ident); ok {
			t.Fatalf("accepted %q under another key", data)
		}
		if _, ok := readEntry(data, key, strings.Repeat("cd", 32)); ok {
			t.Fatalf("accepted %q for another model", data)
		}
	})
}

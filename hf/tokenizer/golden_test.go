package tokenizer

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// golden is testdata/golden.json, written by tools/hftokenizer/generate.mjs.
type golden struct {
	Tokenizers string `json:"tokenizers"`
	Families   []struct {
		Family          string `json:"family"`
		Source          string `json:"source"`
		TokenizerSha256 string `json:"tokenizer_sha256"`
		ConfigSha256    string `json:"config_sha256"`
		Cases           []struct {
			Name       string `json:"name"`
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			IDsSpecial []int  `json:"ids_special"`
			Decoded    string `json:"decoded"`
		} `json:"cases"`
	} `json:"families"`
}

func readGolden(t *testing.T) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/golden.json: %v", err)
	}
	if len(g.Families) == 0 {
		t.Fatal("testdata/golden.json has no families")
	}
	return g
}

func fileSha256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// TestGolden encodes every golden text with the family's real tokenizer and compares the ids,
// with and without special tokens, exactly with @huggingface/tokenizers' ids, and the decoding.
func TestGolden(t *testing.T) {
	for _, fam := range readGolden(t).Families {
		t.Run(fam.Family, func(t *testing.T) {
			dir := filepath.Join("testdata", "hf", fam.Family)
			for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
				if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, os.ErrNotExist) {
					t.Skipf("%s is absent (not committed: fetch it with tools/hftokenizer/fetch.sh)", filepath.Join(dir, f))
				}
			}
			if sum := fileSha256(t, filepath.Join(dir, "tokenizer.json")); sum != fam.TokenizerSha256 {
				t.Fatalf("%s/tokenizer.json (sha256 %s) is not the file golden.json was generated from (%s, sha256 %s); regenerate", dir, sum, fam.Source, fam.TokenizerSha256)
			}
			if sum := fileSha256(t, filepath.Join(dir, "tokenizer_config.json")); sum != fam.ConfigSha256 {
				t.Fatalf("%s/tokenizer_config.json (sha256 %s) is not the file golden.json was generated from (%s, sha256 %s); regenerate", dir, sum, fam.Source, fam.ConfigSha256)
			}
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range fam.Cases {
				t.Run(c.Name, func(t *testing.T) {
					if got := tok.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
						t.Errorf("Encode(%q, false)\n got: %v\nwant: %v", c.Text, got, c.IDs)
					}
					if got := tok.Encode(c.Text, true); !slices.Equal(got, c.IDsSpecial) {
						t.Errorf("Encode(%q, true)\n got: %v\nwant: %v", c.Text, got, c.IDsSpecial)
					}
					if got := tok.Decode(c.IDs); got != c.Decoded {
						t.Errorf("Decode(%v)\n got: %q\nwant: %q", c.IDs, got, c.Decoded)
					}
				})
			}
		})
	}
}

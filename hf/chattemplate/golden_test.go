package chattemplate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// golden is testdata/golden.json, written by tools/chattemplate/generate.mjs.
type golden struct {
	Families []struct {
		Family string `json:"family"`
		Source string `json:"source"`
		Config string `json:"config"`
		Sha256 string `json:"sha256"`
		Cases  []struct {
			Name                string          `json:"name"`
			Messages            []Message       `json:"messages"`
			AddGenerationPrompt bool            `json:"add_generation_prompt"`
			Variables           json.RawMessage `json:"variables"`
			Want                *string         `json:"want"`
			Error               string          `json:"error"`
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

// pythonValues decodes golden variables as Python's json.loads would: integers stay integers
// (tojson prints 3, not 3.0).
func pythonValues(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("golden variables: %v", err)
	}
	var conv func(any) any
	conv = func(x any) any {
		switch x := x.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i
			}
			f, err := x.Float64()
			if err != nil {
				t.Fatalf("golden number %s: %v", x, err)
			}
			return f
		case []any:
			for i := range x {
				x[i] = conv(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = conv(x[k])
			}
		}
		return x
	}
	return conv(v).(map[string]any)
}

// TestGolden renders every golden conversation with the family's real template through gonja and
// compares byte for byte with @huggingface/jinja's rendering.
func TestGolden(t *testing.T) {
	for _, fam := range readGolden(t).Families {
		t.Run(fam.Family, func(t *testing.T) {
			path := filepath.Join("testdata", filepath.FromSlash(fam.Config))
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				t.Skipf("%s is absent (not committed: fetch it with `cd tools/chattemplate && npm ci && node generate.mjs`)", path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sum := fmt.Sprintf("%x", sha256.Sum256(data)); sum != fam.Sha256 {
				t.Fatalf("%s (sha256 %s) is not the file golden.json was generated from (%s, sha256 %s); regenerate", path, sum, fam.Source, fam.Sha256)
			}
			tpl, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			wantEngine := "gonja"
			if fam.Family == "gemma3" {
				wantEngine = "builtin:gemma3"
			}
			if tpl.Engine != wantEngine {
				t.Errorf("engine %q, want %q", tpl.Engine, wantEngine)
			}
			for _, c := range fam.Cases {
				t.Run(c.Name, func(t *testing.T) {
					got, err := tpl.Render(c.Messages, Options{
						AddGenerationPrompt: c.AddGenerationPrompt,
						Variables:           pythonValues(t, c.Variables),
						// Golden cases give date_string explicitly; a fixed clock keeps any
						// strftime_now call deterministic all the same.
						Now: func() time.Time { return time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC) },
					})
					if c.Error != "" {
						if err == nil {
							t.Fatalf("want error %q, got rendering %q", c.Error, got)
						}
						if !errors.Is(err, ErrRender) || !strings.HasSuffix(err.Error(), "raise_exception: "+c.Error) {
							t.Fatalf("want raise_exception %q, got %v", c.Error, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if c.Want == nil {
						t.Fatal("golden case has neither want nor error")
					}
					if got != *c.Want {
						t.Errorf("rendering differs\n got: %q\nwant: %q", got, *c.Want)
					}
				})
			}
		})
	}
}

// TestBuiltinGemma3Golden runs the Gemma 3 golden cases through the built-in renderer directly,
// so the committed golden data is checked even where the real template file is absent.
func TestBuiltinGemma3Golden(t *testing.T) {
	found := false
	for _, fam := range readGolden(t).Families {
		if fam.Family != "gemma3" {
			continue
		}
		found = true
		tpl := &Template{Path: "gemma3", Engine: "builtin:gemma3", SpecialTokens: map[string]any{"bos_token": "<bos>", "eos_token": "<end_of_turn>"}, builtin: renderGemma3}
		for _, c := range fam.Cases {
			t.Run(c.Name, func(t *testing.T) {
				got, err := tpl.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt, Variables: pythonValues(t, c.Variables)})
				if c.Error != "" {
					if err == nil || !errors.Is(err, ErrRender) || !strings.HasSuffix(err.Error(), "raise_exception: "+c.Error) {
						t.Fatalf("want raise_exception %q, got %v (rendering %q)", c.Error, err, got)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got != *c.Want {
					t.Errorf("rendering differs\n got: %q\nwant: %q", got, *c.Want)
				}
			})
		}
	}
	if !found {
		t.Fatal("testdata/golden.json has no gemma3 family")
	}
}

// BenchmarkRender measures one rendering of a three-turn conversation with the feature template
// (namespace, loops, string methods), the per-example cost when building training prompts.
func BenchmarkRender(b *testing.B) {
	tpl, err := Load(filepath.Join("testdata", "features", "tokenizer_config.json"))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{
		{Role: "system", Content: "You write careful summaries of medical abstracts."},
		{Role: "user", Content: "Summarize the side effects of the sentences below.\n[3] Nausea occurred in 14% of the treated group."},
		{Role: "assistant", Content: "Summary: Nausea affected 14% of treated patients [3]."},
	}
	opts := Options{Variables: map[string]any{"date_string": "26 Jul 2024"}}
	for b.Loop() {
		if _, err := tpl.Render(msgs, opts); err != nil {
			b.Fatal(err)
		}
	}
}

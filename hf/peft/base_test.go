package peft_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// editJSON rewrites the JSON object file at path with key set to v.
func editJSON(t *testing.T, path, key string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = v
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestChangedBaseConfigRefused is the reliability issue's defect 5: after training, an edited
// config.json (rope_theta), tokenizer, chat template or generation config of the base left the
// weights' digest unchanged, and infer ran on a different model. Every file that shapes the model
// is recorded in base.json, and OpenBase (infer, export, resume) refuses a changed one in one line
// naming it.
func TestChangedBaseConfigRefused(t *testing.T) {
	t.Setenv(snapshot.CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	cases := []struct {
		desc string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"unchanged", func(*testing.T, string) {}, ""},
		{"rope_theta", func(t *testing.T, dir string) { editJSON(t, filepath.Join(dir, snapshot.ConfigFile), "rope_theta", 10) }, "config.json sha256"},
		{"rms_norm_eps", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, snapshot.ConfigFile), "rms_norm_eps", 0.5)
		}, "config.json sha256"},
		{"chat template", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, snapshot.TokenizerConfigFile), "chat_template", "{{ messages }}")
		}, "tokenizer_config.json sha256"},
		{"tokenizer", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, snapshot.TokenizerFile), "truncation", nil)
		}, "tokenizer.json sha256"},
		{"generation config removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, snapshot.GenerationConfigFile)); err != nil {
				t.Fatal(err)
			}
		}, "generation_config.json is missing"},
		{"special tokens map added", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), []byte(`{"eos_token": "x"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "special_tokens_map.json was added since training"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			snap, ck := filepath.Join(t.TempDir(), "snap"), t.TempDir()
			if err := randsnap.WriteDecoder(snap, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, Seed: 1}); err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.Open(snap)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := peft.WriteBaseRef(context.Background(), ck, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref.Files) < 4 {
				t.Fatalf("base.json records %v, want config, tokenizer, tokenizer_config and generation_config", ref.Files)
			}
			tc.edit(t, snap)
			_, _, err = peft.OpenBase(context.Background(), ck, atomicio.DirFiles(ck), "")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unchanged base refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("changed base accepted, want an error with %q", tc.want)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), peft.BaseFile) || strings.Contains(err.Error(), "\n"):
				t.Errorf("error %q, want one line naming %s and %q", err, peft.BaseFile, tc.want)
			}
		})
	}
}

// A checkpoint written before the files were recorded (base.json without "files") still opens:
// only its weights are checked.
func TestBaseRefWithoutFiles(t *testing.T) {
	t.Setenv(snapshot.CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	snap, ck := filepath.Join(t.TempDir(), "snap"), t.TempDir()
	if err := randsnap.WriteDecoder(snap, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := peft.RefOf(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	ref.Files = nil
	b, _ := json.Marshal(ref)
	if err := os.WriteFile(filepath.Join(ck, peft.BaseFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	editJSON(t, filepath.Join(snap, snapshot.ConfigFile), "rope_theta", 10)
	if _, _, err := peft.OpenBase(context.Background(), ck, atomicio.DirFiles(ck), ""); err != nil {
		t.Fatalf("old base.json refused: %v", err)
	}
}

// TestBaseQuantizedOtherwiseRefused (issue 32): a checkpoint trained on a bitsandbytes 4-bit
// snapshot, opened on its unquantized original (export --base, a moved base), or the reverse, is
// refused in one line naming both storages, not only as weights whose digest changed.
func TestBaseQuantizedOtherwiseRefused(t *testing.T) {
	t.Setenv(snapshot.CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	d := randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 64, Layers: 1, Heads: 2, Intermediate: 128, Seed: 1}
	plain, nf4 := filepath.Join(t.TempDir(), "plain"), filepath.Join(t.TempDir(), "nf4")
	if err := randsnap.WriteDecoder(plain, d); err != nil {
		t.Fatal(err)
	}
	d.Quantize = "nf4"
	if err := randsnap.WriteDecoder(nf4, d); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ desc, trained, opened, want string }{
		{"nf4-trained on plain", nf4, plain, "is an unquantized snapshot, the checkpoint was trained on a bitsandbytes nf4 (4-bit) snapshot"},
		{"plain-trained on nf4", plain, nf4, "is a bitsandbytes nf4 (4-bit) snapshot, the checkpoint was trained on an unquantized snapshot"},
		{"nf4 on nf4", nf4, nf4, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ck := t.TempDir()
			s, err := snapshot.Open(tc.trained)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := peft.WriteBaseRef(context.Background(), ck, s)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{nf4: "bitsandbytes nf4", plain: ""}[tc.trained]; ref.Quantization != want {
				t.Errorf("base.json records quantization %q, want %q", ref.Quantization, want)
			}
			_, _, err = peft.OpenBase(context.Background(), ck, atomicio.DirFiles(ck), tc.opened)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("the base trained on refused: %v", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

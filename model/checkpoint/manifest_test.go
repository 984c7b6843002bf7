package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// files writes name -> content under dir (directories created).
func files(t testing.TB, dir string, fs map[string]string) {
	t.Helper()
	for name, body := range fs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Layouts of the files each kind of checkpoint holds (contents are placeholders: Describe reads
// only the fields that tell the kinds apart).
var (
	scratchTracker = map[string]string{"hparams.json": `{"architecture": "transformer"}`, "tokenizer.json": "{}", "config.yaml": "seed: 1\n",
		"best/model.safetensors": "weights", "best/metrics.json": "{}", "context.json": "{}", "metrics.jsonl": "{}\n", "curves.png": "png",
		"state/state.json": `{"done": true}`, "report.json": "{}"}
	lexicalTracker = map[string]string{"hparams.json": `{"architecture": "lexical-context"}`, "tokenizer.json": "{}", "config.yaml": "",
		"lexical.json": "{}", "context.json": "{}"}
	scratchSummarizer = map[string]string{"summarizer.json": "{}", "tokenizer.json": "{}", "config.yaml": "", "best/model.safetensors": "w"}
	pretrainedTracker = map[string]string{"pretrained.json": `{"task": "tracker", "head": "encoder_cls", "model_type": "bert"}`,
		"base.json":      `{"dir": "/snap", "model_type": "bert", "weights_sha256": "ab", "weight_files": ["model.safetensors"], "files": {"config.json": "cd"}}`,
		"tokenizer.json": "{}", "tokenizer_config.json": "{}", "config.yaml": "", "best/model.safetensors": "w",
		"adapter/adapter_config.json": "{}", "adapter/adapter_model.safetensors": "a"}
)

// with returns the union of the layouts (later ones win) with prefix before each name.
func with(prefix string, layouts ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layouts {
		for k, v := range l {
			out[prefix+k] = v
		}
	}
	return out
}

func paths(m *Manifest) []string {
	var out []string
	for _, f := range m.Files {
		out = append(out, f.Path)
	}
	return out
}

// The identities the fixtures' models state when they seal.
var (
	trackerID    = Identity{Kind: KindTracker, Task: "tracker", Backbone: Backbone{Type: BackboneScratch, Architecture: "transformer"}, Settings: Settings{Threshold: 0.3}}
	summarizerID = Identity{Kind: KindSummarizer, Task: "summarizer", Backbone: Backbone{Type: BackboneScratch}}
	ensembleID   = Identity{Kind: KindEnsemble, Task: "tracker", Backbone: Backbone{Type: BackboneScratch}}
)

// sealCV seals the fold checkpoints of the tracker cross-validation in dir, then dir, as
// experiment/cv does.
func sealCV(t testing.TB, dir string) *Manifest {
	t.Helper()
	for _, fold := range []string{"fold-0", "fold-1"} {
		if _, err := Seal(filepath.Join(dir, fold), trackerID); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Seal(dir, ensembleID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDescribeKinds(t *testing.T) {
	stt := with("", map[string]string{"variant.json": `{"variant": "sum_then_track"}`},
		with("summarizer/", scratchSummarizer, map[string]string{"variant.json": `{"variant": "sum_then_track", "part": "summarizer"}`}),
		with("tracker/", scratchTracker, map[string]string{"variant.json": `{"variant": "sum_then_track", "part": "tracker"}`}))
	for _, tc := range []struct {
		desc     string
		layout   map[string]string
		sub      string // the directory described, inside the layout
		kind     string
		task     string
		part     string
		backbone Backbone
		files    []string
		members  []string
	}{
		{desc: "scratch tracker", layout: scratchTracker, kind: KindTracker, task: "tracker", backbone: Backbone{Type: BackboneScratch, Architecture: "transformer"},
			files: []string{"best/model.safetensors", "config.yaml", "context.json", "hparams.json", "tokenizer.json"}},
		{desc: "lexical-context tracker", layout: lexicalTracker, kind: KindTracker, task: "tracker", backbone: Backbone{Type: BackboneScratch, Architecture: "lexical-context"},
			files: []string{"config.yaml", "context.json", "hparams.json", "lexical.json", "tokenizer.json"}},
		{desc: "scratch summarizer", layout: scratchSummarizer, kind: KindSummarizer, task: "summarizer", backbone: Backbone{Type: BackboneScratch},
			files: []string{"best/model.safetensors", "config.yaml", "summarizer.json", "tokenizer.json"}},
		{desc: "pretrained encoder tracker", layout: pretrainedTracker, kind: KindTracker, task: "tracker", backbone: Backbone{Type: BackboneEncoder, Architecture: "bert", Head: "encoder_cls"},
			files: []string{"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "base.json", "best/model.safetensors", "config.yaml", "pretrained.json", "tokenizer.json", "tokenizer_config.json"}},
		{desc: "pretrained causal summarizer", layout: with("", pretrainedTracker, map[string]string{"pretrained.json": `{"task": "summarizer", "model_type": "llama"}`}),
			kind: KindSummarizer, task: "summarizer", backbone: Backbone{Type: BackboneCausalLM, Architecture: "llama"},
			files: []string{"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "base.json", "best/model.safetensors", "config.yaml", "pretrained.json", "tokenizer.json", "tokenizer_config.json"}},
		{desc: "end_to_end", layout: with("", scratchSummarizer, map[string]string{"variant.json": `{"variant": "end_to_end"}`}),
			kind: KindEndToEnd, task: "end_to_end", backbone: Backbone{Type: BackboneScratch},
			files: []string{"best/model.safetensors", "config.yaml", "summarizer.json", "tokenizer.json", "variant.json"}},
		{desc: "pretrained end_to_end", layout: with("", pretrainedTracker, map[string]string{"pretrained.json": `{"task": "summarizer", "model_type": "qwen3", "variant": "end_to_end"}`,
			"variant.json": `{"variant": "end_to_end", "pretrained": true}`}),
			kind: KindEndToEnd, task: "end_to_end", backbone: Backbone{Type: BackboneCausalLM, Architecture: "qwen3"},
			files: []string{"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "base.json", "best/model.safetensors", "config.yaml", "pretrained.json", "tokenizer.json", "tokenizer_config.json", "variant.json"}},
		{desc: "sum_then_track", layout: stt, kind: KindSumThenTrack, task: "sum_then_track", backbone: Backbone{Type: BackboneScratch},
			files: []string{"variant.json"}, members: []string{"summarizer", "tracker"}},
		{desc: "sum_then_track tracker part", layout: stt, sub: "tracker", kind: KindSumThenTrack, task: "sum_then_track", part: "tracker",
			backbone: Backbone{Type: BackboneScratch, Architecture: "transformer"},
			files:    []string{"best/model.safetensors", "config.yaml", "context.json", "hparams.json", "tokenizer.json", "variant.json"}},
		{desc: "tracker cross-validation", layout: with("", map[string]string{"cv.json": `{"model": "tracker", "k": 2}`, "cv-settings.json": "{}", "config.yaml": "",
			"fold-0.json": "{}", "fold-1.json": "{}", "oof.jsonl": ""}, with("fold-0/", scratchTracker), with("fold-1/", scratchTracker)),
			kind: KindEnsemble, task: "tracker", backbone: Backbone{Type: BackboneScratch},
			files: []string{"config.yaml", "cv-settings.json", "cv.json", "fold-0.json", "fold-1.json"}, members: []string{"fold-0", "fold-1"}},
		{desc: "lexical cross-validation", layout: map[string]string{"cv.json": `{"model": "lexical", "k": 2}`, "fold-0.json": "{}"},
			kind: KindCrossValidation, task: "lexical", backbone: Backbone{Type: BackboneScratch}, files: []string{"cv.json", "fold-0.json"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, tc.layout)
			m, err := describe(filepath.Join(dir, tc.sub))
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tc.kind || m.Task != tc.task || m.Part != tc.part || m.Backbone != tc.backbone {
				t.Errorf("kind %q task %q part %q backbone %+v, want %q %q %q %+v", m.Kind, m.Task, m.Part, m.Backbone, tc.kind, tc.task, tc.part, tc.backbone)
			}
			if got := paths(m); !reflect.DeepEqual(got, tc.files) {
				t.Errorf("files %v, want %v", got, tc.files)
			}
			if !reflect.DeepEqual(m.Members, tc.members) {
				t.Errorf("members %v, want %v", m.Members, tc.members)
			}
			if (m.Base != nil) != (tc.backbone.Type != BackboneScratch) {
				t.Errorf("base %+v for backbone %s", m.Base, tc.backbone.Type)
			}
		})
	}
}

func TestDescribeRefuses(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		layout map[string]string
		want   string
	}{
		{"empty", map[string]string{"notes.txt": "x"}, "is not a checkpoint: it has none of checkpoint.json, hparams.json"},
		{"two models", with("", scratchTracker, scratchSummarizer), "is ambiguous: it holds both hparams.json and summarizer.json"},
		{"unfinished tracker", map[string]string{"hparams.json": `{"architecture": "transformer"}`}, "has no best/model.safetensors"},
		// Issue 35 item 14: a run killed after its first evaluation has best/ but is not finished.
		{"killed run", with("", scratchTracker, map[string]string{"state/state.json": `{"step": 3, "done": false}`}), "is an unfinished run (its state/state.json says done: false)"},
		{"killed summarizer variant part", with("", scratchSummarizer, map[string]string{"state/state.json": `{"step": 3}`,
			"variant.json": `{"variant": "end_to_end"}`}), "is an unfinished run"},
		{"damaged resume point", with("", scratchTracker, map[string]string{"state/state.json": `{"done": tru`}), "is not a finished run: its resume point is unreadable"},
		{"cross-validation with a killed fold", with("", map[string]string{"cv.json": `{"model": "tracker"}`}, with("fold-0/", scratchTracker),
			map[string]string{"fold-0/state/state.json": `{"done": false}`}), "is an unfinished run"},
		{"pretrained without base.json", with("", pretrainedTracker, map[string]string{"base.json": ""}), "base.json"},
		{"variant of another model", with("", scratchTracker, map[string]string{"variant.json": `{"variant": "end_to_end"}`}), "names end_to_end, but the directory holds a tracker"},
		{"pretrained flag wrong", with("", scratchSummarizer, map[string]string{"variant.json": `{"variant": "end_to_end", "pretrained": true}`}), "says pretrained true"},
		{"unknown variant", map[string]string{"variant.json": `{"variant": "x"}`}, `variant "x"`},
		{"sum_then_track missing a part", with("", map[string]string{"variant.json": `{"variant": "sum_then_track"}`},
			with("summarizer/", scratchSummarizer, map[string]string{"variant.json": `{"variant": "sum_then_track", "part": "summarizer"}`})), "its tracker part"},
		{"cross-validation with a broken fold", with("", map[string]string{"cv.json": `{"model": "tracker"}`}, map[string]string{"fold-0/hparams.json": "{}"}), "fold-0 has no best/model.safetensors"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, tc.layout)
			if tc.desc == "pretrained without base.json" {
				os.Remove(filepath.Join(dir, "base.json"))
			}
			_, err := describe(dir)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrCheckpoint with %q", err, tc.want)
			}
			if _, _, err := Migrate(t.Context(), dir); err == nil {
				t.Error("Migrate: no error")
			}
			if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
				t.Error("a refused directory got a manifest")
			}
		})
	}
}

// TestSealOpenVerify: a sealed checkpoint opens; a flipped byte, a truncated or a missing file is
// refused with an error naming the file; logs and the resume point are not listed.
func TestSealOpenVerify(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		damage func(dir string) error
		want   string
	}{
		{"intact", func(string) error { return nil }, ""},
		{"log changed", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("more"), 0o644)
		}, ""},
		{"flipped byte", func(dir string) error {
			p := filepath.Join(dir, "best", "model.safetensors")
			b, _ := os.ReadFile(p)
			b[2] ^= 1
			return os.WriteFile(p, b, 0o644)
		}, filepath.Join("best", "model.safetensors") + " has sha256 "},
		{"truncated", func(dir string) error { return os.WriteFile(filepath.Join(dir, "context.json"), []byte("{"), 0o644) }, "context.json has 1 bytes, checkpoint.json records 2"},
		{"missing", func(dir string) error { return os.Remove(filepath.Join(dir, "tokenizer.json")) }, "tokenizer.json is missing (checkpoint.json lists it)"},
		{"manifest of another version", func(dir string) error {
			b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			return os.WriteFile(filepath.Join(dir, ManifestFile), []byte(strings.Replace(string(b), `"format_version": 1`, `"format_version": 9`, 1)), 0o644)
		}, "format version 9, this build reads 1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, scratchTracker)
			if _, err := Seal(dir, trackerID); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			m, err := Open(t.Context(), dir)
			if tc.want == "" {
				if err != nil || m.Kind != KindTracker || m.Migrated || m.Dir != dir || m.Settings.Threshold != 0.3 {
					t.Fatalf("Open: %+v, %v", m, err)
				}
				return
			}
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with ErrCheckpoint and %q", err, tc.want)
			}
		})
	}
}

// TestOpenMembers: a damaged fold checkpoint makes its cross-validation refused, naming the file.
func TestOpenMembers(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, with("", map[string]string{"cv.json": `{"model": "tracker", "k": 1}`}, with("fold-0/", scratchTracker)))
	if _, err := Seal(dir, ensembleID); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "its member fold-0 is not sealed") {
		t.Fatalf("Seal before the fold: %v, want its refusal", err)
	}
	if _, err := Seal(filepath.Join(dir, "fold-0"), trackerID); err != nil {
		t.Fatal(err)
	}
	if _, err := Seal(dir, ensembleID); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "fold-0", "hparams.json"), []byte(`{"architecture": "transformeR"}`), 0o644)
	_, err := Open(t.Context(), dir)
	if want := filepath.Join("fold-0", "hparams.json") + " has sha256"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestMigrate: an older release's checkpoint (no manifest) opens migrated in memory, is migrated
// on disk with its members, then opens verified; a second Migrate leaves it alone.
func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, with("", map[string]string{"variant.json": `{"variant": "sum_then_track"}`},
		with("summarizer/", scratchSummarizer, map[string]string{"variant.json": `{"variant": "sum_then_track", "part": "summarizer"}`}),
		with("tracker/", scratchTracker, map[string]string{"variant.json": `{"variant": "sum_then_track", "part": "tracker"}`})))
	m, err := Open(t.Context(), dir)
	if err != nil || !m.Migrated || m.Kind != KindSumThenTrack {
		t.Fatalf("Open before migration: %+v, %v", m, err)
	}
	if !strings.Contains(MigrateHint(dir), "tracksum-train --migrate "+dir) {
		t.Errorf("hint %q lacks the command", MigrateHint(dir))
	}
	if _, wrote, err := Migrate(t.Context(), dir); err != nil || !wrote {
		t.Fatalf("Migrate: %v, %v", wrote, err)
	}
	for _, sub := range []string{"", "summarizer", "tracker"} {
		m, err := Open(t.Context(), filepath.Join(dir, sub))
		if err != nil || m.Migrated {
			t.Errorf("%q after migration: %+v, %v", sub, m, err)
		}
	}
	if _, wrote, err := Migrate(t.Context(), dir); err != nil || wrote {
		t.Errorf("second Migrate: %v, %v", wrote, err)
	}
}

func TestWant(t *testing.T) {
	for _, tc := range []struct {
		m     Manifest
		flag  string
		kinds []string
		want  string
	}{
		{Manifest{Dir: "checkpoints/tracker", Kind: KindTracker, Backbone: Backbone{Type: BackboneScratch}}, "--summarizer", []string{KindSummarizer},
			"checkpoint: checkpoints/tracker is a tracker checkpoint; --summarizer wants a summarizer"},
		{Manifest{Dir: "ck", Kind: KindSummarizer, Backbone: Backbone{Type: BackboneCausalLM}}, "--tracker", []string{KindTracker, KindEnsemble},
			"checkpoint: ck is a pretrained summarizer checkpoint; --tracker wants a tracker or a tracker cross-validation (fold ensemble)"},
		{Manifest{Dir: "stt/summarizer", Kind: KindSumThenTrack, Part: "summarizer"}, "--summarizer", []string{KindSummarizer},
			"checkpoint: stt/summarizer is a sum_then_track (its summarizer part) checkpoint; --summarizer wants a summarizer (tracksum-infer --method stt runs the sum_then_track directory holding it)"},
		{Manifest{Dir: "cv", Kind: KindCrossValidation, Task: "lexical"}, "--tracker", []string{KindTracker},
			"checkpoint: cv is a lexical cross-validation checkpoint; --tracker wants a tracker"},
		{Manifest{Dir: "ete", Kind: KindEndToEnd}, "--model", []string{KindEndToEnd}, ""},
	} {
		err := tc.m.Want(tc.flag, tc.kinds...)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, ErrCheckpoint))) {
			t.Errorf("%s %v: %v, want %q", tc.m.Dir, tc.kinds, err, tc.want)
		}
	}
}

// TestUnseal: a run starting in a checkpoint (Write) removes its manifest.
func TestUnseal(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, scratchSummarizer)
	if _, err := Seal(dir, summarizerID); err != nil {
		t.Fatal(err)
	}
	if err := Unseal(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		t.Error("manifest still there")
	}
	if err := Unseal(dir); err != nil {
		t.Errorf("Unseal of an unsealed directory: %v", err)
	}
}

// TestOwnedNames: the names of files other packages own, which Describe lists, agree with theirs.
func TestOwnedNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{baseFile, peft.BaseFile}, {adapterDir, peft.AdapterDir}, {fullDir, peft.FullDir},
		{tokenizerConfigFile, snapshot.TokenizerConfigFile}, {TokenizerFile, snapshot.TokenizerFile},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

// foldCV writes a sealed-to-be tracker cross-validation of two folds into dir, whose fold records
// fold-K.json carry the sha256 of their fold's files as experiment/cv writes them.
func foldCV(t testing.TB, dir string) {
	t.Helper()
	files(t, dir, with("", map[string]string{"cv.json": `{"model": "tracker", "k": 2}`, "cv-settings.json": "{}"},
		with("fold-0/", scratchTracker), with("fold-1/", scratchTracker, map[string]string{"best/model.safetensors": "weights of fold 1"})))
	for _, fold := range []string{"fold-0", "fold-1"} {
		sums := map[string]string{}
		for _, name := range []string{"best/model.safetensors", "hparams.json", "tokenizer.json", "context.json"} {
			p := filepath.Join(dir, fold, filepath.FromSlash(name))
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if sums[name], err = digest(p, st.Size()); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteJSON(filepath.Join(dir, fold+".json"), map[string]any{"fold": 0, "checkpoint_sha256": sums}); err != nil {
			t.Fatal(err)
		}
	}
}

// editManifest rewrites the manifest of dir with edit applied to its JSON object.
func editManifest(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if err := WriteJSON(filepath.Join(dir, ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// replaceFold puts another tracker checkpoint (sealed, with other weights) in place of fold-1.
func replaceFold(t *testing.T, dir string) {
	t.Helper()
	fold := filepath.Join(dir, "fold-1")
	if err := os.RemoveAll(fold); err != nil {
		t.Fatal(err)
	}
	files(t, fold, with("", scratchTracker, map[string]string{"best/model.safetensors": "other weights"}))
	if _, err := Seal(fold, trackerID); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesTampered (issue 35 items 4, 5 and 13): a manifest whose members are not distinct
// real subdirectories, that leaves out a file a loader reads, or a cross-validation whose fold
// checkpoint is not the one its fold record names, is refused with one line naming the problem;
// none of them loops.
func TestOpenRefusesTampered(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"member is the directory itself", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["members"] = []string{"."} })
		}, `member "." is not a distinct subdirectory`},
		{"member twice", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["members"] = []string{"fold-0", "fold-0"} })
		}, `member "fold-0" is not a distinct subdirectory`},
		{"member above", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["members"] = []string{"fold-0/.."} })
		}, `member "fold-0/.." is not a distinct subdirectory`},
		{"member a symlink", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "fold-1"))
			if err := os.Symlink("fold-0", filepath.Join(dir, "fold-1")); err != nil {
				t.Fatal(err)
			}
		}, `member "fold-1" is a symbolic link, not a real subdirectory`},
		{"member left out", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["members"] = []string{"fold-0"} })
		}, "lists members [fold-0], but the directory holds [fold-0 fold-1]"},
		{"no files", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["files"] = []any{} })
		}, "checkpoint.json does not list cv-settings.json, which a loader reads"},
		{"fold without its files", func(t *testing.T, dir string) {
			editManifest(t, filepath.Join(dir, "fold-0"), func(m map[string]any) { m["files"] = []any{} })
		}, "does not list best/model.safetensors"},
		{"another kind", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["kind"] = KindCrossValidation })
		}, "says a tracker cross-validation, but the directory holds a tracker cross-validation (fold ensemble)"},
		{"fold replaced by another checkpoint", replaceFold,
			filepath.Join("fold-1", "best", "model.safetensors") + " does not match the sha256 fold-1.json records"},
		{"fold unsealed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "fold-1", ManifestFile)) },
			"fold-1 has no checkpoint.json, but its parent's manifest lists it as a member"},
		{"fold unsealed and changed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "fold-1", ManifestFile))
			os.WriteFile(filepath.Join(dir, "fold-1", "best", "model.safetensors"), []byte("weights of fold 2"), 0o644)
		}, "fold-1 has no checkpoint.json, but its parent's manifest lists it as a member"},
		{"fold changed with its manifest resealed", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "fold-1", "best", "model.safetensors"), []byte("weights of fold 2"), 0o644)
			if _, err := Seal(filepath.Join(dir, "fold-1"), trackerID); err != nil {
				t.Fatal(err)
			}
		}, filepath.Join("fold-1", "best", "model.safetensors") + " does not match the sha256 fold-1.json records"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			foldCV(t, dir)
			sealCV(t, dir)
			if _, err := Open(t.Context(), dir); err != nil {
				t.Fatalf("intact: %v", err)
			}
			tc.damage(t, dir)
			_, err := Open(t.Context(), dir)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with ErrCheckpoint and %q", err, tc.want)
			}
		})
	}
}

// TestUnsealedFoldReplaced (issue 35 item 5): a cross-validation without a manifest (an older
// release's) whose fold was replaced opens with an error rather than a warning, and --migrate
// (Migrate) refuses to seal it.
func TestUnsealedFoldReplaced(t *testing.T) {
	dir := t.TempDir()
	foldCV(t, dir)
	replaceFold(t, dir)
	want := filepath.Join("fold-1", "best", "model.safetensors") + " does not match the sha256 fold-1.json records"
	if _, err := Open(t.Context(), dir); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v, want %q", err, want)
	}
	if _, _, err := Migrate(t.Context(), dir); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), want) {
		t.Errorf("Migrate: %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		t.Error("Migrate sealed the directory")
	}
}

// TestOpenCancelled: the walk stops at a cancelled context.
func TestOpenCancelled(t *testing.T) {
	dir := t.TempDir()
	foldCV(t, dir)
	sealCV(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Open(ctx, dir); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCheckpoint) {
		t.Errorf("Open: %v, want context.Canceled", err)
	}
	if _, _, err := Migrate(ctx, filepath.Join(dir, "fold-0")); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate: %v, want context.Canceled", err)
	}
}

// TestSealWritesTheStatedIdentity (issue 34 item 1): the manifest is what the model states, not
// what its metadata files say: Seal reads none of them (an unreadable hparams.json seals), keeps
// the stated settings, and refuses an identity that leaves out what a loader needs.
func TestSealWritesTheStatedIdentity(t *testing.T) {
	for _, tc := range []struct {
		desc string
		id   Identity
		want string // "" = sealed
	}{
		{"tracker", trackerID, ""},
		{"lexical-context tracker has no best/", Identity{Kind: KindTracker, Task: "tracker", Backbone: Backbone{Type: BackboneScratch, Architecture: "lexical-context"}},
			"has no lexical.json"},
		{"summarizer stated on a tracker's files", summarizerID, "has no summarizer.json"},
		{"no backbone", Identity{Kind: KindTracker, Task: "tracker"}, "kind, task and backbone must be stated"},
		{"pretrained without its base", Identity{Kind: KindTracker, Task: "tracker", Backbone: Backbone{Type: BackboneEncoder}}, "states its base"},
		{"unknown kind", Identity{Kind: "x", Task: "x", Backbone: Backbone{Type: BackboneScratch}}, `kind "x"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, with("", scratchTracker, map[string]string{"hparams.json": "not json"}))
			m, err := Seal(dir, tc.id)
			if tc.want != "" {
				if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Open(t.Context(), dir)
			if err != nil || got.Identity() != m.Identity() || got.Settings.Threshold != 0.3 {
				t.Errorf("Open: %+v, %v; want the sealed identity %+v", got, err, m.Identity())
			}
		})
	}
}

// TestMigratePretrainedSumThenTrack: the directory of a pretrained SUM-THEN-TRACK's two parts
// states its summarizer's backbone and base (required of a pretrained backbone) and its tracker's
// threshold when migrated.
func TestMigratePretrainedSumThenTrack(t *testing.T) {
	dir := t.TempDir()
	part := func(task, name string) map[string]string {
		return with(name+"/", pretrainedTracker, map[string]string{
			"pretrained.json": `{"task": "` + task + `", "model_type": "llama", "variant": "sum_then_track"}`,
			"variant.json":    `{"variant": "sum_then_track", "part": "` + name + `", "pretrained": true}`})
	}
	files(t, dir, with("", map[string]string{"variant.json": `{"variant": "sum_then_track", "pretrained": true}`},
		part("summarizer", "summarizer"), part("tracker", "tracker")))
	m, wrote, err := Migrate(t.Context(), dir)
	if err != nil || !wrote || m.Base == nil || m.Base.ModelType != "bert" || m.Backbone.Type != BackboneCausalLM {
		t.Fatalf("Migrate: %+v, %v, %v", m, wrote, err)
	}
	if _, err := Open(t.Context(), dir); err != nil {
		t.Errorf("Open after migration: %v", err)
	}
}

// TestSealKeptCheckpoints (issue 36 item 5): Seal makes each kept evaluation checkpoint under
// checkpoints/ a checkpoint of its own (the run's metadata copied in, its own manifest), also one
// kept in the earlier layout (the variables beside metrics.json, no best/); the interop layouts
// are not copied.
func TestSealKeptCheckpoints(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, with("", scratchTracker, map[string]string{"adapter/adapter_config.json": "{}",
		"checkpoints/step-0000002/best/model.safetensors": "weights 2", "checkpoints/step-0000002/best/metrics.json": "{}",
		"checkpoints/step-0000003/model.safetensors": "weights 3", "checkpoints/step-0000003/metrics.json": "{}"}))
	if _, err := Seal(dir, trackerID); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"step-0000002", "step-0000003"} {
		sd := filepath.Join(dir, KeptDir, step)
		m, err := Open(t.Context(), sd)
		if err != nil || m.Identity() != trackerID {
			t.Fatalf("%s: %+v, %v", step, m, err)
		}
		want := []string{"best/model.safetensors", "config.yaml", "context.json", "hparams.json", "tokenizer.json"}
		if got := paths(m); !reflect.DeepEqual(got, want) {
			t.Errorf("%s lists %v, want %v", step, got, want)
		}
		if _, err := os.Stat(filepath.Join(sd, "adapter")); err == nil {
			t.Errorf("%s got best/'s interop adapter/", step)
		}
	}
}

// TestReadFileIsWhatOpenVerified checks that a loader reading through the opened manifest
// (Manifest.ReadFile) parses the bytes Open hashed, not the file again: a file changed after Open
// is not seen, and a file Open did not list is read from the directory.
func TestReadFileIsWhatOpenVerified(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Seal(dir, Identity{Kind: KindTracker, Task: KindTracker, Backbone: Backbone{Type: "test"}}); err != nil {
		t.Fatal(err)
	}
	m, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"a": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "later.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{{"meta.json", `{"a": 1}`}, {"later.json", `{}`}} {
		b, err := m.ReadFile(tc.name)
		if err != nil || string(b) != tc.want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
	if _, err := m.ReadFile("absent.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want os.ErrNotExist", err)
	}
}

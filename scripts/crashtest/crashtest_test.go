package crashtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// Settings from the environment: CRASHTEST=1 turns the test on, CRASHTEST_N
// is the number of kills per command (default 10), CRASHTEST_SEED seeds the kill times
// (default: the clock, printed so that a failure can be replayed).
type settings struct {
	root string
	n    int
	rng  *rand.Rand
	work string
	// env is added to every command's environment (TRACKSUM_* settings a test needs).
	env []string
	// trial, when set, runs at the start of each of replaceTrials' trials (a fresh cache for it).
	trial func(i int)
	// bare runs the commands without --config (tracksum-train --migrate takes no other flag).
	bare bool
}

func setup(t *testing.T) *settings {
	if os.Getenv("CRASHTEST") != "1" {
		t.Skip("crash-safety check: run with CRASHTEST=1 (make crashtest)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"prepare", "train", "eval"} {
		if _, err := os.Stat(filepath.Join(root, "bin", "tracksum-"+c)); err != nil {
			t.Fatalf("bin/tracksum-%s missing: run make build first (%v)", c, err)
		}
	}
	n := 10
	if v := os.Getenv("CRASHTEST_N"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("CRASHTEST_N=%q: want a positive integer", v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CRASHTEST_SEED"); v != "" {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("CRASHTEST_SEED=%q: %v", v, err)
		}
	}
	t.Logf("%d kills per command, CRASHTEST_SEED=%d", n, seed)
	return &settings{root: root, n: n, rng: rand.New(rand.NewPCG(seed, 0)), work: t.TempDir()}
}

func (s *settings) cmd(name string, args ...string) *exec.Cmd {
	if !s.bare {
		args = append([]string{"--config", filepath.Join(s.root, "configs", "tiny.yaml")}, args...)
	}
	c := exec.Command(filepath.Join(s.root, "bin", "tracksum-"+name), args...)
	c.Dir = s.root
	// The commands read TRACKSUM_* settings from the environment: none may leak in from the shell.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRACKSUM_") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, s.env...)
	return c
}

// run runs a command to completion and returns how long it took.
func (s *settings) run(t *testing.T, name string, args ...string) time.Duration {
	t.Helper()
	t0 := time.Now()
	out, err := s.cmd(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tracksum-%s %v: %v\n%s", name, args, err, tail(out))
	}
	return time.Since(t0)
}

// killAfter starts a command and SIGKILLs it after d; it reports whether the kill happened (false:
// the command had finished, successfully, before).
func (s *settings) killAfter(t *testing.T, d time.Duration, name string, args ...string) bool {
	t.Helper()
	c := s.cmd(name, args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tracksum-%s %v failed before the kill: %v\n%s", name, args, err, tail(out.Bytes()))
		}
		return false
	case <-time.After(d):
		c.Process.Kill()
		<-done
		return true
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// tree maps the relative path of each regular file under dir to a digest of its content, with
// normalize applied to the content first (nil: none); nil when dir does not exist.
func tree(t *testing.T, dir string, normalize func(rel string, b []byte) []byte) map[string]string {
	t.Helper()
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if normalize != nil {
			b = normalize(rel, b)
			if b == nil {
				return nil
			}
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func same(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// diff names the files whose digests differ.
func diff(a, b map[string]string) string {
	var d []string
	for k := range a {
		if a[k] != b[k] {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k)
		}
	}
	slices.Sort(d)
	return strings.Join(d, ", ")
}

// onlyEntry fails unless dir holds exactly one entry, name: no temporary, aside copy or lock file
// left after a complete rerun.
func onlyEntry(t *testing.T, dir, name string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v after the rerun, want only %s", dir, names, name)
	}
}

func cp(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// replaceTrials runs the directory-replacing command `args --out OUT` with kills, until s.n of them
// landed while it ran: odd trials replace a copy of prev, even ones start with no output. After each kill OUT must be the previous
// version (or absent when there was none) or the new one, and a rerun must produce exactly want.
func (s *settings) replaceTrials(t *testing.T, name string, args []string, prev, want string, took time.Duration) {
	prevTree, wantTree := tree(t, prev, nil), tree(t, want, nil)
	killed, i := 0, 0
	for ; killed < s.n && i < 4*s.n; i++ {
		if s.trial != nil {
			s.trial(i)
		}
		parent := filepath.Join(s.work, fmt.Sprintf("%s-%d", name, i))
		os.MkdirAll(parent, 0o755)
		out := filepath.Join(parent, "out")
		var before map[string]string
		if i%2 == 1 {
			cp(t, prev, out)
			before = prevTree
		}
		full := append(slices.Clone(args), "--out", out)
		// Half the kills anywhere in the run, half near its end, where the output is written
		// and committed.
		d := time.Duration(s.rng.Float64() * 1.2 * float64(took))
		if i%4 >= 2 {
			d = time.Duration((0.8 + 0.25*s.rng.Float64()) * float64(took))
		}
		if s.killAfter(t, d, name, full...) {
			killed++
		}
		got := tree(t, out, nil)
		if !same(got, before) && !same(got, wantTree) {
			t.Errorf("%s trial %d (kill after %v): output is neither the previous nor the new version (differs from the new in: %s)", name, i, d, diff(got, wantTree))
		}
		// The machine's load changes: the next kill times follow the latest full run.
		took = s.run(t, name, full...)
		if got := tree(t, out, nil); !same(got, wantTree) {
			t.Errorf("%s trial %d: rerun differs from an uninterrupted run in %s", name, i, diff(got, wantTree))
		}
		onlyEntry(t, parent, "out")
	}
	t.Logf("%s: %d kills in %d trials (the other trials finished before their kill), last uninterrupted run %v", name, killed, i, took.Round(time.Millisecond))
	if killed < s.n {
		t.Errorf("%s: only %d of %d kills landed before the command finished", name, killed, s.n)
	}
}

func TestCrashPrepare(t *testing.T) {
	s := setup(t)
	prev, want := filepath.Join(s.work, "ref-prev"), filepath.Join(s.work, "ref-new")
	s.run(t, "prepare", "--quiet", "--sample-size", "3000", "--seed", "11", "--out", prev)
	took := s.run(t, "prepare", "--quiet", "--sample-size", "3000", "--out", want)
	s.replaceTrials(t, "prepare", []string{"--quiet", "--sample-size", "3000", "--overwrite"}, prev, want, took)
}

func TestCrashEval(t *testing.T) {
	s := setup(t)
	ref := filepath.Join(s.work, "ref.jsonl")
	s.run(t, "prepare", "--sample-size", "3000", "--write-sample", ref)
	// The previous version scores the references against themselves, the new one against the
	// first half of them (the rest scored as empty predictions).
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	half := filepath.Join(s.work, "half.jsonl")
	os.WriteFile(half, bytes.Join(lines[:len(lines)/2], nil), 0o644)
	prev, want := filepath.Join(s.work, "ref-prev"), filepath.Join(s.work, "ref-new")
	s.run(t, "eval", "--pred", ref, "--ref", ref, "--out", prev)
	args := []string{"--pred", half, "--ref", ref, "--missing", "empty", "--overwrite"}
	took := s.run(t, "eval", append(slices.Clone(args), "--out", want)...)
	// Settings name the files, not the output: both versions are comparable file by file.
	s.replaceTrials(t, "eval", args, prev, want, took)
}

// TestCrashEvalNLI is TestCrashEval with the nli judge (a tiny random BERT NLI snapshot) and its
// disk cache: each trial starts with an empty cache, so the kills land while entries are written;
// the rerun reads what the killed run left, and must still give exactly the uninterrupted run's
// output (issue 35). The cache is one directory, emptied, rather than one per trial: config.yaml
// records its path.
func TestCrashEvalNLI(t *testing.T) {
	s := setup(t)
	snap := filepath.Join(s.work, "nli")
	if err := randsnap.WriteEncoder(snap, randsnap.Encoder{ModelType: "bert", Prefix: "bert.", Vocab: 300, Hidden: 16,
		Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 130, Seed: 7, Pooler: true,
		Labels: []string{"contradiction", "entailment", "neutral"}}); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(s.work, "nli-cache")
	s.env = []string{"TRACKSUM_EVAL_NLI_CACHE_DIR=" + cacheDir}
	emptyCache := func() {
		if err := os.RemoveAll(cacheDir); err != nil {
			t.Fatal(err)
		}
	}
	ref := filepath.Join(s.work, "ref.jsonl")
	s.run(t, "prepare", "--sample-size", "300", "--write-sample", ref)
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	half := filepath.Join(s.work, "half.jsonl")
	os.WriteFile(half, bytes.Join(lines[:len(lines)/2], nil), 0o644)
	prev, want := filepath.Join(s.work, "ref-prev"), filepath.Join(s.work, "ref-new")
	judge := []string{"--judge", "nli", "--nli-model", snap}
	s.run(t, "eval", append(slices.Clone(judge), "--pred", ref, "--ref", ref, "--out", prev)...)
	args := append(slices.Clone(judge), "--pred", half, "--ref", ref, "--missing", "empty", "--overwrite")
	emptyCache()
	took := s.run(t, "eval", append(slices.Clone(args), "--out", want)...)
	s.trial = func(int) { emptyCache() }
	s.replaceTrials(t, "eval", args, prev, want, took)
}

// timingFree drops the fields that measure time (throughput, durations) from a checkpoint's JSON
// files, and the plots drawn from them (PNG and SVG); everything else must be bit-identical after a resume.
func timingFree(rel string, b []byte) []byte {
	timing := []string{"examples_per_sec", "tokens_per_sec", "train_seconds", "eval_seconds"}
	switch {
	case rel == training.PlotFile || rel == training.PlotSVGFile:
		return nil
	case strings.HasSuffix(rel, ".jsonl"):
		var out bytes.Buffer
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			out.Write(dropKeys(line, timing))
			out.WriteByte('\n')
		}
		return out.Bytes()
	case rel == "report.json":
		return dropKeys(b, timing)
	}
	return b
}

func dropKeys(b []byte, keys []string) []byte {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return b // compared as is, and any difference shows
	}
	for _, k := range keys {
		delete(m, k)
	}
	out, _ := json.Marshal(m)
	return out
}

// TestCrashTrain kills training runs of each task (CRASHTEST_N kills each) and checks after each
// kill that the checkpoint directory is resumable, then that a rerun ends bit-identical to an
// uninterrupted run (timing fields aside).
func TestCrashTrain(t *testing.T) {
	s := setup(t)
	data := filepath.Join(s.work, "prepared")
	s.run(t, "prepare", "--quiet", "--out", data)
	for _, task := range []struct {
		name string
		n    int
	}{{"tracker", s.n}, {"summarizer", s.n}} {
		t.Run(task.name, func(t *testing.T) { s.trainTrials(t, task.name, task.n, []string{"--task", task.name, "--data", data}) })
	}
}

// TestCrashPretrained kills LoRA fine-tuning of a pretrained causal LM (tracker, lm_cls head, on a
// tiny random Llama snapshot with hf/randsnap's byte-level tokenizer) like TestCrashTrain, then
// exports of its checkpoint (tracksum-export --overwrite over a previous export) like
// TestCrashPrepare: after each kill the output is the previous or the new version, and a rerun
// ends bit-identical to an uninterrupted run.
func TestCrashPretrained(t *testing.T) {
	s := setup(t)
	if _, err := os.Stat(filepath.Join(s.root, "bin", "tracksum-export")); err != nil {
		t.Fatalf("bin/tracksum-export missing: run make build first (%v)", err)
	}
	// randsnap's tokenizer spends one token per byte: longer prompts (as scripts/pretrained-demo.sh).
	s.env = []string{"TRACKSUM_TRACKER_MAX_SEQ_LEN=512", "TRACKSUM_TRACKER_TRAIN_WARMUP_STEPS=0"}
	data := filepath.Join(s.work, "prepared-pretrained")
	s.run(t, "prepare", "--quiet", "--sample-size", "10", "--out", data)
	snap := filepath.Join(s.work, "snapshot")
	if err := randsnap.WriteDecoder(snap, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2,
		KVHeads: 1, Intermediate: 32, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	args := []string{"--task", "tracker", "--pretrained", snap, "--head", "lm_cls", "--lora-rank", "4", "--data", data,
		"--max-steps", "6", "--eval-every", "2", "--batch-size", "4", "--learning-rate", "1e-3"}
	ref := filepath.Join(s.work, "ref-pretrained-tracker")
	t.Run("train", func(t *testing.T) { s.trainTrials(t, "pretrained-tracker", s.n, args) })
	t.Run("export", func(t *testing.T) {
		if !fileExists(filepath.Join(ref, "pretrained.json")) {
			t.Skip("no reference checkpoint (the train subtest did not run)")
		}
		other := filepath.Join(s.work, "other-pretrained-tracker")
		s.run(t, "train", append(slices.Clone(args), "--seed", "11", "--out", other)...)
		prev, want := filepath.Join(s.work, "export-prev"), filepath.Join(s.work, "export-new")
		s.run(t, "export", "--checkpoint", other, "--out", prev)
		took := s.run(t, "export", "--checkpoint", ref, "--out", want)
		s.replaceTrials(t, "export", []string{"--checkpoint", ref, "--overwrite"}, prev, want, took)
	})
}

// TestCrashMigrate kills `tracksum-train --migrate` of a tracker cross-validation as an older
// release left it (no checkpoint.json in it or its fold checkpoints): after each kill every
// directory holding a manifest must open verified and the others still open as unmigrated (a
// manifest is written whole, members before their parent), and a rerun must end with exactly the
// files of an uninterrupted migration.
func TestCrashMigrate(t *testing.T) {
	s := setup(t)
	data, ref := filepath.Join(s.work, "prepared-folds"), filepath.Join(s.work, "ref-cv")
	s.run(t, "prepare", "--quiet", "--folds", "2", "--out", data)
	s.run(t, "train", "--task", "tracker", "--data", data, "--folds", "2", "--max-steps", "2", "--out", ref)
	dirs := []string{".", "fold-0", "fold-1"}
	for _, d := range dirs {
		if err := os.Remove(filepath.Join(ref, d, checkpoint.ManifestFile)); err != nil {
			t.Fatal(err)
		}
	}
	s.bare = true
	migrated := filepath.Join(s.work, "migrated-cv")
	cp(t, ref, migrated)
	took := s.run(t, "train", "--migrate", migrated)
	want := tree(t, migrated, nil)
	killed, i := 0, 0
	for ; killed < s.n && i < 4*s.n; i++ {
		parent := filepath.Join(s.work, fmt.Sprintf("migrate-%d", i))
		os.MkdirAll(parent, 0o755)
		out := filepath.Join(parent, "ck")
		cp(t, ref, out)
		// Half the kills anywhere, half near the end, where the manifests are written.
		d := time.Duration(s.rng.Float64() * 1.2 * float64(took))
		if i%4 >= 2 {
			d = time.Duration((0.7 + 0.35*s.rng.Float64()) * float64(took))
		}
		if s.killAfter(t, d, "train", "--migrate", out) {
			killed++
		}
		for _, sub := range dirs {
			dir := filepath.Join(out, sub)
			_, sealed := os.Stat(filepath.Join(dir, checkpoint.ManifestFile))
			m, err := checkpoint.Open(t.Context(), dir)
			if err != nil || m.Migrated != (sealed != nil) {
				t.Errorf("migrate trial %d (kill after %v): %s (manifest: %v): %+v, %v", i, d, sub, sealed == nil, m, err)
			}
		}
		took = s.run(t, "train", "--migrate", out)
		if got := tree(t, out, nil); !same(got, want) {
			t.Errorf("migrate trial %d: rerun differs from an uninterrupted migration in %s", i, diff(got, want))
		}
		onlyEntry(t, parent, "ck")
	}
	t.Logf("migrate: %d kills in %d trials, last uninterrupted run %v", killed, i, took.Round(time.Millisecond))
	if killed < s.n {
		t.Errorf("migrate: only %d of %d kills landed before the command finished", killed, s.n)
	}
}

// trainTrials kills `tracksum-train args --out CK` runs (label names the reference checkpoint
// and the trials) until n kills landed, checking each interrupted directory and each rerun.
func (s *settings) trainTrials(t *testing.T, task string, n int, args []string) {
	ref := filepath.Join(s.work, "ref-"+task)
	took := s.run(t, "train", append(slices.Clone(args), "--out", ref)...)
	want := tree(t, ref, timingFree)
	if want[filepath.Join(training.BestDir, training.BestVariables)] == "" {
		t.Fatalf("reference checkpoint has no best weights: %v", want)
	}
	killed, resumes, i := 0, 0, 0
	for ; killed < n && i < 5*n; i++ {
		parent := filepath.Join(s.work, fmt.Sprintf("%s-%d", task, i))
		out := filepath.Join(parent, "ck")
		full := append(slices.Clone(args), "--out", out)
		// One or two kills, then a run to the end.
		for k := range 1 + i%2 {
			d := time.Duration((0.05 + 0.95*s.rng.Float64()) * float64(took))
			if !s.killAfter(t, d, "train", full...) {
				break
			}
			killed++
			// The directory must be resumable: a complete resume point (or none with no
			// progress), complete best weights when present.
			rp, err := training.ReadResumePoint(out)
			if err != nil {
				t.Errorf("%s trial %d kill %d (after %v): %v", task, i, k+1, d, err)
				continue
			}
			if rp != nil {
				resumes++
				if _, err := tensorio.ReadTensors(filepath.Join(out, training.StateDir, "variables.safetensors")); err != nil {
					t.Errorf("%s trial %d kill %d: resume point unreadable: %v", task, i, k+1, err)
				}
			}
			if best := filepath.Join(out, training.BestDir, training.BestVariables); fileExists(best) {
				if _, err := tensorio.ReadTensors(best); err != nil {
					t.Errorf("%s trial %d kill %d: best weights unreadable: %v", task, i, k+1, err)
				}
			}
		}
		s.run(t, "train", full...)
		if got := tree(t, out, timingFree); !same(got, want) {
			t.Errorf("%s trial %d: rerun differs from an uninterrupted run in %s", task, i, diff(got, want))
		}
		onlyEntry(t, parent, "ck")
	}
	t.Logf("train %s: %d kills in %d trials (%d left a resume point to continue from, the others none yet), uninterrupted run %v",
		task, killed, i, resumes, took.Round(time.Millisecond))
	if killed < n {
		t.Errorf("train %s: only %d of %d kills landed before the command finished", task, killed, n)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

package training

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"go.yaml.in/yaml/v3"
)

// ErrResume marks a checkpoint directory whose training cannot be resumed as asked: its resume
// point is missing or damaged while it holds progress, it was trained with other settings, or it
// holds another task's checkpoint.
var ErrResume = errors.New("cannot resume")

// Files of the resume point, inside StateDir.
const (
	stateFile      = checkpoint.StateFile
	stateVariables = "variables.safetensors"
)

// ResumePoint is what a checkpoint directory's state/ says about the run saved there.
type ResumePoint struct {
	// Step is the number of optimizer steps done.
	Step int
	// Done is true when the run finished (completed or stopped early).
	Done bool
}

// LockOutDir prepares dir to receive a checkpoint of task ("tracker" or "summarizer"; marker is
// the file that identifies its checkpoints, e.g. hparams.json) for one training run: it refuses a
// path that is a file (or a symlink to one), takes the lock of dir (held until Release, so that two
// runs never train into one directory), repairs a state/ replacement that a crash interrupted,
// removes temporaries left by killed runs, and refuses a non-empty directory that is not a
// checkpoint of task (another task's checkpoint, a prepared directory, anything else).
func LockOutDir(dir, marker, task string) (*atomicio.Lock, error) {
	// A symlink to a directory is followed: the lock is that of the directory it leads to, so
	// that two runs reaching one directory through different paths still exclude each other.
	dir, err := atomicio.ResolveDir(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	lock, err := atomicio.Acquire(dir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*atomicio.Lock, error) {
		lock.Release()
		return nil, err
	}
	// Only an existing directory can hold a crashed state/ replacement: recovering would create dir
	// (for state/'s lock), and a run failing before it writes anything must leave no empty --out.
	if _, err := os.Stat(dir); err == nil {
		if err := atomicio.RecoverDir(filepath.Join(dir, StateDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(fmt.Errorf("training: %w", err))
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, BestDir)} {
		if err := atomicio.RemoveStaleTemps(d); err != nil {
			return fail(fmt.Errorf("training: %w", err))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	if len(entries) == 0 || exists(filepath.Join(dir, marker)) {
		return lock, nil
	}
	// What another output is: a finished checkpoint says it in its manifest.
	var m checkpoint.Manifest
	if err := atomicio.ReadJSON(filepath.Join(dir, checkpoint.ManifestFile), &m, false); err == nil && m.Kind != "" {
		return fail(fmt.Errorf("%w: %s holds a %s checkpoint, not a %s checkpoint; use another --out", ErrResume, dir, m.Name(), task))
	}
	if exists(filepath.Join(dir, dataset.ManifestFile)) {
		return fail(fmt.Errorf("%w: %s holds a prepared directory, not a %s checkpoint; use another --out", ErrResume, dir, task))
	}
	return fail(fmt.Errorf("%w: %s exists and is not a %s checkpoint (no %s); use another --out", ErrResume, dir, task, marker))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ReadResumePoint returns the resume point saved in dir, or nil when dir holds no training
// progress (a run there starts from step 0). It fails with ErrResume when dir holds progress (a
// best checkpoint, metrics rows) but its resume point is missing or damaged: restarting from step 0
// then would silently throw the progress away.
func ReadResumePoint(dir string) (*ResumePoint, error) {
	st, err := readState(dir)
	if err != nil || st == nil || st.Fresh {
		return nil, err
	}
	return &ResumePoint{Step: st.Step, Done: st.Done}, nil
}

// readState reads the resume point of dir: nil when there is none and no progress either.
func readState(dir string) (*state, error) {
	stateDir := filepath.Join(dir, StateDir)
	path := filepath.Join(stateDir, stateFile)
	var st state
	err := atomicio.ReadJSON(path, &st, false)
	var pathErr *fs.PathError
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(stateDir); err == nil {
			return nil, fmt.Errorf("%w: %s has no %s (damaged resume point); delete %s to start over", ErrResume, stateDir, stateFile, dir)
		}
		if p := progressIn(dir); p != "" {
			return nil, fmt.Errorf("%w: %s holds training progress (%s) but no resume point (%s); delete it or use another --out to start over", ErrResume, dir, p, filepath.Join(StateDir, stateFile))
		}
		return nil, nil
	}
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("training: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w (damaged resume point); delete %s to start over", ErrResume, err, dir)
	}
	if !st.Fresh {
		if _, err := os.Stat(filepath.Join(stateDir, stateVariables)); err != nil {
			return nil, fmt.Errorf("%w: %s has no %s (damaged resume point); delete %s to start over", ErrResume, stateDir, stateVariables, dir)
		}
	}
	return &st, nil
}

// progressIn names what in dir shows that training got somewhere, or "" when nothing does.
func progressIn(dir string) string {
	var found []string
	if exists(filepath.Join(dir, BestDir, BestVariables)) {
		found = append(found, filepath.Join(BestDir, BestVariables))
	}
	if st, err := os.Stat(filepath.Join(dir, MetricsFile)); err == nil && st.Size() > 0 {
		found = append(found, MetricsFile)
	}
	return strings.Join(found, ", ")
}

// truncateMetrics keeps the rows of dir's metrics.jsonl up to step (those the resume point saw
// written) and drops the rest, so that steps run again after a crash are not listed twice. A torn
// last line (a crash during the write) is dropped too.
func truncateMetrics(dir string, step int) error {
	path := filepath.Join(dir, MetricsFile)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("training: %w", err)
	}
	var keep bytes.Buffer
	err = atomicio.ReadJSONL(path, atomicio.JSONLOptions{DropTorn: true}, func(_ int, line json.RawMessage) error {
		var row struct {
			Step *int `json:"step"`
		}
		if err := json.Unmarshal(line, &row); err != nil || row.Step == nil {
			return errors.New("not a metrics row")
		}
		if *row.Step <= step {
			keep.Write(line)
			keep.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrResume, err)
	}
	// The kept rows are lines of the file as they were: the same length means every row kept.
	if int64(keep.Len()) == fi.Size() {
		return nil
	}
	return atomicio.WriteFile(path, keep.Bytes(), 0o644)
}

// ConfigChanges returns, sorted, the dotted keys under the given top-level sections (e.g. "seed",
// "tracker") whose values differ between old and cur, each as "key: OLD -> NEW".
func ConfigChanges(old, cur *config.Config, sections ...string) ([]string, error) {
	a, err := flatConfig(old)
	if err != nil {
		return nil, err
	}
	b, err := flatConfig(cur)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		in := false
		for _, s := range sections {
			in = in || k == s || strings.HasPrefix(k, s+".")
		}
		if in && !config.Unrecorded(k) && !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, show(a[k]), show(b[k])))
		}
	}
	slices.Sort(out)
	return out, nil
}

func show(v any) string {
	if v == nil {
		return "(unset)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flatConfig maps each dotted key of c's YAML form to its value (lists stay whole).
func flatConfig(c *config.Config) (map[string]any, error) {
	y, err := c.YAML()
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := yaml.Unmarshal(y, &tree); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, sub := range m {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				walk(key, sub)
			}
			return
		}
		out[prefix] = v
	}
	walk("", tree)
	return out, nil
}

// CheckConfig guards a rerun into an existing checkpoint directory dir of task ("tracker" or
// "summarizer") against changed settings. When dir holds training progress, the config it was
// trained with (dir/configFile) is compared with cfg on seed and the task's section: a difference
// is refused with the list of keys (ErrResume), always when a finished run's seed or loop settings
// (TASK.train.*) differ (it trains nothing with them), otherwise unless allowChanged, in which
// case the old file is kept as config.step-N.yaml (the settings of steps 1..N), a warning goes to
// log, and the caller writes cfg as configFile (the settings from now on). Without progress it
// does nothing.
func CheckConfig(dir, configFile string, cfg *config.Config, task string, allowChanged bool, log io.Writer) error {
	rp, err := ReadResumePoint(dir)
	if err != nil || rp == nil {
		return err
	}
	path := filepath.Join(dir, configFile)
	old, err := config.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %s was trained to step %d, but its settings cannot be read: %w", ErrResume, dir, rp.Step, err)
	}
	changes, err := ConfigChanges(old, cfg, "seed", task)
	if err != nil || len(changes) == 0 {
		return err
	}
	if rp.Done {
		// A finished run trains nothing more (Run returns at once): new seed or loop settings
		// (epochs, max_steps, learning rate...) would only make configFile claim them for
		// variables trained with the old ones. Settings applied after the loop (the context
		// rescorer, the threshold) still follow the rerun.
		var loop []string
		for _, c := range changes {
			if strings.HasPrefix(c, "seed:") || strings.HasPrefix(c, task+".train.") {
				loop = append(loop, c)
			}
		}
		if len(loop) > 0 {
			return fmt.Errorf("%w: %s finished at step %d with other training settings (%s); a finished run is not trained further, even with --allow-changed-config: rerun with the settings of its %s, or train into another --out",
				ErrResume, dir, rp.Step, strings.Join(loop, "; "), configFile)
		}
	}
	if !allowChanged {
		return fmt.Errorf("%w: %s was trained to step %d with other settings (%s); rerun with the settings of its %s, use another --out, or pass --allow-changed-config",
			ErrResume, dir, rp.Step, strings.Join(changes, "; "), configFile)
	}
	kept := filepath.Join(dir, fmt.Sprintf("config.step-%d.yaml", rp.Step))
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := atomicio.WriteFile(kept, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "training: WARNING: continuing %s from step %d with changed settings (%s); %s now holds the new settings, %s those of steps 1..%d\n",
		dir, rp.Step, strings.Join(changes, "; "), configFile, filepath.Base(kept), rp.Step)
	return nil
}

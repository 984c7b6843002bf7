package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// payload lists the files a loader of m's kind reads in dir (paths only: Seal hashes them) and
// the members the directory holds, from what m states (kind, part, backbone) and which files
// exist, reading no metadata: Seal lists them, Open checks that a manifest lists them all. A file
// a kind needs that is missing, or an unfinished run (state/ not done), is refused with
// ErrCheckpoint.
func payload(dir string, m *Manifest) (files []File, members []string, err error) {
	d := &describer{dir: dir, m: &Manifest{Dir: dir}}
	switch {
	case !builtIn(m.Backbone.Type):
		err = d.ownLayout()
	case m.Kind == KindCrossValidation || m.Kind == KindEnsemble:
		err = d.crossValidationPayload(m)
	case m.Kind == KindSumThenTrack && m.Part == "":
		// The directory of the two parts, each a checkpoint with its own manifest.
		if err = d.need("sum_then_track's record", VariantFile); err == nil {
			for _, part := range []string{VariantSummarizerDir, VariantTrackerDir} {
				if st, serr := os.Stat(d.path(part)); serr != nil || !st.IsDir() {
					return nil, nil, fmt.Errorf("%w: %s has no %s part (%s/)", ErrCheckpoint, dir, part, part)
				}
				d.m.Members = append(d.m.Members, part)
			}
		}
	default:
		err = d.modelPayload(m)
	}
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(d.m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return d.m.Files, d.m.Members, nil
}

// builtIn reports whether backbone is one of this build's (Backbone* constants), whose layouts
// payload knows.
func builtIn(backbone string) bool {
	return backbone == BackboneScratch || backbone == BackboneCausalLM || backbone == BackboneEncoder
}

// ownLayout lists every regular file of the directory but its manifest: the checkpoint of a
// backbone registered from outside this package (model/open), whose layout only its opener knows,
// so that Open verifies all of it. It has no members.
func (d *describer) ownLayout() error {
	if err := d.finished(); err != nil {
		return err
	}
	if err := d.tree("."); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	d.m.Files = slices.DeleteFunc(d.m.Files, func(f File) bool { return f.Path == ManifestFile })
	return nil
}

// modelTask is the task of the one model of m's kind: a tracker or a summarizer (SUM-THEN-TRACK's
// parts are one of each, END-TO-END is a summarizer answering its prompt).
func modelTask(m *Manifest) (string, error) {
	switch {
	case m.Kind == KindTracker || m.Kind == KindSummarizer:
		return m.Kind, nil
	case m.Kind == KindSumThenTrack && (m.Part == VariantTrackerDir || m.Part == VariantSummarizerDir):
		return m.Part, nil
	case m.Kind == KindEndToEnd && m.Part == "":
		return dataset.TaskSummarizer, nil
	}
	return "", fmt.Errorf("%w: %s: kind %q (part %q) is no checkpoint kind this build reads", ErrCheckpoint, m.Dir, m.Kind, m.Part)
}

// modelPayload lists the files of the checkpoint of one model.
func (d *describer) modelPayload(m *Manifest) error {
	task, err := modelTask(m)
	if err != nil {
		return err
	}
	if err := d.finished(); err != nil {
		return err
	}
	switch {
	case m.Pretrained():
		if err := d.need(unfinished, PretrainedFile, bestWeights, baseFile); err != nil {
			return err
		}
		d.add(tokenizerConfigFile)
		for _, sub := range []string{adapterDir, fullDir} {
			if err := d.tree(sub); err != nil {
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
		}
	case task == dataset.TaskTracker:
		if err := d.need("the tracker's metadata", HyperparamsFile); err != nil {
			return err
		}
		if m.Backbone.Architecture == lexicalArchitecture {
			if err := d.need("the lexical-context tracker's fit is written at the end of training", LexicalFile); err != nil {
				return err
			}
		} else if err := d.need(unfinished, bestWeights); err != nil {
			return err
		}
		d.add(ContextFile)
	default:
		if err := d.need("the summarizer's metadata", SummarizerFile); err != nil {
			return err
		}
		if err := d.need(unfinished, bestWeights); err != nil {
			return err
		}
	}
	if m.Kind != KindTracker && m.Kind != KindSummarizer {
		if err := d.need("the variant's record", VariantFile); err != nil {
			return err
		}
	}
	d.add(TokenizerFile, ConfigFile, PretrainedFile, HyperparamsFile, SummarizerFile)
	return nil
}

// crossValidationKind is the kind of a cross-validation of task whose members are members: a
// tracker's with fold checkpoints is the fold ensemble infer runs.
func crossValidationKind(task string, members []string) string {
	if task == dataset.TaskTracker && slices.Contains(members, "fold-0") {
		return KindEnsemble
	}
	return KindCrossValidation
}

// crossValidationPayload lists a cross-validation directory's report, settings and fold
// records, and its members: the subdirectories holding a checkpoint (sealed: checkpoint.json) or
// a run (its resume point, state/: an unfinished fold, which Seal and Open refuse).
func (d *describer) crossValidationPayload(m *Manifest) error {
	if err := d.need("the cross-validation's report, written last", CrossValidationFile); err != nil {
		return err
	}
	d.add(CrossValidationSettingsFile, ConfigFile)
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && strings.HasPrefix(name, "fold-") && strings.HasSuffix(name, ".json"):
			// The folds' records: --final --folds-from reads their best steps.
			d.add(name)
		case e.IsDir() && !strings.HasPrefix(name, "."):
			if d.has(name+"/"+ManifestFile) || isDir(d.path(name+"/"+StateDir)) {
				d.m.Members = append(d.m.Members, name)
			}
		}
	}
	if k := crossValidationKind(m.Task, d.m.Members); k != m.Kind {
		held := *m
		held.Kind = k
		return fmt.Errorf("%w: %s says %s, but the directory holds %s", ErrCheckpoint, filepath.Join(d.dir, ManifestFile), article(m.Name()), article(held.Name()))
	}
	return nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// describer lists (payload) or, for an older release's directory, describes (describe) the
// checkpoint in dir.
type describer struct {
	dir string
	m   *Manifest
}

func (d *describer) path(name string) string { return filepath.Join(d.dir, filepath.FromSlash(name)) }

func (d *describer) has(name string) bool {
	st, err := os.Stat(d.path(name))
	return err == nil && st.Mode().IsRegular()
}

// listed reports whether the file name is listed already.
func (d *describer) listed(name string) bool {
	return slices.ContainsFunc(d.m.Files, func(f File) bool { return f.Path == name })
}

// add lists the files names that exist and are not listed yet (a listed file is not looked up
// again: Open follows this walk at every load).
func (d *describer) add(names ...string) {
	for _, n := range names {
		if !d.listed(n) && d.has(n) {
			d.m.Files = append(d.m.Files, File{Path: n})
		}
	}
}

// need lists the files names, refusing the checkpoint when one is missing (why says what that
// means).
func (d *describer) need(why string, names ...string) error {
	for _, n := range names {
		if d.listed(n) {
			continue
		}
		if !d.has(n) {
			return fmt.Errorf("%w: %s has no %s (%s)", ErrCheckpoint, d.dir, n, why)
		}
		d.m.Files = append(d.m.Files, File{Path: n})
	}
	return nil
}

// tree lists every regular file under the subdirectory sub (adapter/, full/).
func (d *describer) tree(sub string) error {
	root := d.path(sub)
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(d.dir, p)
		if err == nil {
			d.m.Files = append(d.m.Files, File{Path: filepath.ToSlash(rel)})
		}
		return err
	})
}

func (d *describer) read(name string, v any) error {
	if err := atomicio.ReadJSON(d.path(name), v, false); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}

// bestWeights is best/model.safetensors, relative.
var bestWeights = BestDir + "/" + BestVariables

const unfinished = "training has not reached its first evaluation, or the directory is not a checkpoint"

// lexicalArchitecture is tracker.ArchLexicalContext, whose checkpoint holds LexicalFile instead of
// best/'s variables.
const lexicalArchitecture = config.TrackerLexicalContext

// runState is the part of the training loop's resume point (model/training's state/state.json)
// that tells a finished run from one that died.
type runState struct {
	Done bool `json:"done"`
}

// finished refuses a directory whose training loop has not finished (a run killed by a full disk
// or SIGKILL, or still running): its best variables are those of some step, not the run's result.
// A directory without state/ (the lexical-context tracker's) has no loop.
func (d *describer) finished() error {
	if _, err := os.Lstat(d.path(StateDir)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	name := StateDir + "/" + StateFile
	var st runState
	if err := atomicio.ReadJSON(d.path(name), &st, false); err != nil {
		return fmt.Errorf("%w: %s is not a finished run: its resume point is unreadable (%w)", ErrCheckpoint, d.dir, err)
	}
	if !st.Done {
		return fmt.Errorf("%w: %s is an unfinished run (its %s says done: false): rerun its tracksum-train command to finish it", ErrCheckpoint, d.dir, name)
	}
	return nil
}

// Names of a pretrained checkpoint that hf/peft and hf/snapshot own (peft.BaseFile,
// peft.AdapterDir, peft.FullDir, snapshot.TokenizerConfigFile); tests check they agree.
const (
	baseFile            = "base.json"
	adapterDir          = "adapter"
	fullDir             = "full"
	tokenizerConfigFile = snapshot.TokenizerConfigFile
)

package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// A checkpoint's manifest, checkpoint.json, says what the directory holds (its kind, task and
// backbone) and lists every file a loader reads, with its size and sha256. It is written last, by
// Seal, once every other file is in place: a directory without it is a run that has not finished,
// or a checkpoint of a release that did not write it (Migrate). Open reads it, checks the files
// and returns it; infer, serve, export and the cross-validation harness choose what to load from
// it instead of probing which metadata file exists.

// ManifestFile is the manifest's name.
const ManifestFile = "checkpoint.json"

// ManifestVersion is the format version of checkpoint.json this build writes and reads.
const ManifestVersion = 1

// Names of a cross-validation directory (experiment/cv) that the manifest lists: its report,
// which makes the directory a cross-validation, and its settings record.
const (
	CrossValidationFile         = "cv.json"
	CrossValidationSettingsFile = "cv-settings.json"
)

// ErrCheckpoint marks a directory that is not a checkpoint, not the kind of checkpoint wanted, or
// whose files do not match its manifest. Errors wrap it with the directory and the detail.
var ErrCheckpoint = errors.New("checkpoint")

// Kinds of checkpoint (Manifest.Kind).
const (
	// KindTracker and KindSummarizer are Track-then-Sum's two models.
	KindTracker    = "tracker"
	KindSummarizer = "summarizer"
	// KindSumThenTrack is a SUM-THEN-TRACK directory, or one of its two parts (Manifest.Part).
	KindSumThenTrack = "sum_then_track"
	// KindEndToEnd is an END-TO-END model.
	KindEndToEnd = "end_to_end"
	// KindEnsemble is a tracker cross-validation whose fold checkpoints infer runs as one tracker.
	KindEnsemble = "ensemble"
	// KindCrossValidation is any other cross-validation output (of the lexical baselines, the
	// summarizer, the pipeline): no model of its own, the record --final --folds-from reads.
	KindCrossValidation = "cross_validation"
)

// Backbones (Backbone.Type).
const (
	BackboneScratch  = "scratch"
	BackboneCausalLM = "causal_lm"
	BackboneEncoder  = "encoder"
)

// Manifest is checkpoint.json, and what Open returns.
type Manifest struct {
	FormatVersion int `json:"format_version"`
	// Kind is one of the Kind* constants.
	Kind string `json:"kind"`
	// Task is the tracksum-train --task that wrote the checkpoint (tracker, summarizer,
	// sum_then_track, end_to_end), or for a cross-validation its model (cv.json's "model").
	Task string `json:"task"`
	// Part names a part of SUM-THEN-TRACK: "summarizer" or "tracker" (VariantSummarizerDir,
	// VariantTrackerDir); empty otherwise.
	Part string `json:"part,omitempty"`
	// Backbone is what the model is built on.
	Backbone Backbone `json:"backbone"`
	// Files are the files a loader reads, relative to the directory, in name order.
	Files []File `json:"files"`
	// Members are the sub-checkpoints (SUM-THEN-TRACK's parts, a cross-validation's fold
	// checkpoints and component cross-validations), relative to the directory; each has its own
	// manifest, which Open opens too.
	Members []string `json:"members,omitempty"`
	// Base identifies the base snapshot of a pretrained backbone (base.json's record).
	Base *Base `json:"base,omitempty"`

	// Dir is the directory the manifest was opened from.
	Dir string `json:"-"`
	// Migrated is set by Open for a directory without checkpoint.json (an older release's): its
	// kind was inferred from its files and nothing was verified. Callers print MigrateHint.
	Migrated bool `json:"-"`
}

// Backbone is what a model is built on.
type Backbone struct {
	// Type is BackboneScratch, BackboneCausalLM or BackboneEncoder.
	Type string `json:"type"`
	// Architecture is the from-scratch tracker's tracker.architecture, or the pretrained base's
	// model_type.
	Architecture string `json:"architecture,omitempty"`
	// Head is a pretrained tracker's head (generative, lm_cls, encoder_cls).
	Head string `json:"head,omitempty"`
	// Quantization is how a pretrained base was held in training, pretrained.json's: "nf4"
	// (QLoRA), or empty for its own dtype. Inference loads the base the same way.
	Quantization string `json:"quantization,omitempty"`
}

// File is one file of a checkpoint.
type File struct {
	// Path is relative to the checkpoint directory, slash-separated.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Base is the identity of a pretrained backbone's snapshot, as base.json records it (hf/peft's
// BaseRef): its directory, model_type, the digest of its weights and of the files that shape the
// model (config.json, tokenizer files, chat template).
type Base struct {
	Dir           string            `json:"dir"`
	ModelType     string            `json:"model_type"`
	WeightsSHA256 string            `json:"weights_sha256"`
	WeightFiles   []string          `json:"weight_files"`
	Quantization  string            `json:"quantization,omitempty"`
	Files         map[string]string `json:"files,omitempty"`
}

// Name says what the checkpoint is, for messages: "tracker", "sum_then_track (its summarizer
// part)", "cross-validation of tracker", ...
func (m *Manifest) Name() string {
	switch {
	case m.Part != "":
		return fmt.Sprintf("%s (its %s part)", m.Kind, m.Part)
	case m.Kind == KindEnsemble:
		return "tracker cross-validation (fold ensemble)"
	case m.Kind == KindCrossValidation:
		return m.Task + " cross-validation"
	}
	if m.Pretrained() {
		return "pretrained " + m.Kind
	}
	return m.Kind
}

// Pretrained reports whether the model is a fine-tuned pretrained one (tracksum-train
// --pretrained).
func (m *Manifest) Pretrained() bool {
	return m.Backbone.Type == BackboneCausalLM || m.Backbone.Type == BackboneEncoder
}

// Want checks that m is of one of kinds (and, for a SUM-THEN-TRACK part, that part when not
// empty): the error, for flag (e.g. "--summarizer"), names the kind found and the kind wanted.
func (m *Manifest) Want(flag string, kinds ...string) error {
	if slices.Contains(kinds, m.Kind) {
		return nil
	}
	want := make([]string, len(kinds))
	for i, k := range kinds {
		want[i] = article(kindWord(k))
	}
	return m.Refuse(flag, strings.Join(want, " or ")+m.runHint())
}

// runHint says how tracksum-infer runs a variant's checkpoint, which no Track-then-Sum flag takes.
func (m *Manifest) runHint() string {
	switch {
	case m.Part != "":
		return " (tracksum-infer --method stt runs the sum_then_track directory holding it)"
	case m.Kind == KindSumThenTrack:
		return " (tracksum-infer --method stt --model runs it)"
	case m.Kind == KindEndToEnd:
		return " (tracksum-infer --method ete --model runs it)"
	}
	return ""
}

// Refuse is the error of a checkpoint that flag does not take, naming the kind found and what
// flag wants: "checkpoints/tracker is a tracker checkpoint; --summarizer wants a summarizer".
func (m *Manifest) Refuse(flag, wants string) error {
	return fmt.Errorf("%w: %s is %s checkpoint; %s wants %s", ErrCheckpoint, m.Dir, article(m.Name()), flag, wants)
}

// kindWord names a kind in a message.
func kindWord(k string) string {
	switch k {
	case KindEnsemble:
		return "tracker cross-validation (fold ensemble)"
	case KindCrossValidation:
		return "cross-validation"
	}
	return k
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// MigrateCommand is the command that writes checkpoint.json into the checkpoints of an older
// release.
const MigrateCommand = "tracksum-train --migrate"

// MigrateHint is the warning for a checkpoint opened without its manifest (Manifest.Migrated).
func MigrateHint(dir string) string {
	return fmt.Sprintf("%s has no %s (written by an older release): its kind was inferred from its files and they were not verified; `%s %s` writes it",
		dir, ManifestFile, MigrateCommand, dir)
}

// OpenKind is Open followed by Want: the one call with which a command opens the checkpoint of a
// flag. A migrated checkpoint's warning goes to log (when not nil).
func OpenKind(ctx context.Context, dir, flag string, log io.Writer, kinds ...string) (*Manifest, error) {
	m, err := Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if m.Migrated && log != nil {
		fmt.Fprintf(log, "warning: %s\n", MigrateHint(dir))
	}
	return m, m.Want(flag, kinds...)
}

// Open reads dir's manifest, checks that it lists every file and member the directory's kind
// needs (Describe), that every file it lists has its recorded size and sha256, that the fold
// checkpoints of a cross-validation are those its fold records name (checkFolds), and opens its
// members the same way; it returns the manifest. A directory without checkpoint.json is described
// from its files (Describe) and returned with Migrated set, unverified; one that is no checkpoint
// is refused. Errors wrap ErrCheckpoint and name the directory or the file. The walk stops when
// ctx is cancelled.
func Open(ctx context.Context, dir string) (*Manifest, error) {
	return open(ctx, dir, 0)
}

// maxDepth bounds how deep members nest: a pipeline cross-validation holds component
// cross-validations, which hold fold checkpoints (depth 2); a manifest claiming deeper members is
// refused rather than walked.
const maxDepth = 4

// open is Open of dir at depth (0 for the directory asked for; members are one deeper and must be
// sealed: Seal seals a directory's members before it).
func open(ctx context.Context, dir string, depth int) (*Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, dir, err)
	}
	path := filepath.Join(dir, ManifestFile)
	var m Manifest
	if err := atomicio.ReadJSON(path, &m, true); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
		if depth > 0 {
			return nil, fmt.Errorf("%w: %s has no %s, but its parent's manifest lists it as a member (removed or replaced since it was sealed)", ErrCheckpoint, dir, ManifestFile)
		}
		d, derr := Describe(dir)
		if derr != nil {
			return nil, derr
		}
		if err := checkFolds(ctx, d); err != nil {
			return nil, err
		}
		d.Migrated = true
		return d, nil
	}
	m.Dir = dir
	if m.FormatVersion != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this build reads %d", ErrCheckpoint, path, m.FormatVersion, ManifestVersion)
	}
	if m.Kind == "" || m.Task == "" || m.Backbone.Type == "" {
		return nil, fmt.Errorf("%w: %s: kind, task and backbone must be set", ErrCheckpoint, path)
	}
	if err := checkMembers(&m, path, depth); err != nil {
		return nil, err
	}
	if err := complete(&m, path); err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, dir, err)
		}
		if err := verify(dir, f); err != nil {
			return nil, err
		}
	}
	// Members first: a changed file of a fold is best named against its own manifest;
	// checkFolds then catches a fold replaced by another sealed checkpoint.
	for _, sub := range m.Members {
		if _, err := open(ctx, filepath.Join(dir, sub), depth+1); err != nil {
			return nil, err
		}
	}
	if err := checkFolds(ctx, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// checkMembers refuses a manifest whose members are not distinct real subdirectories of its
// directory, each one level below it (a member "." or a symlink would make the walk revisit a
// directory, or leave the checkpoint), or that nest deeper than maxDepth.
func checkMembers(m *Manifest, path string, depth int) error {
	if len(m.Members) > 0 && depth >= maxDepth {
		return fmt.Errorf("%w: %s: members nested more than %d levels deep", ErrCheckpoint, path, maxDepth)
	}
	seen := map[string]bool{}
	for _, sub := range m.Members {
		if !local(sub) || strings.ContainsAny(sub, `/\`) || sub == "." || seen[sub] {
			return fmt.Errorf("%w: %s: member %q is not a distinct subdirectory of the checkpoint", ErrCheckpoint, path, sub)
		}
		seen[sub] = true
		st, err := os.Lstat(filepath.Join(m.Dir, sub))
		if err != nil {
			return fmt.Errorf("%w: %s: member %q: %w", ErrCheckpoint, path, sub, err)
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s: member %q is a symbolic link, not a real subdirectory of the checkpoint", ErrCheckpoint, path, sub)
		case !st.IsDir():
			return fmt.Errorf("%w: %s: member %q is not a directory", ErrCheckpoint, path, sub)
		}
	}
	return nil
}

// complete checks m against what its directory holds now (Describe, which hashes nothing): the
// same kind, every file a loader of that kind reads listed, and the same members. A manifest that
// leaves a file out would let that file change unnoticed.
func complete(m *Manifest, path string) error {
	d, err := Describe(m.Dir)
	if err != nil {
		return err
	}
	if d.Kind != m.Kind || d.Task != m.Task || d.Part != m.Part {
		return fmt.Errorf("%w: %s says %s, but the directory holds %s", ErrCheckpoint, path, article(m.Name()), article(d.Name()))
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Path] = true
	}
	for _, f := range d.Files {
		if !listed[f.Path] {
			return fmt.Errorf("%w: %s does not list %s, which a loader reads", ErrCheckpoint, path, f.Path)
		}
	}
	if !slices.Equal(d.Members, m.Members) {
		return fmt.Errorf("%w: %s lists members %v, but the directory holds %v", ErrCheckpoint, path, m.Members, d.Members)
	}
	return nil
}

// foldRecord is the part of a cross-validation's fold record (experiment/cv's fold-K.json) that
// binds the fold to its checkpoint fold-K/: the sha256 of the files infer reads there.
type foldRecord struct {
	Checkpoint map[string]string `json:"checkpoint_sha256"`
}

// checkFolds checks that each fold checkpoint fold-K of the cross-validation m holds the files its
// record fold-K.json names, with their sha256: a fold checkpoint replaced by another (or changed
// under a removed manifest) no longer matches the record its scores were made with. Records of
// earlier builds, without sums, bind nothing.
func checkFolds(ctx context.Context, m *Manifest) error {
	if m.Kind != KindEnsemble && m.Kind != KindCrossValidation {
		return nil
	}
	for _, sub := range m.Members {
		name := sub + ".json"
		if !strings.HasPrefix(sub, "fold-") || !slices.ContainsFunc(m.Files, func(f File) bool { return f.Path == name }) {
			continue
		}
		var rec foldRecord
		if err := atomicio.ReadJSON(filepath.Join(m.Dir, name), &rec, false); err != nil {
			return fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
		for _, p := range slices.Sorted(maps.Keys(rec.Checkpoint)) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCheckpoint, m.Dir, err)
			}
			if !local(p) {
				return fmt.Errorf("%w: %s: file %q is not inside the fold checkpoint", ErrCheckpoint, filepath.Join(m.Dir, name), p)
			}
			fp := filepath.Join(m.Dir, sub, filepath.FromSlash(p))
			st, err := os.Stat(fp)
			if err != nil {
				return fmt.Errorf("%w: %s, which %s records, is unreadable: %w", ErrCheckpoint, fp, name, err)
			}
			sum, err := digest(fp, st.Size())
			if err != nil {
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
			if sum != rec.Checkpoint[p] {
				return fmt.Errorf("%w: %s does not match the sha256 %s records (the fold checkpoint was replaced or changed after its fold was scored)", ErrCheckpoint, fp, name)
			}
		}
	}
	return nil
}

// local reports whether a manifest's relative path stays inside its directory.
func local(p string) bool { return p != "" && filepath.IsLocal(filepath.FromSlash(p)) }

// bigFile is the size from which a file's digest is taken through hf/snapshot's digest cache
// (keyed by path, size, modification time and inode) rather than recomputed at every open: a
// fully fine-tuned model's weights are gigabytes; the files of a from-scratch checkpoint hash in
// milliseconds, and hashing them always also catches a corruption that kept the file's mtime.
const bigFile = 256 << 20

// verify checks one listed file of dir: present, of its size and sha256.
func verify(dir string, f File) error {
	if !local(f.Path) {
		return fmt.Errorf("%w: %s: file %q is not inside the checkpoint", ErrCheckpoint, filepath.Join(dir, ManifestFile), f.Path)
	}
	path := filepath.Join(dir, filepath.FromSlash(f.Path))
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s is missing (%s lists it)", ErrCheckpoint, path, ManifestFile)
		}
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if st.Size() != f.Size {
		return fmt.Errorf("%w: %s has %d bytes, %s records %d (changed or truncated since the checkpoint was written)", ErrCheckpoint, path, st.Size(), ManifestFile, f.Size)
	}
	sum, err := digest(path, st.Size())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if sum != f.SHA256 {
		return fmt.Errorf("%w: %s has sha256 %s, %s records %s (corrupt or changed since the checkpoint was written)", ErrCheckpoint, path, sum, ManifestFile, f.SHA256)
	}
	return nil
}

// digest returns the hex sha256 of the file at path (of size bytes).
func digest(path string, size int64) (string, error) {
	if size >= bigFile {
		return snapshot.FileSHA256(path)
	}
	sum, _, err := atomicio.SHA256(path)
	return sum, err
}

// Unseal removes dir's manifest: called when a run starts writing into dir, so that a directory
// whose files are being replaced never claims to be a finished checkpoint.
func Unseal(dir string) error {
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Seal writes dir's manifest, atomically: its kind from its files (Describe) and the size and
// sha256 of every file listed. Every checkpoint-producing path calls it last. A member without a
// manifest (a fold checkpoint an older release trained and a rerun reused) is sealed first; a
// cross-validation whose fold checkpoints are not those its fold records name is refused
// (checkFolds).
func Seal(dir string) (*Manifest, error) { return seal(context.Background(), dir) }

func seal(ctx context.Context, dir string) (*Manifest, error) {
	m, err := Describe(dir)
	if err != nil {
		return nil, err
	}
	if err := checkFolds(ctx, m); err != nil {
		return nil, err
	}
	for _, sub := range m.Members {
		sd := filepath.Join(dir, filepath.FromSlash(sub))
		if _, err := os.Stat(filepath.Join(sd, ManifestFile)); errors.Is(err, fs.ErrNotExist) {
			if _, err := seal(ctx, sd); err != nil {
				return nil, err
			}
		}
	}
	for i, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, dir, err)
		}
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		sum, err := digest(path, st.Size())
		if err != nil {
			return nil, err
		}
		m.Files[i].Size, m.Files[i].SHA256 = st.Size(), sum
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, ManifestFile), m); err != nil {
		return nil, err
	}
	return m, nil
}

// Migrate writes the manifest of a checkpoint written by a release without them (its members'
// first), and returns it; a directory that already has one is opened (verified) and left alone
// (wrote false). A directory whose kind its files do not settle, or an unfinished run (Describe),
// is refused. It stops when ctx is cancelled.
func Migrate(ctx context.Context, dir string) (m *Manifest, wrote bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		m, err := Open(ctx, dir)
		return m, false, err
	}
	m, err = seal(ctx, dir)
	return m, err == nil, err
}

// The metadata Describe reads, leniently: the fields that tell the kind apart.
type (
	trackerMeta struct {
		Architecture string `json:"architecture"`
	}
	pretrainedMeta struct {
		Task      string `json:"task"`
		Head      string `json:"head"`
		ModelType string `json:"model_type"`
		Variant   string `json:"variant"`
		// Quantization is Meta.Quantization: "nf4" or empty.
		Quantization string `json:"quantization"`
	}
	variantMeta struct {
		Variant    string `json:"variant"`
		Part       string `json:"part"`
		Pretrained bool   `json:"pretrained"`
	}
	cvReport struct {
		Model string `json:"model"`
		K     int    `json:"k"`
	}
)

// lexicalArchitecture is tracker.ArchLexicalContext, whose checkpoint holds LexicalFile instead of
// best/'s variables.
const lexicalArchitecture = config.TrackerLexicalContext

// Describe tells what dir holds from the files the current and earlier releases write (without
// reading checkpoint.json, hashing nothing): the one place that maps metadata files to a kind. A
// directory with none of them, with two models' metadata, or an unfinished run is refused with
// ErrCheckpoint. Files lists the paths only (Seal hashes them).
func Describe(dir string) (*Manifest, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrCheckpoint, dir)
	}
	d := &describer{dir: dir, m: &Manifest{FormatVersion: ManifestVersion, Dir: dir}}
	switch {
	case d.has(CrossValidationFile):
		err = d.crossValidation()
	case d.has(VariantFile):
		err = d.variant()
	default:
		err = d.model("")
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(d.m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return d.m, nil
}

// describer builds the manifest of dir.
type describer struct {
	dir string
	m   *Manifest
}

func (d *describer) path(name string) string { return filepath.Join(d.dir, filepath.FromSlash(name)) }

func (d *describer) has(name string) bool {
	st, err := os.Stat(d.path(name))
	return err == nil && st.Mode().IsRegular()
}

// add lists the files names that exist.
func (d *describer) add(names ...string) {
	for _, n := range names {
		if d.has(n) {
			d.m.Files = append(d.m.Files, File{Path: n})
		}
	}
}

// need lists the files names, refusing the checkpoint when one is missing (why says what that
// means).
func (d *describer) need(why string, names ...string) error {
	for _, n := range names {
		if !d.has(n) {
			return fmt.Errorf("%w: %s has no %s (%s)", ErrCheckpoint, d.dir, n, why)
		}
	}
	d.add(names...)
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

// model describes the checkpoint of one model in dir; v is its variant.json's variant ("" when it
// has none).
func (d *describer) model(v string) error {
	var found []string
	for _, n := range []string{HyperparamsFile, SummarizerFile, PretrainedFile} {
		if d.has(n) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("%w: %s is not a checkpoint: it has none of %s, %s, %s, %s, %s, %s", ErrCheckpoint, d.dir,
			ManifestFile, HyperparamsFile, SummarizerFile, PretrainedFile, VariantFile, CrossValidationFile)
	case 1:
	default:
		return fmt.Errorf("%w: %s is ambiguous: it holds both %s and %s (two models' metadata); which model it is cannot be told", ErrCheckpoint, d.dir, found[0], found[1])
	}
	if err := d.finished(); err != nil {
		return err
	}
	m := d.m
	m.Backbone.Type = BackboneScratch
	switch found[0] {
	case HyperparamsFile:
		var hp trackerMeta
		if err := d.read(HyperparamsFile, &hp); err != nil {
			return err
		}
		m.Kind, m.Task, m.Backbone.Architecture = KindTracker, dataset.TaskTracker, hp.Architecture
		if hp.Architecture == lexicalArchitecture {
			if err := d.need("the lexical-context tracker's fit is written at the end of training", LexicalFile); err != nil {
				return err
			}
		} else if err := d.need(unfinished, bestWeights); err != nil {
			return err
		}
		d.add(ContextFile)
	case SummarizerFile:
		m.Kind, m.Task = KindSummarizer, dataset.TaskSummarizer
		if err := d.need(unfinished, bestWeights); err != nil {
			return err
		}
	case PretrainedFile:
		var pm pretrainedMeta
		if err := d.read(PretrainedFile, &pm); err != nil {
			return err
		}
		if pm.Task != dataset.TaskTracker && pm.Task != dataset.TaskSummarizer {
			return fmt.Errorf("%w: %s: task %q, want %s or %s", ErrCheckpoint, d.path(PretrainedFile), pm.Task, dataset.TaskTracker, dataset.TaskSummarizer)
		}
		if pm.Variant != v {
			return fmt.Errorf("%w: %s: variant %q, but %s says %q (an unfinished run?)", ErrCheckpoint, d.path(PretrainedFile), pm.Variant, VariantFile, v)
		}
		m.Kind, m.Task = pm.Task, pm.Task
		m.Backbone = Backbone{Type: BackboneCausalLM, Architecture: pm.ModelType, Head: pm.Head, Quantization: pm.Quantization}
		if pm.Head == config.HeadEncoderCLS {
			m.Backbone.Type = BackboneEncoder
		}
		if err := d.need(unfinished, bestWeights, baseFile); err != nil {
			return err
		}
		var b Base
		if err := d.read(baseFile, &b); err != nil {
			return err
		}
		m.Base = &b
		d.add(tokenizerConfigFile)
		for _, sub := range []string{adapterDir, fullDir} {
			if err := d.tree(sub); err != nil {
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
		}
	}
	d.add(TokenizerFile, ConfigFile, PretrainedFile, HyperparamsFile, SummarizerFile)
	return nil
}

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

// variant describes a Table 6 variant's directory (variant.json).
func (d *describer) variant() error {
	var vm variantMeta
	if err := d.read(VariantFile, &vm); err != nil {
		return err
	}
	if vm.Variant != KindSumThenTrack && vm.Variant != KindEndToEnd {
		return fmt.Errorf("%w: %s: variant %q, want %s or %s", ErrCheckpoint, d.path(VariantFile), vm.Variant, KindSumThenTrack, KindEndToEnd)
	}
	if vm.Variant == KindSumThenTrack && vm.Part == "" {
		// The directory of the two parts: its backbone is its summarizer's.
		d.m.Kind, d.m.Task = KindSumThenTrack, KindSumThenTrack
		d.add(VariantFile)
		for _, part := range []string{VariantSummarizerDir, VariantTrackerDir} {
			sub, err := Describe(d.path(part))
			if err != nil {
				return fmt.Errorf("%w: %s: its %s part: %w", ErrCheckpoint, d.dir, part, err)
			}
			if sub.Kind != KindSumThenTrack || sub.Part != part {
				return fmt.Errorf("%w: %s: %s is %s checkpoint, not the %s part of sum_then_track", ErrCheckpoint, d.dir, part, article(sub.Name()), part)
			}
			if part == VariantSummarizerDir {
				d.m.Backbone = sub.Backbone
			}
			d.m.Members = append(d.m.Members, part)
		}
		return nil
	}
	inner := ""
	if vm.Pretrained {
		inner = vm.Variant
	}
	if err := d.model(inner); err != nil {
		return err
	}
	if d.m.Pretrained() != vm.Pretrained {
		return fmt.Errorf("%w: %s: %s says pretrained %v, but the model's metadata says otherwise", ErrCheckpoint, d.dir, VariantFile, vm.Pretrained)
	}
	task := d.m.Task
	d.m.Kind, d.m.Task, d.m.Part = vm.Variant, vm.Variant, vm.Part
	want := dataset.TaskSummarizer
	if vm.Part == VariantTrackerDir {
		want = dataset.TaskTracker
	}
	if task != want {
		return fmt.Errorf("%w: %s: %s names %s, but the directory holds a %s", ErrCheckpoint, d.dir, VariantFile, d.m.Name(), task)
	}
	d.add(VariantFile)
	return nil
}

// crossValidation describes a cross-validation directory (cv.json).
func (d *describer) crossValidation() error {
	var rep cvReport
	if err := d.read(CrossValidationFile, &rep); err != nil {
		return err
	}
	if rep.Model == "" {
		return fmt.Errorf("%w: %s has no model", ErrCheckpoint, d.path(CrossValidationFile))
	}
	d.m.Kind, d.m.Task, d.m.Backbone.Type = KindCrossValidation, rep.Model, BackboneScratch
	d.add(CrossValidationFile, CrossValidationSettingsFile, ConfigFile)
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
			sub := filepath.Join(d.dir, name)
			if !holdsRun(sub) {
				continue
			}
			if _, err := Describe(sub); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCheckpoint, d.dir, err)
			}
			d.m.Members = append(d.m.Members, name)
		}
	}
	if rep.Model == KindTracker && slices.Contains(d.m.Members, "fold-0") {
		d.m.Kind = KindEnsemble
	}
	return nil
}

// holdsRun reports whether dir holds a checkpoint or a cross-validation (sealed or not).
func holdsRun(dir string) bool {
	for _, n := range []string{ManifestFile, HyperparamsFile, SummarizerFile, PretrainedFile, VariantFile, CrossValidationFile} {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// String renders m as its JSON, for logs and tests.
func (m *Manifest) String() string {
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

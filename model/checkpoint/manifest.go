package checkpoint

import (
	"context"
	"crypto/sha256"
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

	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// A checkpoint's manifest, checkpoint.json, says what the directory holds (its kind, task,
// backbone and base, and the settings inference needs: threshold, decoding, aspect set), as the
// model stated them when it sealed the directory (Seal), and lists every file a loader reads, with
// its size and sha256. It is written last, once every other file is in place: a directory without
// it is a run that has not finished, or a checkpoint of a release that did not write it (Migrate,
// the one place that knows those layouts). Open reads it, checks the files and returns it; infer,
// serve, export and the cross-validation harness choose what to load from it instead of probing
// which metadata file exists.

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
	// Settings are what inference needs besides the weights, as the model recorded them.
	Settings Settings `json:"settings,omitzero"`

	// Dir is the directory the manifest was opened from.
	Dir string `json:"-"`
	// Migrated is set by Open for a directory without checkpoint.json (an older release's): its
	// kind was inferred from its files and nothing was verified. Callers print MigrateHint.
	Migrated bool `json:"-"`
	// held are the bytes of the small files Open verified (heldLimit), by path, which ReadFile
	// returns: a loader parses what was hashed instead of reading the file again.
	held map[string][]byte
	// members are the members' manifests Open opened, by Members name (Member): an opener loads
	// a fold or a part from them, its files not read again.
	members map[string]*Manifest
}

// Member returns the manifest of the member name (one of Members) as Open verified it, with the
// bytes of its small files; nil for a manifest Open did not verify (Read's, a migrated one's).
func (m *Manifest) Member(name string) *Manifest { return m.members[name] }

// heldLimit is the size up to which Open keeps a verified file's bytes for the loader
// (ReadFile): the metadata, tokenizer and context files, not the weights.
const heldLimit = 16 << 20

// ReadFile returns the file name (relative, slash-separated) of the checkpoint: the bytes Open
// verified when it holds them, else the file as it is now (a file Open did not hash, or too large
// to keep). The caller must not modify the bytes. A missing file is the *fs.PathError of the read.
func (m *Manifest) ReadFile(name string) ([]byte, error) {
	if b, ok := m.held[name]; ok {
		return b, nil
	}
	return DirFiles(m.Dir).ReadFile(name)
}

// Reader reads the files of a checkpoint by name (relative, slash-separated): a Manifest (the
// bytes Open verified) or DirFiles (the directory as it is).
type Reader = atomicio.Files

// DirFiles reads the files of the checkpoint directory it names, unverified (a loader called with
// a directory rather than an opened manifest).
type DirFiles = atomicio.DirFiles

// Identity is what a model states about its checkpoint when it seals it (Seal): everything of the
// manifest but the files, which Seal lists and hashes.
type Identity struct {
	// Kind is one of the Kind* constants; Task and Part as Manifest's.
	Kind, Task, Part string
	Backbone         Backbone
	// Base is a pretrained backbone's snapshot (required for one).
	Base     *Base
	Settings Settings
}

// As returns id as the model of a Table 6 variant: kind (KindSumThenTrack, KindEndToEnd) and, for
// a part of SUM-THEN-TRACK, part (VariantSummarizerDir, VariantTrackerDir; "" for the directory
// of both).
func (id Identity) As(kind, part string) Identity {
	id.Kind, id.Task, id.Part = kind, kind, part
	return id
}

// Settings are what inference needs from a checkpoint besides its weights. Checkpoints sealed by
// an earlier build of this format have none (zero): their loaders' metadata holds them.
type Settings struct {
	// AspectSet is the aspect set the model was trained on.
	AspectSet string `json:"aspect_set,omitempty"`
	// Threshold is a tracker's decision threshold (tracker.threshold): infer and serve use it when
	// neither the command line nor infer.threshold sets one (infer.Threshold).
	Threshold float64 `json:"threshold,omitempty"`
	// Decoding is a summarizer's decoding as trained (nil for a tracker).
	Decoding *Decoding `json:"decoding,omitempty"`
}

// Decoding is a summarizer's decoding settings as its checkpoint records them; infer.decoding
// overrides each.
type Decoding struct {
	BeamSize      int     `json:"beam_size"`
	MaxLen        int     `json:"max_len"`
	LengthPenalty float64 `json:"length_penalty"`
	NoRepeatNgram int     `json:"no_repeat_ngram"`
	// Temperature > 0 samples (a pretrained summarizer trained with summarizer.temperature).
	Temperature float64 `json:"temperature,omitempty"`
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
// needs (payload), that every file it lists has its recorded size and sha256, that the fold
// checkpoints of a cross-validation are those its fold records name (checkFolds), and opens its
// members the same way; it returns the manifest. A directory without checkpoint.json (an older
// release's) is described from its files as Migrate would and returned with Migrated set,
// unverified; one that is no checkpoint is refused. Errors wrap ErrCheckpoint and name the
// directory or the file. The walk stops when ctx is cancelled.
func Open(ctx context.Context, dir string) (*Manifest, error) {
	return open(ctx, dir, 0)
}

// Read returns what dir holds as its manifest says, without verifying its files (Open does), for
// a command that decides what to do with a directory before loading it (tracksum-serve's mode). A
// directory without a manifest (an older release's) is described as Migrate would, with Migrated
// set; one that is no checkpoint is refused with ErrCheckpoint.
func Read(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	var m Manifest
	if err := atomicio.ReadJSON(path, &m, true); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
		d, err := describe(dir)
		if err != nil {
			return nil, err
		}
		d.Migrated = true
		return d, nil
	}
	if m.FormatVersion != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this build reads %d", ErrCheckpoint, path, m.FormatVersion, ManifestVersion)
	}
	m.Dir = dir
	return &m, nil
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
		d, derr := describe(dir)
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
	if err := complete(&m); err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, dir, err)
		}
		// Every manifest opened, the members' too (Member), keeps its small files' bytes for its
		// loader (ReadFile): metadata and tokenizers, not the weights.
		if f.Size <= heldLimit && !strings.HasSuffix(f.Path, ".safetensors") {
			b, err := verifyRead(dir, f)
			if err != nil {
				return nil, err
			}
			if m.held == nil {
				m.held = map[string][]byte{}
			}
			m.held[f.Path] = b
			continue
		}
		if err := verify(dir, f); err != nil {
			return nil, err
		}
	}
	// Members first: a changed file of a fold is best named against its own manifest;
	// checkFolds then catches a fold replaced by another sealed checkpoint.
	for _, sub := range m.Members {
		mm, err := open(ctx, filepath.Join(dir, sub), depth+1)
		if err != nil {
			return nil, err
		}
		if m.members == nil {
			m.members = map[string]*Manifest{}
		}
		m.members[sub] = mm
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

// complete checks m against what its directory holds now (payload, which hashes nothing): every
// file a loader of m's kind reads listed, and the same members. A manifest that leaves a file out
// would let that file change unnoticed.
func complete(m *Manifest) error {
	files, members, err := payload(m.Dir, m)
	if err != nil {
		return err
	}
	path := filepath.Join(m.Dir, ManifestFile)
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Path] = true
	}
	for _, f := range files {
		if !listed[f.Path] {
			return fmt.Errorf("%w: %s does not list %s, which a loader reads", ErrCheckpoint, path, f.Path)
		}
	}
	if !slices.Equal(members, m.Members) {
		return fmt.Errorf("%w: %s lists members %v, but the directory holds %v", ErrCheckpoint, path, m.Members, members)
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
		if err := readJSON(m, name, &rec); err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(rec.Checkpoint)) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCheckpoint, m.Dir, err)
			}
			if !local(p) {
				return fmt.Errorf("%w: %s: file %q is not inside the fold checkpoint", ErrCheckpoint, filepath.Join(m.Dir, name), p)
			}
			fp := filepath.Join(m.Dir, sub, filepath.FromSlash(p))
			sum, err := foldSum(m.Member(sub), fp, p)
			if err != nil {
				return fmt.Errorf("%w: %s, which %s records, is unreadable: %w", ErrCheckpoint, fp, name, err)
			}
			if sum != rec.Checkpoint[p] {
				return fmt.Errorf("%w: %s does not match the sha256 %s records (the fold checkpoint was replaced or changed after its fold was scored)", ErrCheckpoint, fp, name)
			}
		}
	}
	return nil
}

// readJSON decodes the file name of m (Manifest.ReadFile: the bytes Open verified when it holds
// them), its errors naming the file.
func readJSON(m *Manifest, name string, v any) error {
	if err := atomicio.ReadJSONFrom(m, m.Dir, name, v, false); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}

// OpenMember returns the manifest of the member name of m: as Open verified it with m's
// (Member), or, for a checkpoint whose members Open did not walk (a migrated one), opened now.
func (m *Manifest) OpenMember(ctx context.Context, name string) (*Manifest, error) {
	if sub := m.Member(name); sub != nil {
		return sub, nil
	}
	return Open(ctx, filepath.Join(m.Dir, filepath.FromSlash(name)))
}

// foldSum is the sha256 of the file p of a fold checkpoint (path fp): the sum its manifest fold
// records when Open verified it there (the file is not hashed twice), else the file's own.
func foldSum(fold *Manifest, fp, p string) (string, error) {
	if fold != nil {
		if i := slices.IndexFunc(fold.Files, func(f File) bool { return f.Path == p }); i >= 0 {
			return fold.Files[i].SHA256, nil
		}
	}
	st, err := os.Stat(fp)
	if err != nil {
		return "", err
	}
	return digest(fp, st.Size())
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

// verifyRead is verify of a small file (f.Size <= heldLimit), which it reads whole and returns:
// opened once, its size checked on the open file before it is read.
func verifyRead(dir string, f File) ([]byte, error) {
	if !local(f.Path) {
		return nil, fmt.Errorf("%w: %s: file %q is not inside the checkpoint", ErrCheckpoint, filepath.Join(dir, ManifestFile), f.Path)
	}
	path := filepath.Join(dir, filepath.FromSlash(f.Path))
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is missing (%s lists it)", ErrCheckpoint, path, ManifestFile)
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if st.Size() != f.Size {
		return nil, fmt.Errorf("%w: %s has %d bytes, %s records %d (changed or truncated since the checkpoint was written)", ErrCheckpoint, path, st.Size(), ManifestFile, f.Size)
	}
	b := make([]byte, f.Size)
	if _, err := io.ReadFull(fh, b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(b)); sum != f.SHA256 {
		return nil, fmt.Errorf("%w: %s has sha256 %s, %s records %s (corrupt or changed since the checkpoint was written)", ErrCheckpoint, path, sum, ManifestFile, f.SHA256)
	}
	return b, nil
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

// Seal writes dir's manifest, atomically: the identity the model states (id) and the size and
// sha256 of every file a loader of its kind reads (payload). Every checkpoint-producing path calls
// it last, after sealing the directory's members (SUM-THEN-TRACK's parts, a cross-validation's
// fold checkpoints): a member without a manifest is refused, as is a cross-validation whose fold
// checkpoints are not those its fold records name (checkFolds).
func Seal(dir string, id Identity) (*Manifest, error) { return seal(context.Background(), dir, id) }

func seal(ctx context.Context, dir string, id Identity) (*Manifest, error) {
	m := &Manifest{FormatVersion: ManifestVersion, Kind: id.Kind, Task: id.Task, Part: id.Part, Backbone: id.Backbone,
		Base: id.Base, Settings: id.Settings, Dir: dir}
	switch {
	case m.Kind == "" || m.Task == "" || m.Backbone.Type == "":
		return nil, fmt.Errorf("%w: sealing %s: kind, task and backbone must be stated", ErrCheckpoint, dir)
	case m.Pretrained() && m.Base == nil:
		return nil, fmt.Errorf("%w: sealing %s: a pretrained backbone's checkpoint states its base", ErrCheckpoint, dir)
	}
	var err error
	if m.Files, m.Members, err = payload(dir, m); err != nil {
		return nil, err
	}
	if err := sealKept(ctx, dir, m); err != nil {
		return nil, err
	}
	for _, sub := range m.Members {
		if _, err := os.Stat(filepath.Join(dir, sub, ManifestFile)); err != nil {
			return nil, fmt.Errorf("%w: sealing %s: its member %s is not sealed (%w): seal it first", ErrCheckpoint, dir, sub, err)
		}
	}
	if err := checkFolds(ctx, m); err != nil {
		return nil, err
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

// KeptDir holds the evaluation checkpoints train.keep_checkpoints keeps beside best/ (the
// training loop's CheckpointsDir): one step-NNNNNNN/ directory per evaluation, holding that
// evaluation's variables and dev metrics in best/ as the checkpoint's own best/.
const KeptDir = "checkpoints"

// sealKept makes each kept evaluation checkpoint of the model checkpoint dir (KeptDir/step-N) a
// checkpoint of its own, which infer and serve open as they open dir: the files of m a loader
// reads besides best/ (metadata, tokenizer, config, context rescorer, base record) are copied in,
// and it is sealed with m's identity. The interop layouts adapter/ and full/ hold best/'s weights,
// not the step's, and are left out (a loader reads best/; tracksum-export wants dir itself).
func sealKept(ctx context.Context, dir string, m *Manifest) error {
	if m.Kind == KindCrossValidation || m.Kind == KindEnsemble || (m.Kind == KindSumThenTrack && m.Part == "") {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, KeptDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "step-") {
			continue
		}
		step := filepath.Join(dir, KeptDir, e.Name())
		if err := keptLayout(step); err != nil {
			return err
		}
		for _, f := range m.Files {
			if strings.HasPrefix(f.Path, BestDir+"/") || strings.HasPrefix(f.Path, adapterDir+"/") || strings.HasPrefix(f.Path, fullDir+"/") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
			if err := atomicio.WriteFile(filepath.Join(step, filepath.FromSlash(f.Path)), b, 0o644); err != nil {
				return fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
		}
		if _, err := seal(ctx, step, m.Identity()); err != nil {
			return err
		}
	}
	return nil
}

// keptLayout moves the files of a kept evaluation checkpoint of the release that kept only the
// variables (step-N/model.safetensors, step-N/metrics.json) into step-N/best/, where a loader
// reads them.
func keptLayout(step string) error {
	if _, err := os.Stat(filepath.Join(step, BestDir)); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(step, BestDir), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	for _, name := range []string{BestVariables, BestMetricsFile} {
		err := os.Rename(filepath.Join(step, name), filepath.Join(step, BestDir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
	}
	return nil
}

// String renders m as its JSON, for logs and tests.
func (m *Manifest) String() string {
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

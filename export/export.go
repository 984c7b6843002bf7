// Package export turns a tracksum checkpoint of a pretrained model into a merged Hugging Face
// snapshot (tracksum-export): the base snapshot's weights with the checkpoint's adapters merged in
// (W + scale * B @ A, hf/peft), under the base's key names and dtypes, with the base's config,
// tokenizer and generation files, so that transformers loads it without tracksum or PEFT.
//
//	OUT/config.json              the base's, with architectures/id2label/label2id set when the
//	                             checkpoint has a classification head (task_type SEQ_CLS)
//	OUT/model.safetensors        every base tensor (adapted ones merged) + the head's, one file
//	OUT/tokenizer.json, ...      the base's other top-level files, copied (tokenizer files,
//	                             generation_config.json, licence files); weights and subdirs are not
//	OUT/tracksum_export.json     where it came from: checkpoint, base dir, base weights' sha256
//
// The output is built in a temporary sibling and renamed into place when complete, so a crash
// never leaves a half snapshot, and an existing non-empty OUT is only replaced with --overwrite.
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-huggingface/hub"
	"github.com/gomlx/go-huggingface/models/safetensors"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/quant"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
)

// ProvenanceFile records what an export was made from.
const ProvenanceFile = "tracksum_export.json"

// Options configure Export.
type Options struct {
	// Checkpoint is the tracksum checkpoint directory (base.json + adapter/ or full/).
	Checkpoint string
	// Out is the snapshot directory to write.
	Out string
	// Overwrite allows replacing an existing non-empty Out that is a previous export (its
	// ProvenanceFile lists every file in it); any other directory is refused.
	Overwrite bool
	// Base, when set, is the base snapshot's directory, overriding the one base.json records (a
	// moved snapshot); its weights must still have the recorded sha256.
	Base string
	// DType is the dtype of the written float tensors: "" keeps each base tensor's own (merged
	// weights rounded to it, as PEFT's merge_and_unload on a model loaded in that dtype), "float32"
	// writes every float tensor in float32 and merged weights unrounded, "bfloat16" and "float16"
	// round every float tensor to that dtype (config.ExportDTypes). config.json's torch_dtype
	// follows.
	DType string
	// Log receives one line per step (nil: none).
	Log io.Writer
}

// exportDTypes maps Options.DType to its dtype.
var exportDTypes = map[string]dtypes.DType{"float32": dtypes.Float32, "bfloat16": dtypes.BFloat16, "float16": dtypes.Float16}

// isFloat reports whether dt is a float dtype, the tensors Options.DType converts.
func isFloat(dt dtypes.DType) bool {
	return dt == dtypes.Float32 || dt == dtypes.Float64 || dt == dtypes.BFloat16 || dt == dtypes.Float16
}

// Provenance is tracksum_export.json.
type Provenance struct {
	Checkpoint    string   `json:"checkpoint"`
	Base          string   `json:"base"`
	BaseSHA256    string   `json:"base_weights_sha256"`
	Mode          string   `json:"mode"` // "lora" or "full"
	TaskType      string   `json:"task_type"`
	Merged        []string `json:"merged"` // base keys whose values changed
	Added         []string `json:"added"`  // keys absent from the base (a head)
	AdapterConfig any      `json:"adapter_config,omitempty"`
	// DType is Options.DType: empty when each tensor kept its base's dtype.
	DType string `json:"dtype,omitempty"`
	// Quantization is the checkpoint's (pretrained.json): "nf4" when its adapters were merged
	// into the NF4 weights dequantized, the base they were trained on.
	Quantization string `json:"quantization,omitempty"`
	// Files lists every file the export wrote (this one included), so that --overwrite can tell
	// a previous export from a directory holding a user's files.
	Files []string `json:"files,omitempty"`
}

// headModules are the modules of a classification head: the tensors of a fully fine-tuned
// checkpoint that make its export a sequence classifier.
var headModules = []string{"score", "classifier"}

// Export writes the merged snapshot of o.Checkpoint to o.Out and returns its provenance.
func Export(ctx context.Context, o Options) (*Provenance, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	ck := o.Checkpoint
	target, convert := exportDTypes[o.DType]
	if o.DType != "" && !convert {
		return nil, fmt.Errorf("export: --dtype %q: want float32, bfloat16 or float16 (or nothing: the base's)", o.DType)
	}
	files, err := checkKind(ctx, ck, o.Log)
	if err != nil {
		return nil, err
	}
	snap, ref, err := peft.OpenBase(ctx, ck, files, o.Base)
	if err != nil {
		return nil, err
	}
	quantization, err := checkAdapterAgreement(ck, files)
	if err != nil {
		return nil, err
	}
	inputs := map[string]string{"--checkpoint": ck, "base snapshot": snap.Dir}
	if err := cli.CheckOutputs(inputs, map[string]string{"--out": o.Out}); err != nil {
		return nil, err
	}
	base, err := baseShapes(snap)
	if err != nil {
		return nil, err
	}
	prov := &Provenance{Checkpoint: absPath(ck), Base: snap.Dir, BaseSHA256: ref.WeightsSHA256, Quantization: quantization}
	w := &tensorWriter{ctx: ctx, snap: snap, base: base, convert: convert}
	if quantization == nf4 {
		if w.roundTrip, err = nf4RoundTrip(snap, base); err != nil {
			return nil, err
		}
	}
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if w.merger, err = openMerger(ck, base, prov, &closers); err != nil {
		return nil, err
	}
	prov.Merged = w.merger.Changed()
	outShapes := w.merger.Shapes(base)
	for name, sh := range outShapes {
		if _, ok := base[name]; !ok {
			prov.Added = append(prov.Added, name)
		}
		if convert && isFloat(sh.DType) {
			outShapes[name] = shapes.Make(target, sh.Dimensions...)
		}
	}
	slices.Sort(prov.Added)
	prov.DType = o.DType

	cfg, err := exportConfig(snap, prov, outShapes)
	if err != nil {
		return nil, err
	}
	if convert {
		cfg["torch_dtype"] = o.DType
	}
	dir, err := atomicio.NewDirWith(o.Out, atomicio.DirOptions{Overwrite: o.Overwrite, Previous: previousExport})
	if err != nil {
		return nil, err
	}
	defer dir.Abort()
	if err := copyFiles(snap.Dir, dir.Tmp); err != nil {
		return nil, err
	}
	if err := atomicio.WriteJSON(dir.Path(snapshot.ConfigFile), cfg); err != nil {
		return nil, err
	}
	w.fileShapes, w.baseName = fileNames(snap, prov, base, outShapes)
	logf("export: %s: %d tensors, %d merged, %d added (base %s)", o.Out, len(outShapes), len(prov.Merged), len(prov.Added), snap.Dir)
	if err := tensorio.WriteTensorsFunc(dir.Path(snapshot.WeightsFile), w.fileShapes, map[string]string{"format": "pt"}, w.get); err != nil {
		if w.fitErr != nil {
			err = w.fitErr
		}
		return nil, fmt.Errorf("export %s: %w", o.Out, err)
	}
	if err := writeProvenance(dir, prov); err != nil {
		return nil, err
	}
	if err := dir.Commit(); err != nil {
		return nil, err
	}
	logf("export: wrote %s (%d tensors)", o.Out, w.written)
	return prov, nil
}

// baseShapes returns the shape of every tensor of the base snapshot.
func baseShapes(snap *snapshot.Snapshot) (map[string]shapes.Shape, error) {
	base := map[string]shapes.Shape{}
	for _, name := range snap.Names() {
		s, ok := snap.Shape(name)
		if !ok {
			return nil, fmt.Errorf("base %s: tensor %s: unreadable header entry", snap.Dir, name)
		}
		base[name] = s
	}
	return base, nil
}

// nf4RoundTrip returns the base weights to merge into dequantized NF4. A QLoRA checkpoint's
// adapters were trained on the NF4 weights dequantized: the merge is into those, as PEFT's merge
// of a 4-bit base. A 4-bit snapshot's are dequantized when read; a plain base's are quantized here
// as the training loaded them.
func nf4RoundTrip(snap *snapshot.Snapshot, base map[string]shapes.Shape) (map[string]bool, error) {
	roundTrip, err := decoder.NF4Weights(snap)
	if err != nil {
		return nil, err
	}
	for name := range roundTrip {
		if _, inBase := base[name]; !inBase || snap.IsQuantized(name) {
			delete(roundTrip, name)
		}
	}
	return roundTrip, nil
}

// fileNames returns the written tensors' shapes by file name and the tensor each file name holds.
// The written names are the base's, except for a fine-tuned encoder's classifier (BERT's) whose
// base was saved without the family's key prefix ("bert.", a BertModel):
// BertForSequenceClassification would then load the encoder weights into its base model and leave
// the classifier at random.
func fileNames(snap *snapshot.Snapshot, prov *Provenance, base, outShapes map[string]shapes.Shape) (fileShapes map[string]shapes.Shape, baseName map[string]string) {
	fileName := map[string]string{}
	baseName = map[string]string{}
	fam, _ := family.Lookup(snap.ModelType)
	prefix := fam.FineTuned && fam.KeyPrefix != "" && prov.TaskType == peft.TaskSeqCls && !hasKeyPrefix(base, fam.KeyPrefix)
	for name := range outShapes {
		fileName[name] = name
		if _, inBase := base[name]; inBase && prefix {
			fileName[name] = fam.KeyPrefix + name
		}
		baseName[fileName[name]] = name
	}
	fileShapes = map[string]shapes.Shape{}
	for name, s := range outShapes {
		fileShapes[fileName[name]] = s
	}
	return fileShapes, baseName
}

// tensorWriter gives the export's tensors one at a time, as the safetensors writer asks for them:
// the base's (dequantized NF4 where roundTrip says), merged, converted to the written dtype and
// checked to be finite.
type tensorWriter struct {
	ctx        context.Context
	snap       *snapshot.Snapshot
	base       map[string]shapes.Shape
	roundTrip  map[string]bool
	convert    bool // Options.DType set: every float tensor converted
	merger     *peft.Merger
	fileShapes map[string]shapes.Shape
	baseName   map[string]string
	written    int
	fitErr     error // named alone: the writer's wrapping would name the temporary directory
}

func (w *tensorWriter) get(file string) (*tensors.Tensor, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	name := w.baseName[file]
	var bt *tensors.Tensor
	if _, inBase := w.base[name]; inBase {
		ts, err := w.snap.Tensors(w.ctx, func(n string) bool { return n == name })
		if err != nil {
			return nil, err
		}
		bt = ts[name]
		if w.roundTrip[name] {
			if bt, err = dequantizedNF4(bt); err != nil {
				return nil, fmt.Errorf("base %s: %s: %w", w.snap.Dir, name, err)
			}
		}
		if w.convert && isFloat(bt.DType()) {
			// Merged in float32 from the exact float32 value of the base weight (every bf16 and
			// f16 value is one), then rounded once to the target, if at all.
			bt = snapshot.ToFloat32(bt)
		}
	}
	w.written++
	t, err := w.merger.Apply(name, bt)
	if err != nil || !isFloat(t.DType()) {
		return t, err
	}
	var v []float32
	if want := w.fileShapes[file].DType; t.DType() != want {
		// --dtype's, or the base's for a weight dequantized in float32 (roundTrip).
		v = tensors.MustCopyFlatData[float32](snapshot.ToFloat32(t))
		if t, err = snapshot.FromFloat32(v, want, t.Shape().Dimensions...); err != nil {
			return nil, err
		}
	}
	w.fitErr = checkFinite(file, t, v)
	return t, w.fitErr
}

// writeProvenance writes tracksum_export.json into the export's directory, listing its files.
func writeProvenance(dir *atomicio.Dir, prov *Provenance) error {
	entries, err := os.ReadDir(dir.Tmp)
	if err != nil {
		return err
	}
	prov.Files = []string{ProvenanceFile}
	for _, e := range entries {
		prov.Files = append(prov.Files, e.Name())
	}
	slices.Sort(prov.Files)
	return atomicio.WriteJSON(dir.Path(ProvenanceFile), prov)
}

// checkFinite refuses a tensor rounded to a half dtype that came out holding Inf or NaN: a value
// past the dtype's largest (65,504 for float16) rounds to Inf, which tracksum refuses on loading
// and transformers runs to NaN logits. v, the float32 values before the rounding, gives the
// largest magnitude to name; nil when the merge itself rounded to the base's half dtype.
func checkFinite(file string, t *tensors.Tensor, v []float32) error {
	if t.DType() != dtypes.Float16 && t.DType() != dtypes.BFloat16 {
		return nil
	}
	written := tensors.MustCopyFlatData[float32](snapshot.ToFloat32(t))
	if !slices.ContainsFunc(written, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
		return nil
	}
	dt, hint := strings.ToLower(t.DType().String()), "--dtype float32 holds it"
	if t.DType() == dtypes.Float16 {
		hint = "--dtype bfloat16 or float32 holds it"
	}
	if v == nil {
		return fmt.Errorf("tensor %s: the merged weight does not fit %s (it would be written as Inf or NaN): %s", file, dt, hint)
	}
	var largest float64
	for _, x := range v {
		largest = max(largest, math.Abs(float64(x)))
	}
	return fmt.Errorf("tensor %s: largest value %g does not fit %s (it would be written as Inf): %s", file, largest, dt, hint)
}

// checkKind refuses a checkpoint that is not a fine-tuned pretrained model (its manifest, verified,
// says what it is: open.Verify, the checkpoint's way in without loading its model), naming the kind found. A directory without checkpoint.json
// that tracksum does not recognise (a PEFT adapter directory given base.json by hand) is left to
// peft.OpenBase, whose errors name what is missing.
func checkKind(ctx context.Context, ck string, log io.Writer) (checkpoint.Reader, error) {
	_, err := os.Stat(filepath.Join(ck, checkpoint.ManifestFile))
	sealed := err == nil
	m, err := open.Verify(ctx, ck, "--checkpoint", open.Options{Log: log})
	switch {
	case err != nil && !sealed:
		return checkpoint.DirFiles(ck), nil
	case err != nil:
		return nil, err
	}
	if !m.Pretrained() && m.Kind != checkpoint.KindEnsemble && m.Kind != checkpoint.KindCrossValidation && m.Kind != checkpoint.KindSumThenTrack {
		// A from-scratch model has no Hugging Face base whose snapshot export could write.
		return nil, fmt.Errorf("%w: %s is a from-scratch %s checkpoint; --checkpoint wants a checkpoint of tracksum-train --pretrained: tracksum-export writes a pretrained model merged into its Hugging Face base",
			checkpoint.ErrCheckpoint, ck, m.Name())
	}
	if !m.Pretrained() || m.Kind == checkpoint.KindEnsemble || m.Kind == checkpoint.KindCrossValidation || (m.Kind == checkpoint.KindSumThenTrack && m.Part == "") {
		return nil, m.Refuse("--checkpoint", "one fine-tuned pretrained model (tracksum-train --pretrained: a tracker, a summarizer, an end_to_end model or a sum_then_track part)")
	}
	return m, nil
}

// checkAdapterAgreement refuses a checkpoint whose adapter_config.json (what the merge uses)
// disagrees with the LoRA settings of its pretrained.json (what infer uses): the export would
// not be the model infer runs. A checkpoint without pretrained.json has no second record.
// It returns pretrained.json's quantization ("nf4" or empty).
func checkAdapterAgreement(ck string, files checkpoint.Reader) (string, error) {
	var meta struct {
		LoRA         config.LoRA `json:"lora"`
		Quantization string      `json:"quantization"`
	}
	path := filepath.Join(ck, checkpoint.PretrainedFile)
	err := atomicio.ReadJSONFrom(files, ck, checkpoint.PretrainedFile, &meta, false)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err // names the file
	}
	if meta.Quantization != "" && meta.Quantization != nf4 {
		return "", fmt.Errorf("%s: quantization %q, want %s or none (absent)", path, meta.Quantization, nf4)
	}
	return meta.Quantization, peft.CheckAgreement(ck, files, meta.LoRA, checkpoint.PretrainedFile)
}

// nf4 is pretrained.json's quantization of a QLoRA checkpoint.
const nf4 = config.QuantizationNF4

// dequantizedNF4 returns w quantized to NF4 as the training's LoadQuantized did (blocks of 64,
// double quantization) and dequantized, in float32.
func dequantizedNF4(w *tensors.Tensor) (*tensors.Tensor, error) {
	dims := w.Shape().Dimensions
	q, err := quant.QuantizeNF4(tensors.MustCopyFlatData[float32](snapshot.ToFloat32(w)), dims, quant.BlockSize, true)
	if err != nil {
		return nil, err
	}
	vals := make([]float32, q.Len())
	if err := q.Dequantize(vals); err != nil {
		return nil, err
	}
	return tensors.FromFlatDataAndDimensions(vals, dims...), nil
}

// previousExport recognises an export that --overwrite may replace: a ProvenanceFile whose file
// list covers everything in the directory. An export written before the list existed is
// recognised by holding only regular files beside its ProvenanceFile (an export writes no
// subdirectory).
func previousExport(dir string) error {
	var prov Provenance
	err := atomicio.ReadJSON(filepath.Join(dir, ProvenanceFile), &prov, false)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		if err := atomicio.OnlyFiles(dir, "tracksum-export", nil); err != nil {
			return err
		}
		return fmt.Errorf("has no %s (not a tracksum-export output)", ProvenanceFile)
	}
	if err != nil {
		return fmt.Errorf("has an unreadable %s (not a tracksum-export output: %v)", ProvenanceFile, err)
	}
	files := prov.Files
	if files == nil {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			files = append(files, e.Name())
		}
	}
	var local []string
	for _, f := range files {
		if filepath.IsLocal(f) && !strings.ContainsRune(f, '/') {
			local = append(local, f)
		}
	}
	return atomicio.OnlyFiles(dir, "tracksum-export", local)
}

// openMerger reads the checkpoint's adapter (adapter/) or fully fine-tuned tensors (full/).
// Files it opens get their Close appended to closers.
func openMerger(ck string, base map[string]shapes.Shape, prov *Provenance, closers *[]func() error) (*peft.Merger, error) {
	adapterDir := filepath.Join(ck, peft.AdapterDir)
	fullPath := filepath.Join(ck, peft.FullDir, peft.FullWeights)
	switch {
	case exists(adapterDir):
		a, err := peft.Read(adapterDir)
		if err != nil {
			return nil, err
		}
		m, err := peft.NewMerger(a, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", adapterDir, err)
		}
		prov.Mode, prov.TaskType, prov.AdapterConfig = "lora", a.Config.TaskType, a.Config
		return m, nil
	case exists(fullPath):
		// Read lazily through go-huggingface's memory-mapped reader: a fully fine-tuned model's
		// float32 tensors can be larger than memory.
		// The header is validated first (tensorio.ReadSafetensorsHeader): the library's reader trusts
		// its shapes and offsets.
		header, err := tensorio.ReadSafetensorsHeader(fullPath)
		if err != nil {
			return nil, err
		}
		full := map[string]shapes.Shape{}
		for name, e := range header {
			full[name] = e.Shape
		}
		st, err := safetensors.New(hub.NewLocal(filepath.Dir(fullPath)))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", fullPath, err)
		}
		reader, err := st.NewTensorReader(peft.FullWeights)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", fullPath, err)
		}
		*closers = append(*closers, reader.Close)
		read := func(name string) (*tensors.Tensor, error) {
			t, err := reader.ReadTensor(nil, name) // a host copy: the mapping may close first
			if err != nil {
				return nil, fmt.Errorf("%s: %v", fullPath, err)
			}
			return t, nil
		}
		m, err := peft.NewFullMerger(full, read, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fullPath, err)
		}
		prov.Mode, prov.TaskType = "full", peft.TaskCausalLM
		for name := range full {
			if _, inBase := base[name]; !inBase && isHead(name) {
				prov.TaskType = peft.TaskSeqCls
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("checkpoint %s: neither %s/ (adapters) nor %s/%s (full fine-tuning): nothing to export",
		ck, peft.AdapterDir, peft.FullDir, peft.FullWeights)
}

func hasKeyPrefix(base map[string]shapes.Shape, prefix string) bool {
	for name := range base {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func isHead(name string) bool {
	module := name[:max(strings.LastIndex(name, "."), 0)]
	for _, h := range headModules {
		if module == h || strings.HasSuffix(module, "."+h) {
			return true
		}
	}
	return false
}

// exportConfig returns the base's config.json, turned into a sequence classifier's when the
// checkpoint has a classification head: architectures, and id2label/label2id from the head's
// rows (transformers derives num_labels from them).
func exportConfig(snap *snapshot.Snapshot, prov *Provenance, out map[string]shapes.Shape) (map[string]any, error) {
	cfg := maps.Clone(snap.Config)
	if snap.Quant != nil {
		// The export's weights are the dequantized base merged: a quantization_config left in
		// would make transformers read them as 4-bit codes.
		delete(cfg, "quantization_config")
	}
	if prov.TaskType != peft.TaskSeqCls {
		return cfg, nil
	}
	fam, _ := family.Lookup(snap.ModelType)
	arch := fam.SequenceClassificationClass
	if arch == "" {
		return nil, fmt.Errorf("export: no sequence-classification class for model_type %q", snap.ModelType)
	}
	labels := 0
	for _, name := range append(slices.Clone(prov.Added), prov.Merged...) {
		if s := out[name]; isHead(name) && strings.HasSuffix(name, ".weight") && s.Rank() == 2 {
			labels = s.Dimensions[0]
		}
	}
	if labels == 0 {
		return nil, errors.New("export: the checkpoint is a sequence classifier (task_type SEQ_CLS) but has no head weight (score.weight or classifier.weight)")
	}
	cfg["architectures"] = []string{arch}
	id2label, label2id := map[string]string{}, map[string]int{}
	for i := range labels {
		id2label[fmt.Sprint(i)] = fmt.Sprintf("LABEL_%d", i)
		label2id[fmt.Sprintf("LABEL_%d", i)] = i
	}
	cfg["id2label"], cfg["label2id"] = id2label, label2id
	return cfg, nil
}

// weightFile reports the files not copied from the base: weights in any format and their indexes.
func weightFile(name string) bool {
	for _, ext := range []string{".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".gguf", ".onnx", ".ckpt"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return strings.HasSuffix(name, ".index.json")
}

// copyFiles copies the base's top-level regular files other than config.json, weights and hidden
// files: tokenizer files, generation_config.json, chat templates, licences.
func copyFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("base %s: %w", from, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || name == snapshot.ConfigFile || weightFile(name) {
			continue
		}
		info, err := os.Stat(filepath.Join(from, name)) // follows the symlinks of Hub caches
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

package encoder

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/weights"
)

// Store scopes of the model's variables: under model.ModelScope ("/model"), where the training
// loop (model/training) finds the variables it trains and checkpoints.
const (
	// BaseScope holds the checkpoint's weights: the variable of Hugging Face key K (as stored in
	// the file, e.g. "bert.encoder.layer.0.attention.self.query.weight") is BaseScope + "/" + K.
	BaseScope = "/model/encoder/base"
	// LoRAScope holds the adapters: the variable of PEFT key peft.Prefix + K + ".lora_A.weight"
	// (K a module key such as "bert.encoder.layer.0.attention.self.query") is
	// LoRAScope + "/" + K + ".lora_A.weight".
	LoRAScope = "/model/encoder/lora"
	// HeadScope holds the classification head, named as BertForSequenceClassification names it:
	// HeadScope + "/classifier.weight" [labels, Hidden] and "/classifier.bias" [labels]; or, for
	// a snapshot that carries RobertaClassificationHead, "/classifier.dense.weight" [Hidden,
	// Hidden], "/classifier.dense.bias", "/classifier.out_proj.weight" [labels, Hidden] and
	// "/classifier.out_proj.bias".
	HeadScope = "/model/encoder/head"
)

// keyPrefixes returns the prefixes of the weight keys of a model type: checkpoints saved from
// BertModel / RobertaModel have none, those saved from the *ForPreTraining / *ForMaskedLM /
// *ForSequenceClassification classes (BERT, PubMedBERT, BioBERT, RoBERTa as published) put
// "bert." or "roberta." before every encoder key.
func keyPrefixes(modelType string) []string {
	f, _ := family.Lookup(modelType)
	return []string{f.KeyPrefix, ""}
}

// robertaHead are the keys of RobertaClassificationHead, in the order Classify applies them.
var robertaHead = func() []string {
	var keys []string
	for _, l := range (layout.Layout{}).Head(0, true) {
		keys = append(keys, l.Key+".weight", l.Key+".bias")
	}
	return keys
}()

// Model is a loaded BERT encoder: its config, adapter settings and the store variables of its
// weights, adapters and (after AddClassifier) classification head.
type Model struct {
	cfg      Config
	compute  Compute
	lora     LoRA
	store    *gomlxmodel.Store
	prefix   string
	pooler   bool
	keys     map[string]string               // key relative to the prefix -> key in the file
	base     map[string]*gomlxmodel.Variable // key in the file -> variable
	adapters weights.Adapters                // by module key in the file ("bert.pooler.dense")
	head     map[string]*gomlxmodel.Variable // "classifier.weight", "classifier.bias"
	saved    map[string]*tensors.Tensor      // the snapshot's own classifier (a merged export), or nil
	dir      string
}

// Load creates the model's variables in store from the snapshot's weights: base weights under
// BaseScope named after their Hugging Face keys, non-trainable when lora.Rank > 0 (so absent from
// the optimizer state) and kept in their file dtype (bf16/f16 are converted to float32 inside the
// graph); with Rank 0 they are trainable and converted to float32 at load. Adapters (float32,
// trainable; A kaiming-uniform as PEFT draws it, B zeros) go under LoRAScope; adapters already in
// the store (restored from a checkpoint) keep their values. Every tensor's shape is checked against
// the config; a missing or misshaped tensor, or a non-finite value, is a one-line error. Tensors
// the encoder does not use (position_ids, cls.predictions.*, a saved classifier) are not read.
// Reading stops with an error wrapping ctx.Err() once ctx is cancelled.
func Load(ctx context.Context, s *snapshot.Snapshot, store *gomlxmodel.Store, lora LoRA, seed int64) (*Model, error) {
	cfg, err := ConfigOf(s)
	if err != nil {
		return nil, err
	}
	if err := weights.CheckRank(lora.Rank); err != nil {
		return nil, err
	}
	if cfg.Disentangled && lora.Rank > 0 {
		// The nli judge, the one user of this family, does not fine-tune.
		return nil, fmt.Errorf("snapshot %s: LoRA adapters on a %s encoder are not supported (only inference)", s.Dir, cfg.ModelType)
	}
	fam, _ := family.Lookup(cfg.ModelType) // ConfigOf refused a model_type that is not an encoder family
	targets, err := resolveTargets(fam, lora)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, lora: lora, store: store, dir: s.Dir, head: map[string]*gomlxmodel.Variable{}}
	if err := m.findPrefix(s); err != nil {
		return nil, err
	}
	_, hasW := s.Shape(m.fileKey("pooler.dense.weight"))
	_, hasB := s.Shape(m.fileKey("pooler.dense.bias"))
	m.pooler = hasW && hasB
	want := cfg.Tensors(m.pooler)
	if m.keys, err = weights.CheckHeaders(s, want, func(rel string) (string, shapes.Shape, bool) { return m.resolve(s, rel) }, cfg.ModelType, cfg.Layers); err != nil {
		return nil, err
	}
	fileKeys := map[string]bool{}
	for _, k := range m.keys {
		fileKeys[k] = true
	}
	headKeys, err := savedHead(s, cfg)
	if err != nil {
		return nil, err
	}
	for _, k := range headKeys {
		fileKeys[k] = true
	}
	ts, err := s.Tensors(ctx, func(name string) bool { return fileKeys[name] })
	if err != nil {
		return nil, err
	}
	if headKeys != nil {
		m.saved = map[string]*tensors.Tensor{}
		for _, k := range headKeys {
			m.saved[k] = snapshot.ToFloat32(ts[k])
		}
	}
	var keys []string
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		keys = append(keys, m.keys[rel])
	}
	if m.base, err = weights.SetBase(store, BaseScope, s, keys, ts, lora.Rank > 0); err != nil {
		return nil, err
	}
	if lora.Rank > 0 {
		if err := m.newAdapters(s, targets, seed); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// findPrefix sets m.prefix to the encoder's key prefix in s: the family's (a
// *ForSequenceClassification checkpoint) or none (a bare encoder).
func (m *Model) findPrefix(s *snapshot.Snapshot) error {
	m.prefix = "-"
	for _, p := range keyPrefixes(m.cfg.ModelType) {
		if _, ok := s.Shape(p + "embeddings.word_embeddings.weight"); ok {
			m.prefix = p
			break
		}
	}
	if m.prefix == "-" {
		fam, _ := family.Lookup(m.cfg.ModelType)
		return fmt.Errorf("snapshot %s: %w embeddings.word_embeddings.weight (nor %sembeddings.word_embeddings.weight): not a %s checkpoint", s.Dir, snapshot.ErrMissingTensor, fam.KeyPrefix, fam.Name)
	}
	return nil
}

// savedHead returns the keys of the classifier a snapshot carries (nil: none), which AddClassifier
// starts from, as from_pretrained does: a BertForSequenceClassification's (e.g.
// tracksum-export's), or a RobertaForSequenceClassification's RobertaClassificationHead, whose
// shapes must then fit the encoder.
func savedHead(s *snapshot.Snapshot, cfg Config) ([]string, error) {
	cw, okW := s.Shape("classifier.weight")
	cb, okB := s.Shape("classifier.bias")
	if okW && okB && cw.DType.IsFloat() && cb.DType.IsFloat() && cw.Rank() == 2 && cw.Dimensions[1] == cfg.Hidden && cb.Rank() == 1 && cb.Dimensions[0] == cw.Dimensions[0] {
		return []string{"classifier.weight", "classifier.bias"}, nil
	}
	dw, ok1 := s.Shape("classifier.dense.weight")
	db, ok2 := s.Shape("classifier.dense.bias")
	ow, ok3 := s.Shape("classifier.out_proj.weight")
	ob, ok4 := s.Shape("classifier.out_proj.bias")
	if !(ok1 && ok2 && ok3 && ok4) {
		return nil, nil
	}
	if snapshot.CheckShape("classifier.dense.weight", dw, cfg.Hidden, cfg.Hidden) != nil ||
		snapshot.CheckShape("classifier.dense.bias", db, cfg.Hidden) != nil ||
		ow.Rank() != 2 || ow.Dimensions[1] != cfg.Hidden || ob.Rank() != 1 || ob.Dimensions[0] != ow.Dimensions[0] ||
		!dw.DType.IsFloat() || !db.DType.IsFloat() || !ow.DType.IsFloat() || !ob.DType.IsFloat() {
		return nil, fmt.Errorf("snapshot %s: classifier.dense/out_proj shapes %v %v %v %v do not fit hidden_size %d",
			s.Dir, dw.Dimensions, db.Dimensions, ow.Dimensions, ob.Dimensions, cfg.Hidden)
	}
	return robertaHead, nil
}

// newAdapters creates the adapters of the linear layers the targets select, in the model's
// order; targets selecting none is an error.
func (m *Model) newAdapters(s *snapshot.Snapshot, targets []string, seed int64) error {
	var sel []weights.Linear
	for _, l := range m.allLinears() {
		mod := m.prefix + l.Key
		if slices.ContainsFunc(targets, func(t string) bool { return targetMatches(t, mod) }) {
			sel = append(sel, weights.Linear{Key: mod, Out: l.Out, In: l.In})
		}
	}
	if len(sel) == 0 {
		return fmt.Errorf("lora target modules %v select no linear layer of %s", m.lora.TargetModules, s.Dir)
	}
	var err error
	m.adapters, err = weights.NewAdapters(m.store, LoRAScope, m.lora.Rank, seed, 0xbe27, sel)
	return err
}

// resolve finds the file key of rel: prefix + rel, or for a LayerNorm the TensorFlow-era names
// gamma and beta that old conversions (BioBERT's) kept and transformers renames at load.
func (m *Model) resolve(s *snapshot.Snapshot, rel string) (key string, shape shapes.Shape, ok bool) {
	key = m.fileKey(rel)
	if shape, ok = s.Shape(key); ok {
		return key, shape, true
	}
	for from, to := range map[string]string{"LayerNorm.weight": "LayerNorm.gamma", "LayerNorm.bias": "LayerNorm.beta"} {
		if strings.HasSuffix(rel, from) {
			alt := m.prefix + strings.TrimSuffix(rel, from) + to
			if shape, ok = s.Shape(alt); ok {
				return alt, shape, true
			}
		}
	}
	return m.fileKey(rel), shapes.Shape{}, false
}

// fileKey is the key in the file of relative key rel: prefix + rel, except DeBERTa's ContextPooler,
// which DebertaV2ForSequenceClassification keeps beside its "deberta." model ("pooler.dense").
func (m *Model) fileKey(rel string) string {
	if m.cfg.TopLevel(rel) {
		return rel
	}
	return m.prefix + rel
}

// allLinears lists every Linear module the model has, the pooler's included when present.
func (m *Model) allLinears() []layout.Linear {
	var out []layout.Linear
	for i := range m.cfg.Layers {
		out = append(out, m.cfg.Linears(i)...)
	}
	if m.pooler {
		out = append(out, m.cfg.Pooler())
	}
	return out
}

// Config returns the model's architecture.
func (m *Model) Config() Config { return m.cfg }

// Compute says how the encoder's graphs are computed (not what they compute); set with SetCompute
// after Load, before building graphs.
type Compute struct {
	// BF16 computes the base weights' products and the activations in bfloat16 (mixed precision:
	// adapters, classifier head, layer norms, the attention softmax and Hidden's output stay
	// float32). Off: float32.
	BF16 bool
	// GradientCheckpointing makes each encoder layer of Hidden a checkpointed block (GoMLX's
	// (*Node).Checkpoint): the backward pass recomputes a layer's activations from its input.
	GradientCheckpointing bool
}

// SetCompute sets how the model's graphs are computed (float32 without checkpoints until set).
func (m *Model) SetCompute(c Compute) { m.compute = c }

// LoRA returns the adapter settings the model was loaded with.
func (m *Model) LoRA() LoRA { return m.lora }

// SavedLabels is the number of labels of the classification head the snapshot carries
// (BertForSequenceClassification's classifier or RobertaClassificationHead's out_proj), 0 when it
// carries none.
func (m *Model) SavedLabels() int {
	for _, k := range []string{"classifier.weight", "classifier.out_proj.weight"} {
		if t := m.saved[k]; t != nil {
			return t.Shape().Dimensions[0]
		}
	}
	return 0
}

// HasPooler reports whether the checkpoint has BertPooler weights (BertForMaskedLM checkpoints,
// PubMedBERT's among them, have none).
func (m *Model) HasPooler() bool { return m.pooler }

// KeyPrefix is the prefix of the checkpoint's encoder keys: "bert.", "roberta." or "".
func (m *Model) KeyPrefix() string { return m.prefix }

// BaseVariables returns the checkpoint's weights the model uses, by their Hugging Face key.
func (m *Model) BaseVariables() map[string]*gomlxmodel.Variable { return m.base }

// LoRAVariables returns the adapter variables by their PEFT key
// ("base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight" -> A [Rank, in];
// "...lora_B.weight" -> B [out, Rank]); empty with Rank 0.
func (m *Model) LoRAVariables() map[string]*gomlxmodel.Variable { return m.adapters.Variables() }

// HeadVariables returns the classification head's variables by their Hugging Face key
// ("classifier.weight", "classifier.bias"); empty before AddClassifier.
func (m *Model) HeadVariables() map[string]*gomlxmodel.Variable { return m.head }

// AddClassifier creates the classification head of BertForSequenceClassification with labels
// outputs: classifier.weight [labels, Hidden] and classifier.bias [labels], float32 and trainable.
// They start from the snapshot's own classifier when it has one (a merged export; its number of
// labels must then be labels), else from N(0, initializer_range) (seeded) and zeros. A head already
// in the store (restored from a checkpoint) keeps its values; one of another shape is an error.
func (m *Model) AddClassifier(labels int, seed int64) error {
	if labels <= 0 {
		return fmt.Errorf("classifier: %d labels, want at least 1", labels)
	}
	var w0, b0 *tensors.Tensor
	if m.saved != nil && m.saved["classifier.out_proj.weight"] != nil {
		if n := m.saved["classifier.out_proj.weight"].Shape().Dimensions[0]; n != labels {
			return fmt.Errorf("snapshot %s: classifier.out_proj.weight has %d labels, want %d", m.dir, n, labels)
		}
		for _, k := range robertaHead {
			v, err := weights.SetVariable(m.store, HeadScope+"/"+k, m.saved[k], false)
			if err != nil {
				return fmt.Errorf("classifier: %v", err)
			}
			v.SetTrainable(true)
			m.head[k] = v
		}
		return nil
	}
	if m.saved != nil {
		w0, b0 = m.saved["classifier.weight"], m.saved["classifier.bias"]
		if n := w0.Shape().Dimensions[0]; n != labels {
			return fmt.Errorf("snapshot %s: classifier.weight has %d labels, want %d", m.dir, n, labels)
		}
	} else {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xc1a5))
		w := make([]float32, labels*m.cfg.Hidden)
		for i := range w {
			w[i] = float32(rng.NormFloat64() * m.cfg.InitializerRange)
		}
		w0, b0 = tensors.FromFlatDataAndDimensions(w, labels, m.cfg.Hidden), tensors.FromShape(shapes.Make(dtypes.Float32, labels))
	}
	vw, err := weights.SetVariable(m.store, HeadScope+"/classifier.weight", w0, false)
	if err != nil {
		return fmt.Errorf("classifier: %v", err)
	}
	vb, err := weights.SetVariable(m.store, HeadScope+"/classifier.bias", b0, false)
	if err != nil {
		return fmt.Errorf("classifier: %v", err)
	}
	vw.SetTrainable(true)
	vb.SetTrainable(true)
	m.head["classifier.weight"], m.head["classifier.bias"] = vw, vb
	return nil
}

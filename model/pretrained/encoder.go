package pretrained

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/encoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// encoderCLS is the encoder_cls tracker: a BERT-family encoder (hf/encoder) over
// "[CLS] aspect description [SEP] sentence [SEP]" with BertForSequenceClassification's head (one
// logit, sigmoid) on the pooled [CLS] state.
type encoderCLS struct {
	snap    *snapshot.Snapshot
	enc     *encoder.Model
	store   *gomlxmodel.Store
	backend compute.Backend
	lora    config.LoRA
	tok     *tokenizer.Tokenizer
	sp      encoder.PairTokens
	set     string
	maxLen  int
	sc      *scorer
}

// loadEncoderCLS loads the snapshot's encoder with adapters per l and a one-logit classifier;
// tokDir holds the tokenizer (the snapshot, or a checkpoint's copy), read through tokFiles.
func loadEncoderCLS(ctx context.Context, backend compute.Backend, snap *snapshot.Snapshot, tokFiles checkpoint.Reader, tokDir string, l config.LoRA, seed int64, set string, maxLen int, cs computeSettings) (*encoderCLS, error) {
	seed = l.Seed(seed)
	if cs.quantization != "" {
		return nil, fmt.Errorf("train.quantization %s: the NF4 base is for causal LMs; %s is an encoder (set it to none)", cs.quantization, snap.ModelType)
	}
	tok, err := loadTokenizer(tokFiles, tokDir)
	if err != nil {
		return nil, err
	}
	sp, err := encoder.PairTokensOf(tok)
	if err != nil {
		return nil, err
	}
	store := gomlxmodel.NewStore()
	ec, err := encoder.ConfigOf(snap)
	if err != nil {
		return nil, err
	}
	// Before any weight is read: an id past the embedding would fail inside a graph.
	if err := tok.CheckFits(ec.Vocab, snap.Dir); err != nil {
		return nil, err
	}
	enc, err := encoder.Load(ctx, snap, store, l, seed)
	if err != nil {
		return nil, err
	}
	enc.SetCompute(encoder.Compute{BF16: cs.bf16, GradientCheckpointing: cs.checkpointing})
	if err := enc.AddClassifier(1, seed); err != nil {
		return nil, err
	}
	for v := range store.IterVariables() {
		if v.Trainable && !strings.HasPrefix(v.Path(), model.ModelScope+"/") {
			return nil, fmt.Errorf("hf/encoder keeps variable %s outside %s/, where the training loop trains: encoder_cls cannot be trained yet", v.Path(), model.ModelScope)
		}
	}
	m := &encoderCLS{snap: snap, enc: enc, store: store, backend: backend, lora: l, tok: tok, sp: sp, set: set, maxLen: maxLen}
	m.sc, err = newScorerOn(backend, store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		return []*Node{m.logits(scope, in[0], in[1], in[2])}
	})
	return m, err
}

// aspectText is the first segment of the pair: the aspect's name and description.
func aspectText(set, code string) string {
	name := AspectName(set, code)
	if a, ok := dataset.LookupAspect(set, code); ok {
		return name + ": " + a.Description
	}
	return name
}

// input is the pair's ids and token types.
func (m *encoderCLS) input(sentence, aspect string) (Example, error) {
	ids, types := encoder.Pair(m.tok, m.sp, aspectText(m.set, aspect), sentence, m.maxLen)
	return Example{Tokens: ids, Types: types, Weight: 1}, nil
}

// logits is the classifier's logit [B] for tokens, types and mask [B, T].
func (m *encoderCLS) logits(scope *gomlxmodel.Scope, tokens, types, mask *Node) *Node {
	h := m.enc.Hidden(scope, tokens, types, maskOf(mask))
	return Squeeze(m.enc.Classify(scope, m.enc.Pooled(scope, h)), 1)
}

// loss is the training graph over an encoderBatch: tokens, types, mask, y, w.
func (m *encoderCLS) loss(scope *gomlxmodel.Scope, in []*Node) *Node {
	return weightedBCE(m.logits(scope, in[0], in[1], in[2]), in[3], in[4])
}

// encoderBatch pads pairs on the right: tokens, types, mask [B, T], y [B], w [B].
func encoderBatch(exs []Example, pad int32) training.Batch {
	tokens, mask, t := padTokens(exs, pad)
	types := make([]int32, len(exs)*t)
	y := make([]float32, len(exs))
	w := make([]float32, len(exs))
	ntok := 0
	for b, e := range exs {
		copy(types[b*t:], e.Types)
		y[b], w[b] = e.Target, e.Weight
		ntok += len(e.Tokens)
	}
	return training.Batch{
		Inputs:   []any{tokens, tensors.FromFlatDataAndDimensions(types, len(exs), t), mask, tensors.FromFlatDataAndDimensions(y, len(exs)), tensors.FromFlatDataAndDimensions(w, len(exs))},
		Examples: len(exs), Tokens: ntok,
	}
}

// score returns the probability of relevance of each pair.
func (m *encoderCLS) score(exs []Example) ([]float32, error) {
	out := make([]float32, 0, len(exs))
	for i := 0; i < len(exs); i += scoreBatch {
		b := encoderBatch(exs[i:min(i+scoreBatch, len(exs))], int32(m.sp.SEP))
		res, err := m.sc.call(b.Inputs[:3]...)
		if err != nil {
			return nil, err
		}
		tensors.ConstFlatData(res[0], func(flat []float32) {
			for _, x := range flat {
				out = append(out, sigmoid(float64(x)))
			}
		})
	}
	return out, nil
}

// Store implements trainable.
func (m *encoderCLS) Store() *gomlxmodel.Store { return m.store }

// Trained implements trainable: adapters and head with LoRA, everything with rank 0.
func (m *encoderCLS) Trained(path string) bool {
	if !strings.HasPrefix(path, model.ModelScope+"/") {
		return false
	}
	if m.lora.Rank == 0 {
		return true
	}
	v := m.store.GetVariable(path)
	return v != nil && v.Trainable
}

// WriteInterop implements trainable: PEFT's adapter with the classifier as a module to save
// (SEQ_CLS), or full/ with rank 0.
func (m *encoderCLS) WriteInterop(outDir string) error {
	// PEFT matches target_modules against BERT's module names: the Llama names the config accepts
	// for both families are written as the BERT layers they select.
	f, _ := family.Lookup(m.snap.ModelType)
	l := m.lora
	l.TargetModules = f.SelectedTargets(m.lora.TargetModules)
	return writeInterop(outDir, m.snap.Dir, peft.TaskSeqCls, l, []string{"classifier"}, m.enc.HeadVariables(), m.enc.BaseVariables(), m.enc.LoRAVariables())
}

package pretrained

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
)

// HeadScope holds the classification head of lm_cls: HeadScope + "/score.weight" [1, Hidden], no
// bias, as transformers' LlamaForSequenceClassification.score (num_labels 1, read through a
// sigmoid), so that the export is that class's checkpoint.
const HeadScope = model.ModelScope + "/head"

// scoreKey is the head's Hugging Face (and PEFT modules_to_save) name.
const scoreKey = "score.weight"

// causalLM is a loaded decoder with its store, backend and chat, plus the lm_cls head when the
// tracker uses one.
type causalLM struct {
	snap    *snapshot.Snapshot
	dec     *decoder.Model
	store   *gomlxmodel.Store
	backend compute.Backend
	head    *gomlxmodel.Variable // lm_cls only
	lora    config.LoRA
}

// computeSettings says how a pretrained model's graphs are computed: bf16 mixed precision, and in
// training graphs gradient checkpointing (hf/decoder's and hf/encoder's Compute).
type computeSettings struct {
	bf16, checkpointing bool
	// flash is train.attention resolved (config.ResolveAttention): cuDNN's fused attention in the
	// decoder's graphs (training runs only; loaded checkpoints compute eager).
	flash bool
	// quantization is Meta.Quantization: "nf4" keeps the frozen base's projections as NF4 codes.
	quantization string
}

// metaQuantization is Meta.Quantization for train.quantization q: "nf4", or empty for none (the
// checkpoints written before the key existed).
func metaQuantization(q string) string {
	if q == config.QuantizationNF4 {
		return q
	}
	return ""
}

// metaPrecision is Meta.Precision for train.precision p resolved on the backend named backend:
// "bf16", or empty for float32 (the checkpoints written before the key existed).
func metaPrecision(p, backend string) string {
	if config.ResolvePrecision(p, backend) == config.PrecisionBF16 {
		return config.PrecisionBF16
	}
	return ""
}

// loadCausalLM loads the snapshot into a new store, with adapters per l and, when withHead, a
// score head drawn N(0, 0.02²) from seed (transformers' initializer_range default), computing as cs
// says.
func loadCausalLM(ctx context.Context, backend compute.Backend, snap *snapshot.Snapshot, l config.LoRA, seed int64, withHead bool, cs computeSettings) (*causalLM, error) {
	seed = l.Seed(seed)
	store := gomlxmodel.NewStore()
	quantization := decoder.QuantNone
	if cs.quantization == config.QuantizationNF4 {
		quantization = decoder.QuantNF4
	}
	dec, err := decoder.LoadQuantized(ctx, snap, store, l, seed, quantization)
	if err != nil {
		return nil, err
	}
	dec.SetCompute(decoder.Compute{BF16: cs.bf16, GradientCheckpointing: cs.checkpointing, FlashAttention: cs.flash})
	m := &causalLM{snap: snap, dec: dec, store: store, backend: backend, lora: l}
	if withHead {
		h := dec.Config().Hidden
		r := rand.New(rand.NewPCG(uint64(seed), 0x5c07e))
		w := make([]float32, h)
		for i := range w {
			w[i] = float32(r.NormFloat64() * 0.02)
		}
		t := tensors.FromFlatDataAndDimensions(w, 1, h)
		if m.head, err = store.Scope(HeadScope).CreateVariable(scoreKey, t); err != nil {
			return nil, fmt.Errorf("pretrained: head: %w", err)
		}
	}
	return m, nil
}

// trainable is a loaded model the training session fine-tunes: its store, which of its variables
// are trained (and so checkpointed), and the Hugging Face layouts of the trained ones.
type trainable interface {
	Store() *gomlxmodel.Store
	Trained(path string) bool
	WriteInterop(outDir string) error
}

// Store implements trainable.
func (m *causalLM) Store() *gomlxmodel.Store { return m.store }

// Trained implements trainable.
func (m *causalLM) Trained(path string) bool { return m.trained(path) }

// WriteInterop implements trainable: PEFT's adapter directory (CAUSAL_LM, or SEQ_CLS with the
// lm_cls head), or full/ with rank 0.
func (m *causalLM) WriteInterop(outDir string) error {
	task, head, modules := peft.TaskCausalLM, map[string]*gomlxmodel.Variable{}, []string(nil)
	if m.head != nil {
		task, head[scoreKey], modules = peft.TaskSeqCls, m.head, []string{"score"}
	}
	return writeInterop(outDir, m.snap.Dir, task, m.lora, modules, head, m.dec.BaseVariables(), m.dec.LoRAVariables())
}

// trained reports whether the variable at path is trained, and so saved in checkpoints: the
// adapters and the head with LoRA, every model variable with full fine-tuning (rank 0).
func (m *causalLM) trained(path string) bool {
	if !strings.HasPrefix(path, model.ModelScope+"/") {
		return false
	}
	if m.lora.Rank == 0 {
		return true
	}
	return !strings.HasPrefix(path, decoder.BaseScope+"/")
}

// Batch inputs (see batches.go): tokens [B, T] int32, mask [B, T] float32, then per graph:
//   answer loss: pos [B, K] int32, tgt [B, K] int32, w [B, K] float32;
//   classification loss: last [B, 1] int32, y [B] float32, w [B] float32;
//   yes/no scores: pos [B, 1] int32 -> [B, 2] logits;
//   classification scores: last [B, 1] int32 -> [B] logits.

// answerLoss is the loss graph of the generative tracker and of the summarizer.
func (m *causalLM) answerLoss(scope *gomlxmodel.Scope, in []*Node) *Node {
	hidden := m.dec.Hidden(scope, in[0], maskOf(in[1]))
	logits := m.dec.Logits(scope, gatherPositions(hidden, in[2]))
	return tokenNLL(logits, in[3], in[4])
}

// Packed batch inputs (TASK.train.packing; see packedBatch): tokens, segments, positions [R, L]
// int32, then pos [R, K], tgt [R, K], w [R, K] (answer loss) or last [R, E], y [R, E], w [R, E]
// (classification loss): the same terms as the padded batch's, at their slots in the rows.

// packedAnswerLoss is answerLoss over packed rows.
func (m *causalLM) packedAnswerLoss(scope *gomlxmodel.Scope, in []*Node) *Node {
	hidden := m.dec.HiddenPacked(scope, in[0], in[1], in[2])
	logits := m.dec.Logits(scope, gatherPositions(hidden, in[3]))
	return tokenNLL(logits, in[4], in[5])
}

// packedClsLoss is clsLoss over packed rows: the lm_cls logits [R, E] of the examples' last
// tokens, weighted as the padded batch's (w 0 for the empty places).
func (m *causalLM) packedClsLoss(scope *gomlxmodel.Scope, in []*Node) *Node {
	hidden := m.dec.HiddenPacked(scope, in[0], in[1], in[2])
	r, e := in[3].Shape().Dimensions[0], in[3].Shape().Dimensions[1]
	h := Reshape(gatherPositions(hidden, in[3]), r*e, m.dec.Config().Hidden) // [R*E, H]
	w := m.head.NodeValue(in[0].Graph())                                     // [1, H]
	logits := Reshape(Einsum("bh,oh->bo", h, w), r, e)
	return weightedBCE(logits, in[4], in[5])
}

// clsLogits is the lm_cls logit [B] of the token at last [B, 1].
func (m *causalLM) clsLogits(scope *gomlxmodel.Scope, tokens, mask, last *Node) *Node {
	hidden := m.dec.Hidden(scope, tokens, maskOf(mask))
	h := Squeeze(gatherPositions(hidden, last), 1) // [B, H]
	w := m.head.NodeValue(tokens.Graph())          // [1, H]
	return Squeeze(Einsum("bh,oh->bo", h, w), 1)
}

// clsLoss is the loss graph of the lm_cls tracker.
func (m *causalLM) clsLoss(scope *gomlxmodel.Scope, in []*Node) *Node {
	return weightedBCE(m.clsLogits(scope, in[0], in[1], in[2]), in[3], in[4])
}

// scorer runs one of the scoring graphs; the Exec is built once and caches a graph per shape.
type scorer struct {
	mu   sync.Mutex
	exec *gomlxmodel.Exec
}

func newScorer(m *causalLM, fn func(scope *gomlxmodel.Scope, in []*Node) []*Node) (*scorer, error) {
	return newScorerOn(m.backend, m.store, fn)
}

func newScorerOn(backend compute.Backend, store *gomlxmodel.Store, fn func(scope *gomlxmodel.Scope, in []*Node) []*Node) (*scorer, error) {
	e, err := gomlxmodel.NewExec(backend, store, fn)
	if err != nil {
		return nil, fmt.Errorf("pretrained: %w", err)
	}
	e.SetMaxCache(-1)
	return &scorer{exec: e}, nil
}

func (s *scorer) call(args ...any) ([]*tensors.Tensor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exec.Call(args...)
}

// yesNoScorer returns the logits of the answer tokens yes and no at position pos [B, 1].
func (m *causalLM) yesNoScorer(yes, no int) (*scorer, error) {
	return newScorer(m, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		hidden := m.dec.Hidden(scope, in[0], maskOf(in[1]))
		// Only the two answer rows of the head: the vocabulary's logits are never needed here.
		return []*Node{m.dec.LogitsOf(Squeeze(gatherPositions(hidden, in[2]), 1), []int{yes, no})} // [B, 2]
	})
}

// clsScorer returns the lm_cls logits [B].
func (m *causalLM) clsScorer() (*scorer, error) {
	return newScorer(m, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		return []*Node{m.clsLogits(scope, in[0], in[1], in[2])}
	})
}

// lossScorer returns the answer loss of a batch without training (dev loss).
func (m *causalLM) lossScorer() (*scorer, error) {
	return newScorer(m, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
		return []*Node{m.answerLoss(scope, in)}
	})
}

// RenormYes is P(yes) renormalised over {yes, no}: exp(ly) / (exp(ly) + exp(ln)), computed as
// sigmoid(ly - ln), which neither overflows nor depends on the rest of the vocabulary.
func RenormYes(ly, ln float32) float32 {
	return sigmoid(float64(ly) - float64(ln))
}

func sigmoid(x float64) float32 {
	if x >= 0 {
		return float32(1 / (1 + math.Exp(-x)))
	}
	e := math.Exp(x)
	return float32(e / (1 + e))
}

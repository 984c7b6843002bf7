package randsnap

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
)

// Encoder describes a random BERT snapshot (model_type bert), e.g. PubMedBERT-shaped:
// Vocab 30522, Hidden 768, Layers 12, Heads 12, Intermediate 3072; or, with ModelType "roberta",
// a RoBERTa one (pad_token_id 1, positions offset past it, one token type, a byte-level BPE
// tokenizer with RobertaProcessing); or, with ModelType "deberta-v2", a DeBERTa-v3-shaped one
// (relative attention with position buckets, p2c and c2p, shared attention keys, no absolute
// positions, no token types, ContextPooler; a SentencePiece-style Unigram tokenizer).
type Encoder struct {
	// ModelType is "bert" (the zero value), "roberta" or "deberta-v2".
	ModelType string
	// Labels, when set, makes a sequence-classification snapshot: config.json's id2label/label2id
	// and the classification head (BertForSequenceClassification's classifier, which needs
	// Pooler; RobertaClassificationHead's classifier.dense and classifier.out_proj; or
	// DebertaV2ForSequenceClassification's pooler.dense and classifier).
	Labels []string
	// HeadBias, when set (one value per label), is the classifier's output bias: a test can make
	// one label win whatever the input, the random weights being small.
	HeadBias []float32
	// Sizes, as config.json names them: vocab_size, hidden_size, num_hidden_layers,
	// num_attention_heads, intermediate_size, max_position_embeddings (0: 512), type_vocab_size
	// (0: 2).
	Vocab, Hidden, Layers, Heads, Intermediate, MaxPositions, TypeVocab int
	// Prefix is put before every encoder key: "bert." as BERT, PubMedBERT and BioBERT are
	// published (BertFor* checkpoints), "" as BertModel.save_pretrained writes.
	Prefix string
	// Pooler writes BertPooler's weights (pooler.dense); PubMedBERT (BertForMaskedLM) has none.
	Pooler bool
	// DType of the weights: Float32 (the zero value is taken as Float32), BFloat16 or Float16.
	DType dtypes.DType
	// Std is the standard deviation of the weights (0: 0.02, transformers' initializer_range).
	Std float64
	// Seed makes the weights reproducible.
	Seed uint64
	// TokenizerDir, when set, is a directory whose tokenizer.json and tokenizer_config.json are
	// copied; otherwise a small WordPiece tokenizer fitting in Vocab is written.
	TokenizerDir string
	// Extra config.json keys (override the generated ones).
	Extra map[string]any
}

func (e Encoder) roberta() bool { return e.ModelType == "roberta" }

func (e Encoder) deberta() bool { return e.ModelType == "deberta-v2" }

// debertaBuckets is position_buckets of a random DeBERTa: DeBERTa-v3's 256, fewer when
// max_position_embeddings (max_relative_positions) is small.
func (e Encoder) debertaBuckets() int { return min(256, e.maxPositions()/2) }

func (e Encoder) maxPositions() int {
	if e.MaxPositions > 0 {
		return e.MaxPositions
	}
	if e.roberta() {
		return 514
	}
	return 512
}

func (e Encoder) typeVocab() int {
	if e.TypeVocab > 0 {
		return e.TypeVocab
	}
	if e.deberta() {
		return 0
	}
	if e.roberta() {
		return 1
	}
	return 2
}

func (e Encoder) padID() int {
	if e.roberta() {
		return 1
	}
	return 0
}

// layout returns the encoder's layout: hf/encoder's own list (hf/encoder/layout) for these sizes
// and the features config.json declares (DeBERTa-v3's: relative attention over position buckets
// with shared keys and its LayerNorm, no absolute positions nor token types).
func (e Encoder) layout() layout.Layout {
	l := layout.Layout{Vocab: e.Vocab, Hidden: e.Hidden, Layers: e.Layers, Intermediate: e.Intermediate,
		MaxPositions: e.maxPositions(), TypeVocab: e.typeVocab()}
	if e.deberta() {
		l.Disentangled, l.EmbeddingSize, l.RelativeAttention = true, e.Hidden, true
		l.MaxRelativePositions, l.PositionBuckets = e.maxPositions(), e.debertaBuckets()
		l.C2P, l.P2C, l.ShareAttKey, l.NormRelEmbed = true, true, true, true
	}
	return l
}

// specs returns the tensor names and shapes of the encoder, in Hugging Face's keys: the layout's
// tensors under Prefix (a DeBERTa's pooler beside it, as DebertaV2ForSequenceClassification keeps
// it), with the pooler when Pooler (a DeBERTa classifier always has its ContextPooler), and the
// classification head with Labels.
func (e Encoder) specs() map[string]shapes.Shape {
	dt := e.DType
	if dt == dtypes.InvalidDType {
		dt = dtypes.Float32
	}
	l := e.layout()
	out := map[string]shapes.Shape{}
	for rel, dims := range l.Tensors(e.Pooler || (e.deberta() && len(e.Labels) > 0)) {
		key := e.Prefix + rel
		if l.TopLevel(rel) {
			key = rel
		}
		out[key] = shapes.Make(dt, dims...)
	}
	if n := len(e.Labels); n > 0 {
		for _, lin := range l.Head(n, e.roberta()) {
			out[lin.Key+".weight"] = shapes.Make(dt, lin.Out, lin.In)
			out[lin.Key+".bias"] = shapes.Make(dt, lin.Out)
		}
	}
	return out
}

// headBiasKey is the key of the classifier's output bias: its head's last Linear's.
func (e Encoder) headBiasKey() string {
	head := e.layout().Head(len(e.Labels), e.roberta())
	return head[len(head)-1].Key + ".bias"
}

// config returns config.json's content, with BertConfig's keys.
func (e Encoder) config() map[string]any {
	family, mt := "Bert", "bert"
	switch {
	case e.roberta():
		family, mt = "Roberta", "roberta"
	case e.deberta():
		family, mt = "DebertaV2", "deberta-v2"
	}
	arch := family + "ForMaskedLM"
	if e.Prefix == "" {
		arch = family + "Model"
	}
	if len(e.Labels) > 0 {
		arch = family + "ForSequenceClassification"
	}
	c := map[string]any{
		"architectures":                []string{arch},
		"model_type":                   mt,
		"vocab_size":                   e.Vocab,
		"hidden_size":                  e.Hidden,
		"num_hidden_layers":            e.Layers,
		"num_attention_heads":          e.Heads,
		"intermediate_size":            e.Intermediate,
		"max_position_embeddings":      e.maxPositions(),
		"type_vocab_size":              e.typeVocab(),
		"hidden_act":                   "gelu",
		"hidden_dropout_prob":          0.1,
		"attention_probs_dropout_prob": 0.1,
		"layer_norm_eps":               1e-12,
		"initializer_range":            0.02,
		"pad_token_id":                 e.padID(),
		"position_embedding_type":      "absolute",
		"torch_dtype":                  map[dtypes.DType]string{dtypes.BFloat16: "bfloat16", dtypes.Float16: "float16"}[e.DType],
	}
	if c["torch_dtype"] == "" {
		c["torch_dtype"] = "float32"
	}
	if e.deberta() {
		// DeBERTa-v3's keys (microsoft/deberta-v3-base's config.json), sized to this model.
		delete(c, "position_embedding_type")
		c["layer_norm_eps"] = 1e-7
		c["relative_attention"] = true
		c["max_relative_positions"] = -1
		c["position_buckets"] = e.debertaBuckets()
		c["pos_att_type"] = []string{"p2c", "c2p"}
		c["share_att_key"] = true
		c["norm_rel_ebd"] = "layer_norm"
		c["position_biased_input"] = false
		c["pooler_hidden_size"] = e.Hidden
		c["pooler_hidden_act"] = "gelu"
		c["pooler_dropout"] = 0
	}
	if len(e.Labels) > 0 {
		id2, l2 := map[string]string{}, map[string]int{}
		for i, l := range e.Labels {
			id2[fmt.Sprint(i)], l2[l] = l, i
		}
		c["id2label"], c["label2id"] = id2, l2
	}
	for k, v := range e.Extra {
		c[k] = v
	}
	return c
}

// WriteEncoder writes the snapshot to dir (created if needed; files replaced atomically).
func WriteEncoder(dir string, e Encoder) error {
	if e.Vocab <= 0 || e.Hidden <= 0 || e.Layers <= 0 || e.Heads <= 0 || e.Intermediate <= 0 {
		return fmt.Errorf("randsnap: vocab, hidden, layers, heads and intermediate must be positive")
	}
	if e.Hidden%e.Heads != 0 {
		return fmt.Errorf("randsnap: hidden %d is not a multiple of heads %d", e.Hidden, e.Heads)
	}
	switch {
	case e.ModelType != "" && e.ModelType != "bert" && !e.roberta() && !e.deberta():
		return fmt.Errorf("randsnap: model type %q: want bert, roberta or deberta-v2", e.ModelType)
	case e.deberta() && e.maxPositions() < 8:
		return fmt.Errorf("randsnap: max positions %d: a DeBERTa needs at least 8 (position buckets)", e.maxPositions())
	case len(e.Labels) > 0 && !e.roberta() && !e.deberta() && !e.Pooler:
		return fmt.Errorf("randsnap: a BERT sequence classifier needs the pooler")
	case e.HeadBias != nil && len(e.HeadBias) != len(e.Labels):
		return fmt.Errorf("randsnap: %d head biases for %d labels", len(e.HeadBias), len(e.Labels))
	}
	switch e.DType {
	case dtypes.InvalidDType, dtypes.Float32, dtypes.BFloat16, dtypes.Float16:
	default:
		return fmt.Errorf("randsnap: dtype %s: want float32, bfloat16 or float16", e.DType)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("randsnap: %w", err)
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.ConfigFile), e.config()); err != nil {
		return err
	}
	if e.roberta() {
		if err := writeRobertaBPE(dir, e.TokenizerDir, e.Vocab, e.maxPositions()-2); err != nil {
			return err
		}
	} else if e.deberta() {
		if err := writeUnigram(dir, e.TokenizerDir, e.Vocab, e.maxPositions()); err != nil {
			return err
		}
	} else if err := writeWordPiece(dir, e.TokenizerDir, e.Vocab, e.maxPositions()); err != nil {
		return err
	}
	std := e.Std
	if std == 0 {
		std = 0.02
	}
	specs := e.specs()
	return tensorio.WriteTensorsFunc(filepath.Join(dir, snapshot.WeightsFile), specs, map[string]string{"format": "pt"},
		func(name string) (*tensors.Tensor, error) {
			if name == e.headBiasKey() && e.HeadBias != nil {
				return snapshot.FromFloat32(append([]float32(nil), e.HeadBias...), specs[name].DType, len(e.HeadBias))
			}
			return randomTensor(specs[name], name, e.Seed, std, false)
		})
}

// writeRobertaBPE copies the tokenizer files from src, or writes a RoBERTa byte-level BPE
// tokenizer with no merges whose ids fit in vocab: <s>, <pad>, </s>, <unk>, then the byte-level
// symbols of bytes 0..255 while ids remain (a test tokenizer: every text is one token per byte),
// with RoBERTa's ByteLevel pre-tokenizer and RobertaProcessing post-processor.
func writeRobertaBPE(dir, src string, vocab, maxLen int) error {
	if src != "" {
		return writeTokenizer(dir, src, vocab)
	}
	specials := []string{"<s>", "<pad>", "</s>", "<unk>"}
	v, added := byteLevelVocab(specials, vocab)
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}, "trim_offsets": true, "add_prefix_space": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": v, "merges": []string{}},
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerFile), tok); err != nil {
		return err
	}
	cfg := map[string]any{
		"bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>", "unk_token": "<unk>",
		"pad_token": "<pad>", "model_max_length": maxLen, "tokenizer_class": "RobertaTokenizer",
		"add_prefix_space": false, "trim_offsets": true,
	}
	return atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerConfigFile), cfg)
}

// writeWordPiece copies the tokenizer files from src, or writes a BERT WordPiece tokenizer whose
// ids fit in vocab: [PAD], [UNK], [CLS], [SEP], [MASK], then single characters and their "##"
// continuations while ids remain (a test tokenizer: every lower-case word splits into characters).
func writeWordPiece(dir, src string, vocab, maxLen int) error {
	if src != "" {
		return writeTokenizer(dir, src, vocab)
	}
	specials := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	v, added := specialTokens(specials)
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789.,;:()-/%=+<>"
	for _, c := range chars {
		if len(v) < vocab {
			v[string(c)] = len(v)
		}
	}
	for _, c := range chars {
		if len(v) < vocab {
			v["##"+string(c)] = len(v)
		}
	}
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": clsSepTemplate(2, 3),
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": v},
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerFile), tok); err != nil {
		return err
	}
	cfg := map[string]any{
		"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]",
		"do_lower_case": true, "model_max_length": maxLen, "tokenizer_class": "BertTokenizer",
		"clean_up_tokenization_spaces": true,
	}
	return atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerConfigFile), cfg)
}

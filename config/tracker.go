package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Tracker configures the tracker: a binary classifier that scores how relevant each sentence of an
// abstract is to an aspect (model/tracker), and its training (the shared loop, tracker.train).
type Tracker struct {
	// Architecture picks the model: "lexical-context" (the default: the strong lexical baseline,
	// per aspect TF-IDF of word 1-2-grams + 3 position features and a balanced logistic regression
	// with C = 10, with the context rescorer stacked on its inner out-of-fold logits; no network, no
	// training loop: the best tracker of the 5-fold cross-validation, issue 24), "transformer"
	// (encoder over [aspect] + sentence tokens) or "ngram" (bag of hashed word n-grams with
	// aspect-conditioned attention pooling). lexical-context reads only threshold,
	// lexical_calibration_folds (its inner folds) and seed; the other keys of this section
	// configure the two networks.
	Architecture string `mapstructure:"architecture" yaml:"architecture"`
	// DModel is the width of embeddings and hidden states.
	DModel int `mapstructure:"d_model" yaml:"d_model"`
	// NumLayers is the number of transformer encoder layers.
	NumLayers int `mapstructure:"num_layers" yaml:"num_layers"`
	// NumHeads is the number of attention heads; d_model must be a multiple of it.
	NumHeads int `mapstructure:"num_heads" yaml:"num_heads"`
	// FFNDim is the hidden width of each encoder layer's feed-forward block.
	FFNDim int `mapstructure:"ffn_dim" yaml:"ffn_dim"`
	// MaxLen caps the tokens per sentence (longer sentences are truncated), aspect token included.
	MaxLen int `mapstructure:"max_len" yaml:"max_len"`
	// Dropout is the dropout rate used during training.
	Dropout float64 `mapstructure:"dropout" yaml:"dropout"`
	// Lexical adds a per-aspect linear bag-of-words term to the logit (a learned weight per aspect
	// and token, and per aspect and hashed bigram), averaged over the sentence: the "wide" part of a
	// wide-and-deep model, which carries most of the signal on little data.
	Lexical bool `mapstructure:"lexical" yaml:"lexical"`
	// LexicalL2 is the L2 penalty (added to the mean loss) on the lexical weights: the
	// regularisation of a logistic regression, which sparse features need more than weight decay.
	LexicalL2 float64 `mapstructure:"lexical_l2" yaml:"lexical_l2"`
	// LexicalWarmStart fits the lexical term (with the head's per-aspect position weights and bias)
	// as a full-batch logistic regression before training, which then starts from it; the start is
	// evaluated on dev and kept if training never beats it.
	LexicalWarmStart bool `mapstructure:"lexical_warm_start" yaml:"lexical_warm_start"`
	// NgramBuckets is the number of hash buckets of the ngram architecture's n-gram embeddings.
	NgramBuckets int `mapstructure:"ngram_buckets" yaml:"ngram_buckets"`
	// NgramOrder is the longest n-gram of the ngram architecture (1 = unigrams only).
	NgramOrder int `mapstructure:"ngram_order" yaml:"ngram_order"`
	// Imbalance handles the rarity of relevant sentences: "oversample" repeats each positive
	// Oversample times per epoch in all (the paper adds 6 more copies: 7), "pos_weight" weights positives in the loss
	// (PosWeight, or #neg/#pos when PosWeight is 0), "none" does neither.
	Imbalance string `mapstructure:"imbalance" yaml:"imbalance"`
	// Oversample is the number of copies of each positive row per epoch when imbalance is oversample.
	Oversample int `mapstructure:"oversample" yaml:"oversample"`
	// PosWeight is the loss weight of positive rows when imbalance is pos_weight; 0 means #neg/#pos.
	PosWeight float64 `mapstructure:"pos_weight" yaml:"pos_weight"`
	// Calibrate shifts the logits after training by the constant that maximises the dev F1 at
	// Threshold (folded into the head's bias, so the checkpoint carries it): loss weighting or
	// oversampling for the imbalance otherwise leaves the probabilities badly placed around 0.5.
	Calibrate bool `mapstructure:"calibrate" yaml:"calibrate"`
	// LexicalCalibrationFolds, when >= 2, adds to each aspect's bias of the lexical warm start (and
	// of the TF-IDF + LR baseline) the logit shift that maximises the F1 at Threshold of the
	// regression's out-of-fold scores in an inner K-fold by abstract of the train split; 0 = off.
	// Only the train split is read, so dev and test stay unseen.
	LexicalCalibrationFolds int `mapstructure:"lexical_calibration_folds" yaml:"lexical_calibration_folds"`
	// ContextRescoring adds a second stage over the tracker's logits that sees each sentence's
	// instance (its logit against the abstract's best, its neighbours' logits):
	// tracker.ContextRescorer, fitted by tracksum-train on the out-of-fold lexical logits of the
	// inner folds of lexical_calibration_folds (which must be >= 2) of the train split, stored in
	// the checkpoint (context.json) and applied by infer and serve to each abstract.
	ContextRescoring bool `mapstructure:"context_rescoring" yaml:"context_rescoring"`
	// ReportTest scores the finished model on the test split too (report.json "test" and the
	// log). Off by default: a test score seen after every run invites tuning on it; model choices
	// belong to the dev split or to cross-validation. It changes no weight (Unrecorded).
	ReportTest bool `mapstructure:"report_test" yaml:"report_test"`
	// Threshold is the probability from which a sentence counts as relevant (dev metrics, infer).
	Threshold float64 `mapstructure:"threshold" yaml:"threshold"`
	// Train holds the training-loop hyperparameters.
	Train TrainLoop `mapstructure:"train" yaml:"train"`

	// Pretrained is a local Hugging Face snapshot directory (config.json, weights, tokenizer) to
	// fine-tune instead of training the from-scratch model above (train --pretrained DIR); empty =
	// from scratch. The architecture keys above are then unused: the snapshot's config.json decides.
	Pretrained string `mapstructure:"pretrained" yaml:"pretrained"`
	// Head is the tracker's output on a pretrained model: encoder_cls, lm_cls, generative or auto
	// (encoder_cls for an encoder, lm_cls for a causal LM); see the Head* constants.
	Head string `mapstructure:"head" yaml:"head"`
	// MaxSeqLen caps the tokens of one pretrained prompt (chat template, aspect and sentence,
	// answer); longer prompts are truncated (paper: 128).
	MaxSeqLen int `mapstructure:"max_seq_len" yaml:"max_seq_len"`
	// LoRA configures the adapters on the pretrained model (rank 0 = full fine-tuning).
	LoRA LoRA `mapstructure:"lora" yaml:"lora"`
	// ChatTemplate is the chat template a causal LM's prompts are rendered with: "snapshot" (its
	// tokenizer_config.json's), a named one of hf/chattemplate ("llama-3": Unsloth's, which the
	// TracSum authors trained with), or a file holding a Jinja template. The checkpoint's copy of
	// tokenizer_config.json holds the one trained with, so inference renders it too.
	ChatTemplate string `mapstructure:"chat_template" yaml:"chat_template"`
}

// TrackerLexicalContext is the tracker.architecture of the lexical tracker with the context
// rescorer (model/tracker.LexicalBaseline), the default.
const TrackerLexicalContext = "lexical-context"

// TrackerArchitectures lists the accepted values of tracker.architecture.
var TrackerArchitectures = []string{TrackerLexicalContext, "transformer", "ngram"}

// TrackerImbalance lists the accepted values of tracker.imbalance.
var TrackerImbalance = []string{"oversample", "pos_weight", "none"}

// DefaultTracker returns the built-in tracker settings: the lexical-context tracker (the network
// keys keep the 2-layer d=128 encoder's values, used with architecture transformer). They equal
// configs/default.yaml (TestDefaultsInTwoPlaces), so a run without --config trains the tracker the
// README's figures describe.
func DefaultTracker() Tracker {
	train := DefaultTrainLoop()
	train.LearningRate = 5e-4
	train.WarmupSteps = 100
	train.Epochs = 4
	train.Patience = 2
	train.MaxSteps = 1100
	return Tracker{
		Architecture:     TrackerLexicalContext,
		DModel:           128,
		NumLayers:        2,
		NumHeads:         4,
		FFNDim:           512,
		MaxLen:           64,
		Dropout:          0.2,
		Lexical:          true,
		LexicalL2:        4e-5,
		LexicalWarmStart: true,
		NgramBuckets:     1 << 14,
		NgramOrder:       2,
		Imbalance:        "pos_weight",
		Oversample:       6,
		PosWeight:        3,
		Threshold:        0.5,
		Calibrate:        false,
		Train:            train,

		LexicalCalibrationFolds: 5,
		ContextRescoring:        true,

		Pretrained:   "",
		Head:         HeadAuto,
		MaxSeqLen:    128,
		ChatTemplate: ChatTemplateSnapshot,
		LoRA:         DefaultLoRA(),
	}
}

// Validate reports invalid tracker settings, naming each key.
func (c Tracker) Validate() error {
	var errs []error
	bad := func(key, msg string) { errs = append(errs, fmt.Errorf("tracker.%s: %s", key, msg)) }
	if !slices.Contains(TrackerArchitectures, c.Architecture) {
		bad("architecture", fmt.Sprintf("must be one of %v, got %q", TrackerArchitectures, c.Architecture))
	}
	if c.DModel < 1 {
		bad("d_model", "must be >= 1")
	}
	if c.NumLayers < 0 {
		bad("num_layers", "must be >= 0")
	}
	if c.NumHeads < 1 {
		bad("num_heads", "must be >= 1")
	} else if c.DModel%c.NumHeads != 0 {
		bad("num_heads", fmt.Sprintf("must divide d_model (%d), got %d", c.DModel, c.NumHeads))
	}
	if c.FFNDim < 1 {
		bad("ffn_dim", "must be >= 1")
	}
	if c.MaxLen < 2 {
		bad("max_len", "must be >= 2")
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		bad("dropout", "must be in [0, 1)")
	}
	if c.LexicalL2 < 0 {
		bad("lexical_l2", "must be >= 0")
	}
	if c.NgramBuckets < 1 {
		bad("ngram_buckets", "must be >= 1")
	}
	if c.NgramOrder < 1 || c.NgramOrder > 4 {
		bad("ngram_order", "must be in [1, 4]")
	}
	if !slices.Contains(TrackerImbalance, c.Imbalance) {
		bad("imbalance", fmt.Sprintf("must be one of %v, got %q", TrackerImbalance, c.Imbalance))
	}
	if c.Oversample < 1 {
		bad("oversample", "must be >= 1")
	}
	if c.PosWeight < 0 {
		bad("pos_weight", "must be >= 0 (0 means #neg/#pos)")
	}
	if c.Threshold <= 0 || c.Threshold >= 1 {
		bad("threshold", "must be in (0, 1)")
	}
	if c.LexicalCalibrationFolds < 0 || c.LexicalCalibrationFolds == 1 {
		bad("lexical_calibration_folds", fmt.Sprintf("must be 0 (off) or >= 2, got %d", c.LexicalCalibrationFolds))
	}
	if c.Architecture == TrackerLexicalContext && c.LexicalCalibrationFolds < 2 {
		bad("lexical_calibration_folds", fmt.Sprintf("must be >= 2 with architecture %s (its context rescorer is fitted on the out-of-fold logits of these inner folds), got %d", TrackerLexicalContext, c.LexicalCalibrationFolds))
	} else if c.ContextRescoring && c.LexicalCalibrationFolds < 2 {
		bad("context_rescoring", "needs lexical_calibration_folds >= 2 (its inner folds give the out-of-fold logits it is fitted on)")
	}
	if !slices.Contains(TrackerHeads, c.Head) {
		bad("head", fmt.Sprintf("must be one of %v, got %q", TrackerHeads, c.Head))
	}
	if c.MaxSeqLen < 8 {
		bad("max_seq_len", fmt.Sprintf("must be >= 8, got %d", c.MaxSeqLen))
	}
	if c.ChatTemplate == "" {
		bad("chat_template", "must be snapshot, a named template ("+strings.Join(ChatTemplateNames, ", ")+") or a template file")
	}
	errs = append(errs, c.LoRA.Validate("tracker.lora"), c.Train.Validate("tracker.train"))
	return errors.Join(errs...)
}

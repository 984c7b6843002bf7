package config

import (
	"strings"
)

// Unread returns the keys of section ("tracker" or "summarizer") that the model c selects there
// does not read, each with why: the lexical-context tracker fits a regression with no network and
// no training loop, each network reads its own architecture's keys, a --pretrained model takes its
// architecture from its snapshot, and a from-scratch model has no adapters or prompts. A key that
// is read only when another says so (tracker.oversample with imbalance oversample) counts as unread
// when that other key says otherwise. tracksum-train warns about the ones given on the command
// line or in the environment, as it refuses --lora-rank without --pretrained.
func (c *Config) Unread(section string) map[string]string {
	out := map[string]string{}
	unread := func(why string, keys ...string) {
		for _, k := range keys {
			for _, leaf := range Keys() {
				if leaf == section+"."+k || strings.HasPrefix(leaf, section+"."+k+".") {
					out[leaf] = why
				}
			}
		}
	}
	// The pretrained-only keys and those of the from-scratch networks, per section.
	var pretrained string
	var pretrainedOnly, scratchOnly []string
	switch section {
	case "tracker":
		pretrained = c.Tracker.Pretrained
		pretrainedOnly = []string{"head", "max_seq_len", "chat_template", "lora", "train.precision", "train.gradient_checkpointing", "train.device_memory", "train.packing", "train.attention"}
		scratchOnly = []string{"architecture", "d_model", "num_layers", "num_heads", "ffn_dim", "max_len", "dropout", "lexical",
			"lexical_l2", "lexical_warm_start", "ngram_buckets", "ngram_order", "calibrate", "lexical_calibration_folds", "context_rescoring"}
	case "summarizer":
		pretrained = c.Summarizer.Pretrained
		pretrainedOnly = []string{"max_seq_len", "max_new_tokens", "chat_template", "prompt_style", "temperature", "top_p", "top_k", "lora", "train.precision", "train.gradient_checkpointing", "train.device_memory", "train.packing", "train.attention"}
		scratchOnly = []string{"d_model", "heads", "ffn_dim", "encoder_layers", "decoder_layers", "dropout", "max_source_len",
			"aspect_conditioning", "gen_vocab_size", "repeat_source_ngrams", "copy_examples", "min_len_ratio", "max_decode_len",
			"copy_chain_bonus", "copy_start_bonus", "word_rule"}
	default:
		return out
	}
	if pretrained != "" {
		unread("a --pretrained model takes its architecture from its snapshot's config.json and is decoded by its own generation settings", scratchOnly...)
		if section == "tracker" {
			unread("the --pretrained tracker scores the dev split only", "report_test")
		}
		c.unreadImbalance(section, unread)
		return out
	}
	unread("it configures a --pretrained model only ("+section+".pretrained is empty: the model is trained from scratch)", pretrainedOnly...)
	if section != "tracker" {
		return out
	}
	t := c.Tracker
	switch t.Architecture {
	case TrackerLexicalContext:
		why := "the lexical-context tracker fits a logistic regression with its context rescorer (always stacked): no network and no training loop (tracker.architecture transformer or ngram reads it)"
		unread(why, "d_model", "num_layers", "num_heads", "ffn_dim", "dropout", "lexical", "lexical_l2", "lexical_warm_start",
			"ngram_buckets", "ngram_order", "imbalance", "oversample", "pos_weight", "calibrate", "context_rescoring", "train")
		return out
	case "ngram":
		unread("the ngram tracker has no transformer layers (tracker.architecture transformer reads it)", "num_layers", "num_heads", "ffn_dim")
	default:
		unread("only the ngram tracker reads it", "ngram_order")
		if !t.Lexical {
			unread("only the lexical term's bigrams and the ngram tracker read it (tracker.lexical is false)", "ngram_buckets")
		}
	}
	if !t.Lexical {
		unread("it configures the lexical term (tracker.lexical is false)", "lexical_l2", "lexical_warm_start")
	}
	if !(t.Lexical && t.LexicalWarmStart) && !t.ContextRescoring {
		unread("its inner folds serve the lexical warm start and the context rescorer, both off", "lexical_calibration_folds")
	}
	c.unreadImbalance(section, unread)
	return out
}

// unreadImbalance marks tracker.oversample and tracker.pos_weight unread unless tracker.imbalance
// picks them (the tracker section only; the lexical-context tracker reads neither).
func (c *Config) unreadImbalance(section string, unread func(why string, keys ...string)) {
	if section != "tracker" {
		return
	}
	if c.Tracker.Imbalance != "oversample" {
		unread("tracker.imbalance is "+c.Tracker.Imbalance+", not oversample", "oversample")
	}
	if c.Tracker.Imbalance != "pos_weight" {
		unread("tracker.imbalance is "+c.Tracker.Imbalance+", not pos_weight", "pos_weight")
	}
}

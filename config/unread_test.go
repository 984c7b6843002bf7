package config

import "testing"

// TestUnread is issue 35 item 19: settings the chosen model does not read were accepted silently
// (--set tracker.context_rescoring=false under lexical-context, --learning-rate for it). Each case
// sets a model and lists keys that must be unread (with a reason) or read.
func TestUnread(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		section string
		mod     func(*Config)
		unread  []string
		read    []string
	}{
		{"lexical-context tracker (the default)", "tracker", func(*Config) {},
			[]string{"tracker.context_rescoring", "tracker.train.learning_rate", "tracker.train.epochs", "tracker.d_model",
				"tracker.imbalance", "tracker.lora.rank", "tracker.head", "tracker.max_seq_len", "tracker.train.precision"},
			[]string{"tracker.threshold", "tracker.lexical_calibration_folds", "tracker.report_test", "tracker.max_len", "tracker.architecture"}},
		{"transformer tracker", "tracker", func(c *Config) { c.Tracker.Architecture = "transformer" },
			[]string{"tracker.ngram_order", "tracker.oversample", "tracker.lora.alpha"},
			[]string{"tracker.num_layers", "tracker.train.learning_rate", "tracker.context_rescoring", "tracker.ngram_buckets",
				"tracker.pos_weight", "tracker.lexical_l2", "tracker.lexical_calibration_folds"}},
		{"transformer tracker without the lexical term", "tracker", func(c *Config) {
			c.Tracker.Architecture, c.Tracker.Lexical, c.Tracker.ContextRescoring = "transformer", false, false
		}, []string{"tracker.ngram_buckets", "tracker.lexical_l2", "tracker.lexical_warm_start", "tracker.lexical_calibration_folds"},
			[]string{"tracker.num_heads", "tracker.dropout"}},
		{"ngram tracker oversampling", "tracker", func(c *Config) { c.Tracker.Architecture, c.Tracker.Imbalance = "ngram", "oversample" },
			[]string{"tracker.num_layers", "tracker.num_heads", "tracker.ffn_dim", "tracker.pos_weight"},
			[]string{"tracker.ngram_order", "tracker.ngram_buckets", "tracker.oversample", "tracker.d_model"}},
		{"pretrained tracker", "tracker", func(c *Config) { c.Tracker.Pretrained = "/models/llama" },
			[]string{"tracker.architecture", "tracker.d_model", "tracker.context_rescoring", "tracker.lexical_calibration_folds", "tracker.oversample"},
			[]string{"tracker.lora.rank", "tracker.head", "tracker.max_seq_len", "tracker.train.learning_rate", "tracker.train.precision",
				"tracker.imbalance", "tracker.pos_weight", "tracker.threshold"}},
		{"from-scratch summarizer", "summarizer", func(*Config) {},
			[]string{"summarizer.max_seq_len", "summarizer.lora.rank", "summarizer.train.gradient_checkpointing"},
			[]string{"summarizer.d_model", "summarizer.copy_start_bonus", "summarizer.train.learning_rate", "summarizer.beam_size"}},
		{"pretrained summarizer", "summarizer", func(c *Config) { c.Summarizer.Pretrained = "/models/llama" },
			[]string{"summarizer.d_model", "summarizer.copy_start_bonus", "summarizer.word_rule", "summarizer.max_decode_len"},
			[]string{"summarizer.lora.rank", "summarizer.max_seq_len", "summarizer.beam_size", "summarizer.max_summary_len",
				"summarizer.full_context", "summarizer.train.learning_rate"}},
		{"another section", "eval", func(*Config) {}, nil, []string{"eval.llm.model"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := Default()
			tc.mod(&c)
			got := c.Unread(tc.section)
			for _, k := range tc.unread {
				if got[k] == "" {
					t.Errorf("%s: read, want unread", k)
				}
			}
			for _, k := range tc.read {
				if why, ok := got[k]; ok {
					t.Errorf("%s: unread (%s), want read", k, why)
				}
			}
		})
	}
}

package config

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// HFName is a Hugging Face argument name (transformers' TrainingArguments, PEFT's LoraConfig,
// GenerationConfig) that a profile and --set accept for a tracksum key: the table of
// docs/configuration.md, so that a recipe can be carried over name for name.
type HFName struct {
	// Name is the Hugging Face name, e.g. per_device_train_batch_size.
	Name string
	// Key is the tracksum key; "TASK." stands for the section of the task being trained
	// (TASK.train.batch_size is tracker.train.batch_size with --task tracker).
	Key string
	// Values maps Hugging Face values to tracksum's where they differ (lr_scheduler_type's
	// constant is train.decay's none); other values pass unchanged.
	Values map[string]string
	// Decoding is the key that overrides Key at inference (tracksum-infer, tracksum-serve), for
	// the generation names: named beside Key when a command that trains nothing gets the name.
	Decoding string
}

// taskPrefix marks an HFName key that depends on the task.
const taskPrefix = "TASK."

// HFNames lists the names of docs/configuration.md's tables (seed is the same name in both).
var HFNames = []HFName{
	{Name: "learning_rate", Key: "TASK.train.learning_rate"},
	{Name: "num_train_epochs", Key: "TASK.train.epochs"},
	{Name: "max_steps", Key: "TASK.train.max_steps"},
	{Name: "per_device_train_batch_size", Key: "TASK.train.batch_size"},
	{Name: "gradient_accumulation_steps", Key: "TASK.train.grad_accumulation"},
	{Name: "warmup_steps", Key: "TASK.train.warmup_steps"},
	{Name: "lr_scheduler_type", Key: "TASK.train.decay", Values: map[string]string{"constant": "none"}},
	{Name: "weight_decay", Key: "TASK.train.weight_decay"},
	{Name: "adam_beta1", Key: "TASK.train.beta1"},
	{Name: "adam_beta2", Key: "TASK.train.beta2"},
	{Name: "adam_epsilon", Key: "TASK.train.epsilon"},
	{Name: "max_grad_norm", Key: "TASK.train.clip_norm"},
	{Name: "eval_steps", Key: "TASK.train.eval_every"},
	{Name: "early_stopping_patience", Key: "TASK.train.patience"},
	{Name: "max_seq_length", Key: "TASK.max_seq_len"},
	{Name: "model_name_or_path", Key: "TASK.pretrained"},
	{Name: "packing", Key: "TASK.train.packing"},
	// transformers' flash kernels are ours (cuDNN's); sdpa picks a fused kernel where it can, as auto.
	{Name: "attn_implementation", Key: "TASK.train.attention", Values: map[string]string{
		"flash_attention_2": AttentionFlash, "flash_attention_3": AttentionFlash, "sdpa": AttentionAuto}},
	{Name: "r", Key: "TASK.lora.rank"},
	{Name: "lora_alpha", Key: "TASK.lora.alpha"},
	{Name: "lora_dropout", Key: "TASK.lora.dropout"},
	{Name: "use_rslora", Key: "TASK.lora.rslora"},
	{Name: "target_modules", Key: "TASK.lora.target_modules"},
	// PEFT's task type says which head a tracker gets: SEQ_CLS a classification head (on an
	// encoder's [CLS] or a causal LM's last token, as auto chooses), CAUSAL_LM the generative one.
	{Name: "task_type", Key: "tracker.head", Values: map[string]string{"SEQ_CLS": HeadAuto, "CAUSAL_LM": "generative"}},
	{Name: "num_beams", Key: "summarizer.beam_size", Decoding: "infer.decoding.beam_size"},
	// transformers' max_new_tokens is the pretrained summarizer's cap (the from-scratch model's is
	// max_decode_len, a tracksum key).
	{Name: "max_new_tokens", Key: "summarizer.max_new_tokens", Decoding: "infer.decoding.max_length"},
	{Name: "length_penalty", Key: "summarizer.length_penalty", Decoding: "infer.decoding.length_penalty"},
	{Name: "no_repeat_ngram_size", Key: "summarizer.no_repeat_ngram", Decoding: "infer.decoding.no_repeat_ngram"},
}

// LookupHFName returns the HFName called name (case-insensitive, as viper reads keys).
func LookupHFName(name string) (HFName, bool) {
	i := slices.IndexFunc(HFNames, func(h HFName) bool { return strings.EqualFold(h.Name, name) })
	if i < 0 {
		return HFName{}, false
	}
	return HFNames[i], true
}

// Candidates are the keys the name can stand for: one per task section for a task-dependent name,
// and a generation name's inference override.
func (h HFName) Candidates() []string {
	rest, ok := strings.CutPrefix(h.Key, taskPrefix)
	if !ok {
		return slices.DeleteFunc([]string{h.Key, h.Decoding}, func(k string) bool { return k == "" })
	}
	return []string{"tracker." + rest, "summarizer." + rest}
}

// Resolve returns the tracksum key of h for the task whose config section is section, and value
// translated to tracksum's spelling. The names are a training recipe's: a command that trains no
// task (section "") gets an error naming the keys the name could be; where names the setting in it
// (e.g. "--set learning_rate").
func (h HFName) Resolve(section, value, where string) (key, out string, err error) {
	if section == "" {
		return "", "", fmt.Errorf("%s: a Hugging Face name, read as a key of the task trained, and this command trains none: give %s",
			where, strings.Join(h.Candidates(), " or "))
	}
	key = h.Key
	if rest, ok := strings.CutPrefix(h.Key, taskPrefix); ok {
		key = section + "." + rest
	}
	if _, known := defaultLeaves()[key]; !known {
		return "", "", fmt.Errorf("%s: a Hugging Face name for %s, which the %s section does not have", where, h.Key, section)
	}
	out = value
	for hf, ours := range h.Values {
		if strings.EqualFold(strings.Trim(strings.TrimSpace(value), `"'`), hf) {
			out = ours
		}
	}
	return key, out, nil
}

// noteHF tells w (stderr) which key a Hugging Face name became, so that --print-config and the
// saved config.yaml, which show tracksum keys only, can be read against the recipe.
func noteHF(w io.Writer, where, name, key string) {
	if w != nil {
		fmt.Fprintf(w, "%s: Hugging Face name %s read as %s (docs/configuration.md)\n", where, name, key)
	}
}

// Package pretrained fine-tunes pretrained Hugging Face causal LMs (hf/decoder: Llama, Mistral,
// Qwen2, Gemma) as TracSum's tracker and summarizer, with LoRA adapters or in full, following the
// paper's recipe and its authors' released scripts (../shared/docs/paper-recipe.md):
//
//   - tracker, head lm_cls: the chat prompt of a (sentence, aspect) pair, a linear head on the last
//     token, binary cross-entropy (the paper's text);
//   - tracker, head generative: the answer "Relevance:Yes." / "Relevance:No." trained on its
//     tokens only; the score is P(Yes) renormalised over {Yes, No} at the answer token (the
//     released script);
//   - summarizer: system and user turns with the aspect's instruction and the tracked sentences
//     (and the abstract for TTS (+) f), the answer "Summary: ..." trained on its tokens only;
//     decoding with the KV cache (greedy, beam, or temperature/top-p sampling);
//   - TracSum's Table 6 variants on the same machinery (variants.go): SUM-THEN-TRACK, a
//     summarizer of the whole abstract (Table 18) and a tracker of (sentence, summary) pairs;
//     END-TO-END, one model writing "Summary: ...\nCitations: 0, 3" from the indexed abstract
//     (Table 19), read back with model/ete's repairs.
//
// Prompts are rendered with the checkpoint's own chat template (hf/chattemplate) and tokenized
// with its tokenizer (hf/tokenizer). Training runs model/training's loop (AdamW, schedule,
// accumulation, best-on-dev, resume); the checkpoint holds only what was trained (adapters and
// head, or every weight with lora.rank 0), base.json naming the base and its weights' SHA-256, and
// the adapters again in PEFT's layout (hf/peft). The package registers itself as a backbone of
// tracksum-train's tasks (training.RegisterBackbone): --task tracker|summarizer|sum_then_track|end_to_end
// --pretrained DIR.
//
// # Example
//
//	cfg.Tracker.Pretrained, cfg.Tracker.Head = "SNAPSHOT", config.HeadGenerative
//	err := pretrained.TrainTracker(ctx, cfg, "prepared/demo", "checkpoints/llm-tracker", pretrained.TrainOptions{})
//	t, err := pretrained.LoadTracker("checkpoints/llm-tracker")
//	scores, err := t.ScoreBatch([]tracker.Request{{Doc: sentences, Aspect: "a"}})
package pretrained

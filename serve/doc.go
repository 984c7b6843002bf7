// Package serve is tracksum-serve: an OpenAI-compatible chat-completions server (POST
// /v1/chat/completions with optional server-sent-event streaming, GET /v1/models, GET /health)
// over tracksum models, so that every LLM method of tracksum (prompting baselines, the LLM judge,
// the facet-aware and QA metrics, refinement) runs offline through package llm.
//
// Two backends answer (docs/serve.md): TrackSum, the models of tracksum-infer (infer.LoadPipeline:
// from-scratch or pretrained tracker and summarizer, fold ensembles, grounding, the stt/ete
// variants) behind a documented prompt convention (ParseTask, TrackSum.Complete); and Chat, a
// pretrained causal LM (a fine-tuned checkpoint or a snapshot) answering as itself through its
// chat template (model/pretrained's ChatModel). ChooseMode picks one from the models given. The
// server bounds the requests it runs (Options.Workers) and queues (Options.Queue; beyond: 429
// with Retry-After), limits request bodies (413), times requests out (504), drains in-flight
// requests on shutdown, and writes one JSON access-log line per request that never holds the API
// key and holds the prompt only when asked (Options.LogPrompts).
//
// # Example
//
//	b, err := serve.LoadTrackSum("checkpoints/summarizer", "checkpoints/tracker", "")
//	// or: b, err := serve.LoadChat(ctx, cfg, "checkpoints/llm-summarizer", 0)
//	s, err := serve.New(b, serve.DefaultOptions())
//	err = s.ListenAndServe(ctx) // until ctx is cancelled
package serve

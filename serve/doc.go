// Package serve is tracksum-serve: an OpenAI-compatible chat-completions server (POST
// /v1/chat/completions with optional server-sent-event streaming, GET /v1/models, GET /health)
// over a tracksum checkpoint, so that every LLM method of tracksum (prompting baselines, the LLM
// judge, the facet-aware and QA metrics, refinement) runs offline through package llm.
//
// Until a pretrained causal LM is available, the model is the seq2seq summarizer (optionally with
// a tracker) behind a documented prompt convention (ParseTask, TrackSum.Complete,
// docs/serve.md). The server bounds the requests it runs (Options.Workers) and queues
// (Options.Queue; beyond: 429 with Retry-After), limits request bodies (413), times requests out
// (504), drains in-flight requests on shutdown, and writes one JSON access-log line per request
// that never holds the API key and holds the prompt only when asked (Options.LogPrompts).
//
// # Example
//
//	b, err := serve.LoadTrackSum("checkpoints/summarizer", "checkpoints/tracker", "")
//	s, err := serve.New(b, serve.DefaultOptions())
//	err = s.ListenAndServe(ctx) // until ctx is cancelled
package serve

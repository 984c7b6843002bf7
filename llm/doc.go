// Package llm is tracksum's one client for OpenAI-compatible chat-completions endpoints (hosted
// APIs, vLLM, llama.cpp, Ollama, tracksum-serve). Every LLM method of the project (the LLM judge,
// the prompting baselines, PCoA's attribution strategies, the facet-aware and QA metrics) goes
// through it, so that all of them share the same guarantees:
//
//   - a disk cache keyed by the model and the full request (messages and sampling parameters),
//     so that a rerun on the same inputs sends no request;
//   - bounded concurrency (at most Options.Concurrency requests in flight per Client);
//   - retries of network errors, 429 and 5xx answers with exponential backoff, honouring the
//     Retry-After header of 429 and 503 answers (capped by the request timeout);
//   - a timeout per request, so a run never hangs on a slow endpoint;
//   - errors that name the endpoint URL and the HTTP status;
//   - the API key (and any "Bearer ..." or "Authorization: ..." token) redacted from every
//     answer and error before it is returned or cached;
//   - answers the caller cannot use (a refusal, a malformed reply) are asked again and never
//     cached, so one odd reply cannot poison every rerun.
//
// # Example
//
//	c, err := llm.New(llm.Options{BaseURL: "http://localhost:8000/v1", Model: "m", CacheDir: ".cache/llm"})
//	t := 1.0
//	answer, err := c.Chat(ctx, llm.Request{
//		Messages:    []llm.Message{{Role: "user", Content: "Say hello."}},
//		Temperature: &t,
//	}, func(a string) bool { return !llm.IsRefusal(a) })
package llm

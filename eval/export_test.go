package eval

// LLMConfig is llmConfig for the external tests (serve_test.go), which import serve and so cannot
// be in package eval.
var LLMConfig = llmConfig

package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message is one chat message as the server reads it; Content is the text of a string content
// or the concatenated text parts of an array content.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UnmarshalJSON accepts both content forms of the chat-completions protocol: a string, or an
// array of parts of which the "text" ones are kept (joined by newlines).
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		m.Content = ""
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Content); err == nil {
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return errors.New("content must be a string or an array of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" {
			return fmt.Errorf("content part of type %q is not supported (text only)", p.Type)
		}
		texts = append(texts, p.Text)
	}
	m.Content = strings.Join(texts, "\n")
	return nil
}

// chatRequest is the body of POST /v1/chat/completions. Sampling settings are accepted and
// recorded but the summarizer decodes deterministically (docs/serve.md).
type chatRequest struct {
	Model         string    `json:"model"`
	Messages      []Message `json:"messages"`
	Temperature   *float64  `json:"temperature"`
	TopP          *float64  `json:"top_p"`
	MaxTokens     *int      `json:"max_tokens"`
	MaxCompletion *int      `json:"max_completion_tokens"`
	Seed          *int64    `json:"seed"`
	Stop          stopList  `json:"stop"`
	N             *int      `json:"n"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// stopList is the "stop" field: a string or a list of strings.
type stopList []string

// UnmarshalJSON implements json.Unmarshaler.
func (s *stopList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("stop must be a string or a list of strings")
	}
	*s = many
	return nil
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      Message     `json:"message"`
	FinishReason string      `json:"finish_reason"`
	Logprobs     interface{} `json:"logprobs"`
}

type chunkResponse struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// apiError is the protocol's error body: {"error": {"message", "type", "code"}}.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// badRequest is a client mistake found by a backend (answered 400): msg is the client's, log the
// access log's when it says more (server paths a client has no business seeing).
type badRequest struct{ msg, log string }

func (e badRequest) Error() string { return e.msg }

func errBadRequest(msg string) error { return badRequest{msg: msg} }

// errBadRequestLogged is a bad request whose client message is msg and whose log line is log.
func errBadRequestLogged(msg, log string) error { return badRequest{msg: msg, log: log} }

// completionRequest is the body of POST /v1/completions (the legacy text-completion route): one
// prompt, answered as a user message would be on the chat route.
type completionRequest struct {
	Model         string   `json:"model"`
	Prompt        prompt   `json:"prompt"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	MaxTokens     *int     `json:"max_tokens"`
	Seed          *int64   `json:"seed"`
	Stop          stopList `json:"stop"`
	N             *int     `json:"n"`
	Stream        bool     `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// prompt is the "prompt" field: a string, or a list holding one string (a batch of prompts would
// need one answer each, which this server does not do).
type prompt string

// UnmarshalJSON implements json.Unmarshaler.
func (p *prompt) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*p = prompt(one)
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil || len(many) != 1 {
		return errors.New("prompt must be a string or a list of one string (token-id prompts are not supported)")
	}
	*p = prompt(many[0])
	return nil
}

type textResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []textChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type textChoice struct {
	Text         string      `json:"text"`
	Index        int         `json:"index"`
	Logprobs     interface{} `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
}

// unsupported names the first request field that asks for something this server does not do
// (structured output, tool calls, log-probabilities, ...), so that the client gets a 400 naming it
// instead of an answer that silently ignores it; "" when there is none. Fields at their neutral
// value (tools: [], logprobs: false, response_format {"type": "text"}) are accepted.
func unsupported(body []byte) (field, why string) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return "", ""
	}
	neutral := func(v json.RawMessage, ok ...string) bool {
		t := strings.TrimSpace(string(v))
		if t == "null" || t == "false" || t == "0" || t == "[]" || t == "{}" || t == `""` {
			return true
		}
		for _, o := range ok {
			var a, b any
			if json.Unmarshal(v, &a) == nil && json.Unmarshal([]byte(o), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b) {
				return true
			}
		}
		return false
	}
	for _, f := range []struct {
		name, why string
		ok        []string
	}{
		{"response_format", "structured output (JSON mode, json_schema) is not supported: the model writes plain text", []string{`{"type":"text"}`}},
		{"tools", "tool calls are not supported", nil},
		{"tool_choice", "tool calls are not supported", []string{`"none"`, `"auto"`}},
		{"functions", "function calls are not supported", nil},
		{"function_call", "function calls are not supported", []string{`"none"`, `"auto"`}},
		{"logprobs", "log-probabilities are not returned", nil},
		{"top_logprobs", "log-probabilities are not returned", nil},
		{"logit_bias", "logit_bias is not supported", nil},
		{"echo", "echo is not supported", nil},
		{"suffix", "suffix (insertion) is not supported", nil},
		{"best_of", "best_of is not supported (one answer per request)", []string{"1"}},
		{"audio", "audio output is not supported", nil},
		{"modalities", "only text output is supported", []string{`["text"]`}},
		{"prediction", "predicted outputs are not supported", nil},
	} {
		if v, ok := raw[f.name]; ok && !neutral(v, f.ok...) {
			return f.name, f.why
		}
	}
	return "", ""
}

package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

// request sends method path (below /v1) with body and returns the status and body.
func request(t *testing.T, url, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// apiErr decodes an OpenAI error body; a body that is not one fails the test.
func apiErr(t *testing.T, b []byte) (code, param, msg string) {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message string
			Param         *string
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %s", b)
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	return e.Error.Code, param, e.Error.Message
}

// TestUnknownRouteJSON: an unknown route is a JSON 404 (SDKs parse the body), not plain text.
func TestUnknownRouteJSON(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "m"
	url, _ := servetest.StartBackend(t, echo{}, o)
	for _, tc := range []struct{ method, path string }{{"GET", "/nope"}, {"POST", "/embeddings"}, {"GET", "/../../health2"}} {
		status, b := request(t, url, tc.method, tc.path, "{}")
		if status != http.StatusNotFound {
			t.Fatalf("%s %s: status %d: %s", tc.method, tc.path, status, b)
		}
		if code, _, _ := apiErr(t, b); code != "not_found" {
			t.Errorf("%s %s: code %q", tc.method, tc.path, code)
		}
	}
}

// TestModelRetrieve: GET /v1/models/{id} is the served model, or a JSON 404 naming the id.
func TestModelRetrieve(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "m"
	url, _ := servetest.StartBackend(t, echo{}, o)
	status, b := request(t, url, "GET", "/models/m", "")
	var m struct{ ID, Object string }
	if status != 200 || json.Unmarshal(b, &m) != nil || m.ID != "m" || m.Object != "model" {
		t.Errorf("GET /v1/models/m: %d %s", status, b)
	}
	status, b = request(t, url, "GET", "/models/gpt-9", "")
	if code, _, msg := apiErr(t, b); status != 404 || code != "model_not_found" || !strings.Contains(msg, "gpt-9") {
		t.Errorf("GET /v1/models/gpt-9: %d %s", status, b)
	}
}

func TestCompletionsRoute(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "m"
	url, _ := servetest.StartBackend(t, echo{}, o)
	for _, body := range []string{`{"model":"m","prompt":"x y"}`, `{"model":"m","prompt":["x y"],"max_tokens":4}`} {
		status, b := request(t, url, "POST", "/completions", body)
		var r struct {
			Object  string
			Choices []struct {
				Text         string
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		if status != 200 || json.Unmarshal(b, &r) != nil || r.Object != "text_completion" || len(r.Choices) != 1 ||
			r.Choices[0].Text != "echo x y" || r.Choices[0].FinishReason != "stop" || r.Usage.TotalTokens != 2 {
			t.Errorf("%s: %d %s", body, status, b)
		}
	}
	status, b := request(t, url, "POST", "/completions", `{"model":"m","prompt":"x y","stream":true,"stream_options":{"include_usage":true}}`)
	text := string(b)
	if status != 200 || !strings.Contains(text, `"text":"echo "`) || !strings.Contains(text, `"finish_reason":"stop"`) ||
		!strings.Contains(text, `"total_tokens":2`) || !strings.HasSuffix(text, "data: [DONE]\n\n") {
		t.Errorf("stream: %d %s", status, text)
	}
	for _, body := range []string{`{"model":"m","prompt":""}`, `{"model":"m","prompt":["a","b"]}`, `{"model":"m","prompt":[1,2]}`} {
		if status, b := request(t, url, "POST", "/completions", body); status != 400 {
			t.Errorf("%s: %d %s, want 400", body, status, b)
		}
	}
}

// TestUnsupportedFieldsRejected: a field asking for something the server does not do is a 400
// naming it (it was accepted and ignored); the same field at its neutral value is accepted.
func TestUnsupportedFieldsRejected(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "m"
	url, _ := servetest.StartBackend(t, echo{}, o)
	for _, tc := range []struct {
		extra, param string // param "": accepted
	}{
		{`,"response_format":{"type":"json_object"}`, "response_format"},
		{`,"response_format":{"type":"text"}`, ""},
		{`,"tools":[{"type":"function","function":{"name":"f"}}]`, "tools"},
		{`,"tools":[]`, ""},
		{`,"tool_choice":"required"`, "tool_choice"},
		{`,"tool_choice":"none"`, ""},
		{`,"logprobs":true`, "logprobs"},
		{`,"logprobs":false`, ""},
		{`,"top_logprobs":3`, "top_logprobs"},
		{`,"logit_bias":{"50256":-100}`, "logit_bias"},
		{`,"user":"u1","presence_penalty":0.5`, ""},
	} {
		status, b := request(t, url, "POST", "/chat/completions", chatBody("m", "x", tc.extra))
		if tc.param == "" {
			if status != 200 {
				t.Errorf("%s: %d %s, want 200", tc.extra, status, b)
			}
			continue
		}
		if code, param, msg := apiErr(t, b); status != 400 || code != "unsupported_parameter" || param != tc.param || !strings.Contains(msg, tc.param) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.extra, status, b, tc.param)
		}
	}
}

// TestMaxTokensCutsAtTokenBoundary: max_tokens bounds the whole answer in the model's tokens and
// usage.completion_tokens counts what was returned (max_tokens 5 gave "Summary: The study Amlod"
// with completion_tokens 17).
func TestMaxTokensCutsAtTokenBoundary(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "tiny"
	url, _ := servetest.Start(t, o)
	sdir, _, _ := servetest.Checkpoints(t)
	s, err := summarizer.Load(sdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{1, 5, 9} {
		status, b := request(t, url, "POST", "/chat/completions", chatBody("tiny", numberedPrompt, `,"max_tokens":`+itoa(max)))
		var r struct {
			Choices []struct {
				Message      serve.Message
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if status != 200 || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("max_tokens %d: %d %s", max, status, b)
		}
		got := r.Choices[0].Message.Content
		if n := len(s.Tok.Encode(got)); n > max || r.Usage.CompletionTokens > max || r.Usage.CompletionTokens < n {
			t.Errorf("max_tokens %d: %q is %d tokens, usage.completion_tokens %d", max, got, n, r.Usage.CompletionTokens)
		}
		if r.Usage.CompletionTokens == max && r.Choices[0].FinishReason != "length" {
			t.Errorf("max_tokens %d: cut answer %q finished %q, want length", max, got, r.Choices[0].FinishReason)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestOpenAIClient drives the server, serving the tiny checkpoints, with the official openai npm
// client (tools/openaiclient/check.mjs): list, retrieve, chat, streaming, completions, max_tokens
// and the errors an SDK user meets. It needs node and tools/openaiclient/fetch.sh (CI runs it).
func TestOpenAIClient(t *testing.T) {
	dir := filepath.Join(servetest.RepoRoot(), "tools", "openaiclient")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the openai npm client check needs it")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("the openai npm client is absent: run %s", filepath.Join(dir, "fetch.sh"))
	}
	o := serve.DefaultOptions()
	o.ModelName = "tiny"
	url, _ := servetest.Start(t, o)
	promptFile := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(promptFile, []byte(numberedPrompt), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join(dir, "check.mjs"), url, "tiny", promptFile).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("openai client check: %v", err)
	}
}

package serve

import (
	"strings"
	"testing"
)

// FuzzRequestDecoder feeds arbitrary bodies to the request decoders of both routes and to the
// unsupported-field check: any body gets an answer (a request or a one-line client error), never a
// panic, and an accepted chat request has messages.
func FuzzRequestDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["a","b"],"max_tokens":5}`,
		`{"model":"m","prompt":["x"],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[],"n":2,"temperature":9}`,
		`{"response_format":{"type":"json_schema"},"tools":[{}],"logprobs":true}`,
		`{"messages":[{"role":"user","content":null}],"max_completion_tokens":-1}`,
		`[1,2,3]`, `null`, `{"prompt":{}}`, "\xff\xfe{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, msg := readChat(body)
		if msg == "" && len(c.messages) == 0 {
			t.Errorf("chat request %q accepted without messages", body)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("multi-line client error %q", msg)
		}
		if c, msg := readCompletion(body); msg == "" && (len(c.messages) != 1 || strings.TrimSpace(c.messages[0].Content) == "") {
			t.Errorf("completion request %q accepted without a prompt", body)
		}
		if field, why := unsupported(body); (field == "") != (why == "") {
			t.Errorf("unsupported(%q) = %q, %q", body, field, why)
		}
	})
}

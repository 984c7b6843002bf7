package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// readStream reads a server-sent-event answer: the concatenated content, the finish reason, the
// usage chunk (nil when none) and whether [DONE] ended it.
func readStream(t *testing.T, body []byte) (content, finish string, u *chatUsage, done bool) {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream line %q is not an SSE data line", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			u = ch.Usage
		}
	}
	return b.String(), finish, u, done
}

// TestChatModeLoRASummarizer serves a LoRA summarizer fine-tuned on a tiny random snapshot as
// itself (chat mode, chosen by default for a lone pretrained checkpoint): a plain and a streaming
// chat completion through its chat template with usage in its tokens, and tracksum-infer --method
// prompt (package llm's path) run against it to completion. The model is random: the plumbing is
// what is checked, not the text.
func TestChatModeLoRASummarizer(t *testing.T) {
	if testing.Short() {
		t.Skip("fine-tunes a tiny model (-short)")
	}
	ck := pretrainedtest.Summarizer(t)
	scratch, _, _ := servetest.Checkpoints(t)
	_, _, snap := pretrainedtest.Setup(t)
	for _, tc := range []struct {
		desc     string
		mode     string
		opts     infer.Options
		want     string
		wantPath string
	}{
		{"pretrained summarizer", "", infer.Options{Summarizer: ck}, serve.ModeChat, ck},
		{"snapshot as --model", "", infer.Options{Model: snap}, serve.ModeChat, snap},
		{"pretrained summarizer in tracksum mode", serve.ModeTrackSum, infer.Options{Summarizer: ck}, serve.ModeTrackSum, ""},
		{"from-scratch summarizer", "", infer.Options{Summarizer: scratch}, serve.ModeTrackSum, ""},
		{"with a tracker", "", infer.Options{Summarizer: ck, Tracker: scratch}, serve.ModeTrackSum, ""},
	} {
		mode, dir, err := serve.ChooseMode(tc.mode, tc.opts)
		if err != nil || mode != tc.want || dir != tc.wantPath {
			t.Errorf("%s: mode %q dir %q err %v, want %q %q", tc.desc, mode, dir, err, tc.want, tc.wantPath)
		}
	}
	if _, _, err := serve.ChooseMode(serve.ModeChat, infer.Options{Summarizer: ck, Tracker: scratch}); err == nil {
		t.Error("--mode chat with a tracker: no error")
	}

	cfg := config.Default()
	b, err := serve.LoadChat(context.Background(), &cfg, ck, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := serve.DefaultOptions()
	o.ModelName = "tiny-chat"
	srv, err := serve.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	url := hs.URL + "/v1"

	msgs := []chattemplate.Message{{Role: "system", Content: "You summarize."}, {Role: "user", Content: "Pain decreased by 30% with drug X."}}
	prompt, err := b.Model.Chat.Prompt(msgs)
	if err != nil {
		t.Fatal(err)
	}
	body := chatBody("tiny-chat", msgs[1].Content, `,"max_tokens":8`)
	resp, raw := post(t, url, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var cr struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      serve.Message `json:"message"`
			FinishReason string        `json:"finish_reason"`
		} `json:"choices"`
		Usage chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &cr); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if cr.Object != "chat.completion" || cr.Model != "tiny-chat" || len(cr.Choices) != 1 || cr.Choices[0].Message.Role != "assistant" {
		t.Fatalf("response = %s", raw)
	}
	answer, finish := cr.Choices[0].Message.Content, cr.Choices[0].FinishReason
	u := cr.Usage
	// The prompt is the conversation through the checkpoint's chat template, counted in its tokens.
	if u.PromptTokens != len(prompt) || u.CompletionTokens > 8 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v, want %d prompt tokens (the rendered template) and at most 8 completion tokens", u, len(prompt))
	}
	if finish != "stop" && finish != "length" || (finish == "length") != (u.CompletionTokens == 8) {
		t.Errorf("finish_reason %q with %d completion tokens", finish, u.CompletionTokens)
	}
	if strings.Contains(answer, "<|im_end|>") || strings.Contains(answer, "</s>") {
		t.Errorf("answer %q holds an end marker", answer)
	}

	// Streaming: the same (greedy) answer in chunks, its usage, then [DONE].
	resp, raw = post(t, url, chatBody("tiny-chat", msgs[1].Content, `,"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}`))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	streamed, sfinish, su, done := readStream(t, raw)
	if streamed != answer || sfinish != finish || !done || su == nil || *su != u {
		t.Errorf("stream %q (finish %q, usage %+v, done %v), want %q (%q, %+v)", streamed, sfinish, su, done, answer, finish, u)
	}

	// Sampling with a seed answers the same twice; a prompt beyond the context is a 400.
	sampled := chatBody("tiny-chat", msgs[1].Content, `,"max_tokens":6,"temperature":1,"top_p":0.9,"seed":3`)
	_, first := post(t, url, sampled)
	_, again := post(t, url, sampled)
	if !bytes.Equal(contentOf(t, first), contentOf(t, again)) {
		t.Errorf("seeded sampling answered %s, then %s", first, again)
	}
	if resp, raw := post(t, url, chatBody("tiny-chat", strings.Repeat("long ", b.Model.Context), "")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("over-long prompt: status %d: %s", resp.StatusCode, raw)
	}

	// /v1/models lists the served model.
	mresp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var ml struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(mresp.Body).Decode(&ml)
	mresp.Body.Close()
	if len(ml.Data) != 1 || ml.Data[0].ID != "tiny-chat" {
		t.Errorf("/v1/models = %+v", ml)
	}

	// A base snapshot is served as itself too.
	sb, err := serve.LoadChat(context.Background(), &cfg, snap, 4)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sb.Complete(context.Background(), []serve.Message{{Role: "developer", Content: "Be brief."}, {Role: "user", Content: "Hello."}}, serve.Params{})
	if err != nil || sc.PromptTokens == 0 || sc.CompletionTokens > 4 {
		t.Errorf("snapshot: %+v, err %v", sc, err)
	}

	// tracksum-infer --method prompt through package llm against the served model.
	icfg := config.Default()
	icfg.Eval.LLM.BaseURL, icfg.Eval.LLM.Model, icfg.Eval.LLM.CacheDir, icfg.Eval.LLM.MaxRetries = url, "tiny-chat", t.TempDir(), 0
	icfg.Infer.Workers, icfg.Infer.LLM.MaxTokens = 1, 8
	instances := filepath.Join(servetest.RepoRoot(), "infer", "testdata", "instances.jsonl")
	icfg.Infer.LLM.Demos = instances
	before := srv.Stats().Served
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	if _, err := infer.Run(context.Background(), &icfg, infer.Options{Method: "prompt", Input: instances, Out: out, Log: pretrainedtest.Log()}); err != nil {
		t.Fatal(err)
	}
	if srv.Stats().Served == before {
		t.Error("no request of --method prompt reached the server")
	}
	pb, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(string(pb)), "\n")); n != 3 {
		t.Errorf("%d predictions, want 3:\n%s", n, pb)
	}
}

// contentOf is the answer of a chat.completion body.
func contentOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var cr struct {
		Choices []struct {
			Message serve.Message `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &cr); err != nil || len(cr.Choices) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	return []byte(cr.Choices[0].Message.Content)
}

// TestChatRefusalHidesPaths is issue 35 item 9: a conversation the chat template refuses was
// answered 400 with the server's absolute path of tokenizer_config.json. The client gets the
// problem (and the file's name); the access log gets the path.
func TestChatRefusalHidesPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secret-models", "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 24, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	tc := filepath.Join(dir, snapshot.TokenizerConfigFile)
	var tcfg map[string]any
	if err := atomicio.ReadJSON(tc, &tcfg, false); err != nil {
		t.Fatal(err)
	}
	tcfg["chat_template"] = "{% for message in messages %}{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{{ message['content'] }}{% endfor %}"
	if err := atomicio.WriteJSON(tc, tcfg); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	b, err := serve.LoadChat(context.Background(), &cfg, dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	o := serve.DefaultOptions()
	o.ModelName, o.Log = "tiny-chat", &log
	srv, err := serve.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	body := `{"model":"tiny-chat","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello."}]}`
	resp, raw := post(t, hs.URL+"/v1", body)
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(raw), "secret-models") ||
		!strings.Contains(string(raw), "System role not supported") || !strings.Contains(string(raw), snapshot.TokenizerConfigFile) {
		t.Errorf("status %d: %s, want a 400 naming the problem and tokenizer_config.json without its directory", resp.StatusCode, raw)
	}
	if !strings.Contains(log.String(), tc) {
		t.Errorf("access log %s, want the template's path %s", log.String(), tc)
	}
}

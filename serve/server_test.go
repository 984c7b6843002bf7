package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

func TestMain(m *testing.M) {
	code := servetest.Main(m)
	pretrainedtest.Cleanup() // chat_test.go's snapshot and LoRA summarizer
	os.Exit(code)
}

// syncBuffer is a goroutine-safe access log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("access log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func post(t *testing.T, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func chatBody(model, content string, extra string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"You summarize."},{"role":"user","content":%s}]%s}`, model, c, extra)
}

const numberedPrompt = "Aspect: Intervention\nDocument:\n[0] We randomised 40 adults with chronic pain.\n" +
	"[1] Patients received drug X 20 mg daily for 8 weeks.\n[2] Pain decreased by 30% with drug X.\n"

var answerFormat = regexp.MustCompile(`^Summary: (.+)\nCitations: (\[[0-9, ]*\]|Null\.)$`)

// TestTinyModelEndToEnd sends real HTTP requests to a server running the tiny checkpoints, through
// the project's llm client, and checks the protocol and the prompt convention.
func TestTinyModelEndToEnd(t *testing.T) {
	logBuf := &syncBuffer{}
	o := serve.DefaultOptions()
	o.ModelName, o.Log = "tiny", logBuf
	url, srv := servetest.Start(t, o)

	resp, b := post(t, url, chatBody("tiny", numberedPrompt, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var cr struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      serve.Message `json:"message"`
			FinishReason string        `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &cr); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if cr.Object != "chat.completion" || cr.Model != "tiny" || len(cr.Choices) != 1 || cr.Choices[0].Message.Role != "assistant" {
		t.Fatalf("response = %s", b)
	}
	answer := cr.Choices[0].Message.Content
	m := answerFormat.FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("answer %q does not follow the convention", answer)
	}
	if m[2] != "Null." && !regexp.MustCompile(`^\[([012](, )?)+\]$`).MatchString(m[2]) {
		t.Errorf("citations %q are not among the prompt's sentence numbers", m[2])
	}
	if cr.Usage.PromptTokens == 0 || cr.Usage.CompletionTokens == 0 || cr.Usage.TotalTokens != cr.Usage.PromptTokens+cr.Usage.CompletionTokens {
		t.Errorf("usage = %+v", cr.Usage)
	}

	// The same request through the project's client gives the same (deterministic) answer, and
	// a plain prompt gets a summary without the convention's fields.
	c, err := llm.New(llm.Options{BaseURL: url, Model: "tiny", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Chat(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: "system", Content: "You summarize."}, {Role: "user", Content: numberedPrompt}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != answer {
		t.Errorf("answer through llm.Client = %q, want %q", got, answer)
	}
	plain, err := c.Chat(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: "user", Content: "Patients received drug X 20 mg daily for 8 weeks. Pain decreased by 30%."}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain == "" || strings.HasPrefix(plain, "Summary:") {
		t.Errorf("plain prompt answered %q, want a bare summary", plain)
	}

	// Streaming: the chunks concatenate to the same answer, then [DONE].
	resp2, b2 := post(t, url, chatBody("tiny", numberedPrompt, `,"stream":true,"stream_options":{"include_usage":true}`))
	if resp2.StatusCode != http.StatusOK || !strings.HasPrefix(resp2.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: status %d, content type %q", resp2.StatusCode, resp2.Header.Get("Content-Type"))
	}
	var streamed strings.Builder
	var finish string
	var sawUsage, done bool
	sc := bufio.NewScanner(bytes.NewReader(b2))
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
			Usage *struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range ch.Choices {
			streamed.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		sawUsage = sawUsage || (ch.Usage != nil && ch.Usage.TotalTokens > 0)
	}
	if streamed.String() != answer || finish == "" || !done || !sawUsage {
		t.Errorf("stream = %q (finish %q, done %v, usage %v), want %q", streamed.String(), finish, done, sawUsage, answer)
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
	if len(ml.Data) != 1 || ml.Data[0].ID != "tiny" {
		t.Errorf("/v1/models = %+v", ml)
	}

	if st := srv.Stats(); st.Served != 4 {
		t.Errorf("served = %d, want 4", st.Served)
	}
	// One access-log line per request, without the prompt's text.
	lines := logBuf.Lines(t)
	var chats int
	for _, l := range lines {
		if l["path"] == "/v1/chat/completions" {
			chats++
			if l["status"].(float64) != 200 || l["prompt_tokens"].(float64) == 0 {
				t.Errorf("access line %v", l)
			}
		}
	}
	if chats != 4 {
		t.Errorf("%d access lines for chat requests, want 4:\n%s", chats, logBuf.String())
	}
	if strings.Contains(logBuf.String(), "randomised") {
		t.Errorf("the access log holds the prompt text without --log-prompts")
	}
}

// TestWithoutTrackerCitesEverySentence serves the summarizer alone: every numbered sentence is
// summarized and cited, with the prompt's own numbers.
func TestWithoutTrackerCitesEverySentence(t *testing.T) {
	summ, _, _ := servetest.Checkpoints(t)
	b, err := serve.LoadTrackSum(summ, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: strings.ReplaceAll(numberedPrompt, "[", "[1")}}, serve.Params{})
	if err != nil {
		t.Fatal(err)
	}
	m := answerFormat.FindStringSubmatch(c.Content)
	if m == nil || m[2] != "[10, 11, 12]" || m[1] == "" || m[1] == serve.Unknown {
		t.Errorf("answer %q, want a summary citing [10, 11, 12]", c.Content)
	}
	// A summarizer prompt with sentence lists (no numbers) gets "Summary: ..." and no citations.
	lc, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: "Summarize the Outcomes.\nSentences:\n[\"Pain fell by 30%.\", \"Sleep improved.\"]\n"}}, serve.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lc.Content, "Summary: ") || strings.Contains(lc.Content, "Citations") || len(lc.Content) <= len("Summary: ") {
		t.Errorf("list prompt answered %q", lc.Content)
	}
	if _, err := serve.LoadTrackSum(summ, "", "zz"); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Errorf("unknown default aspect: error %v", err)
	}
}

// blocking is a backend that waits until released (or its context ends) and counts calls.
type blocking struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
	started chan struct{}
}

func newBlocking() *blocking {
	return &blocking{release: make(chan struct{}), started: make(chan struct{}, 100)}
}

func (b *blocking) Complete(ctx context.Context, msgs []serve.Message, _ serve.Params) (serve.Completion, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-time.After(5 * time.Second):
	}
	return serve.Completion{Content: "ok: " + msgs[len(msgs)-1].Content, PromptTokens: 3, CompletionTokens: 2}, nil
}

// echo answers at once.
type echo struct{}

func (echo) Complete(_ context.Context, msgs []serve.Message, p serve.Params) (serve.Completion, error) {
	return serve.Completion{Content: "echo " + msgs[len(msgs)-1].Content, PromptTokens: 1, CompletionTokens: 1}, nil
}

func TestLimitsAndErrors(t *testing.T) {
	os.Setenv("SERVE_TEST_KEY", "")
	tests := []struct {
		desc    string
		opts    func(*serve.Options)
		body    string
		header  []string
		status  int
		code    string
		content string
	}{
		{desc: "body over the limit", opts: func(o *serve.Options) { o.MaxBodyBytes = 64 },
			body: chatBody("m", strings.Repeat("x", 100), ""), status: 413, code: "request_too_large"},
		{desc: "invalid JSON", body: `{"model":`, status: 400, code: "invalid_json"},
		{desc: "no messages", body: `{"model":"m","messages":[]}`, status: 400, code: "invalid_request"},
		{desc: "unknown role", body: `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, status: 400, code: "invalid_request"},
		{desc: "n > 1", body: chatBody("m", "x", `,"n":2`), status: 400, code: "invalid_request"},
		{desc: "other model", body: chatBody("gpt-x", "x", ""), status: 404, code: "model_not_found"},
		{desc: "missing key", opts: func(o *serve.Options) { o.APIKey = "sekret" }, body: chatBody("m", "x", ""), status: 401, code: "invalid_api_key"},
		{desc: "right key", opts: func(o *serve.Options) { o.APIKey = "sekret" }, body: chatBody("m", "x", ""),
			header: []string{"Authorization", "Bearer sekret"}, status: 200, content: "echo x"},
		{desc: "empty model and content parts", body: `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			status: 200, content: "echo a\nb"},
		{desc: "stop string", body: chatBody("m", "x y", `,"stop":" y"`), status: 200, content: "echo x"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := serve.DefaultOptions()
			o.ModelName = "m"
			if tc.opts != nil {
				tc.opts(&o)
			}
			logBuf := &syncBuffer{}
			o.Log = logBuf
			url, _ := servetest.StartBackend(t, echo{}, o)
			resp, b := post(t, url, tc.body, tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.code != "" {
				var e struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != tc.code || e.Error.Message == "" {
					t.Errorf("error body %s, want code %q", b, tc.code)
				}
			}
			if tc.content != "" && !strings.Contains(string(b), fmt.Sprintf("%q", tc.content)[1:len(fmt.Sprintf("%q", tc.content))-1]) {
				t.Errorf("body %s does not hold %q", b, tc.content)
			}
			if strings.Contains(logBuf.String(), "sekret") {
				t.Errorf("access log holds the API key: %s", logBuf.String())
			}
		})
	}
}

func TestQueueFullGets429(t *testing.T) {
	b := newBlocking()
	o := serve.DefaultOptions()
	o.Workers, o.Queue, o.ModelName = 1, 1, "m"
	o.RetryAfter = 2 * time.Second
	url, srv := servetest.StartBackend(t, b, o)
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for i := range 2 {
		wg.Go(func() {
			resp, _ := post(t, url, chatBody("m", fmt.Sprint(i), ""))
			statuses <- resp.StatusCode
		})
	}
	<-b.started // one runs; wait until the other is admitted and queued
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/health")
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			InFlight int `json:"in_flight"`
		}
		json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if h.InFlight == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight = %d, want 2", h.InFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, body := post(t, url, chatBody("m", "third", ""))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("third request: status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	close(b.release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("admitted request got %d", s)
		}
	}
	if st := srv.Stats(); st.Served != 2 || st.Rejected != 1 {
		t.Errorf("stats = %+v, want 2 served and 1 rejected", st)
	}
}

func TestRequestTimeout(t *testing.T) {
	b := newBlocking()
	defer close(b.release)
	o := serve.DefaultOptions()
	o.ModelName, o.RequestTimeout = "m", 200*time.Millisecond
	url, _ := servetest.StartBackend(t, b, o)
	start := time.Now()
	resp, body := post(t, url, chatBody("m", "slow", ""))
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status %d, want 504: %s", resp.StatusCode, body)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("answered after %s, want about the 200ms timeout", el)
	}
}

// TestShutdownDrains cancels the server while a request runs: the request still gets its answer,
// new connections are refused, and Serve returns nil.
func TestShutdownDrains(t *testing.T) {
	b := newBlocking()
	o := serve.DefaultOptions()
	o.ModelName = "m"
	logBuf := &syncBuffer{}
	o.Log = logBuf
	srv, err := serve.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	got := make(chan int, 1)
	go func() {
		resp, _ := post(t, url, chatBody("m", "in flight", ""))
		got <- resp.StatusCode
	}()
	<-b.started
	cancel()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v before the request in flight finished", err)
	default:
	}
	close(b.release)
	if s := <-got; s != http.StatusOK {
		t.Errorf("in-flight request got %d, want 200", s)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil after a clean drain", err)
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Errorf("the server still accepts connections after shutdown")
	}
	if !strings.Contains(logBuf.String(), `"event":"stopped"`) {
		t.Errorf("no stopped event in the log:\n%s", logBuf.String())
	}
}

func TestLogPrompts(t *testing.T) {
	logBuf := &syncBuffer{}
	o := serve.DefaultOptions()
	o.ModelName, o.LogPrompts, o.Log = "m", true, logBuf
	url, _ := servetest.StartBackend(t, echo{}, o)
	if resp, b := post(t, url, chatBody("m", "private words", "")); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if !strings.Contains(logBuf.String(), "private words") {
		t.Errorf("--log-prompts did not log the prompt:\n%s", logBuf.String())
	}
}

func TestOptionsValidate(t *testing.T) {
	o := serve.DefaultOptions()
	o.Workers, o.ModelName = 0, ""
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--workers") || !strings.Contains(err.Error(), "--model-name") {
		t.Errorf("Validate = %v", err)
	}
	if _, err := serve.New(echo{}, o); err == nil {
		t.Errorf("New accepted invalid options")
	}
	if !errors.Is(serve.DefaultOptions().Validate(), nil) {
		t.Errorf("defaults do not validate")
	}
}

// TestSlowBodiesDoNotStarve is the regression test of issue 22 defect 8: serve admitted a request
// before reading its body, so 12 connections trickling a 1000-byte body one byte at a time held
// every place of --workers 2 --queue 8 and each real request got 429 for as long as they lasted.
// The body is now read first, within its own deadline: a real request is served meanwhile, and
// the trickling clients get 408 once BodyTimeout has passed. Loopback only, 12 clients, ~2 s.
func TestSlowBodiesDoNotStarve(t *testing.T) {
	o := serve.DefaultOptions()
	o.Workers, o.Queue, o.ModelName = 2, 8, "m"
	o.BodyTimeout = 1500 * time.Millisecond
	url, srv := servetest.StartBackend(t, echo{}, o)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1")
	const slow = 12
	statuses := make(chan string, slow)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range slow {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
		wg.Go(func() {
			// One byte every 100 ms until the server answers (or the test ends).
			done := make(chan struct{})
			go func() {
				defer close(done)
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					line = fmt.Sprintf("client %d: %v", i, err)
				}
				statuses <- strings.TrimSpace(line)
			}()
			for {
				select {
				case <-done:
					return
				case <-stop:
					<-done
					return
				case <-time.After(100 * time.Millisecond):
					conn.Write([]byte(" "))
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // every slow client has sent its headers and some body
	start := time.Now()
	resp, body := post(t, url, chatBody("m", "real", ""))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a real request among %d slow bodies got %d: %s", slow, resp.StatusCode, body)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the real request took %s, want well under the body timeout", el)
	}
	wg.Wait()
	close(stop)
	close(statuses)
	for s := range statuses {
		if !strings.HasPrefix(s, "HTTP/1.1 408") {
			t.Errorf("a slow-body client got %q, want 408", s)
		}
	}
	if st := srv.Stats(); st.Rejected != 0 {
		t.Errorf("stats = %+v, want nothing rejected", st)
	}
}

// long answers a "stalled" message with its long text, any other with a short one, at once.
type long struct{ content string }

func (l long) Complete(_ context.Context, msgs []serve.Message, _ serve.Params) (serve.Completion, error) {
	if msgs[len(msgs)-1].Content != "stalled" {
		return serve.Completion{Content: "short", PromptTokens: 1, CompletionTokens: 1}, nil
	}
	return serve.Completion{Content: l.content, PromptTokens: 1, CompletionTokens: 1}, nil
}

// TestStalledReaderIsBounded is issue 35 item 20: a client that sent its request and stopped
// reading the answer held its connection for the write timeout (request timeout + 10 s, about
// 130 s by default), and its place among the running and queued requests with it. Each part of an
// answer is now written within WriteTimeout, outside those places: another request is answered
// while the stalled one waits, and the stalled one ends soon after WriteTimeout.
func TestStalledReaderIsBounded(t *testing.T) {
	// 16 MiB in 32 words: more than the loopback socket buffers hold, so the writes block.
	content := strings.Repeat(strings.Repeat("x", 1<<19)+" ", 32)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			o := serve.DefaultOptions()
			o.Workers, o.Queue, o.ModelName = 1, 0, "m"
			o.RequestTimeout, o.WriteTimeout, o.ShutdownTimeout = 20*time.Second, 300*time.Millisecond, 2*time.Second
			logBuf := &syncBuffer{}
			o.Log = logBuf
			url, _ := servetest.StartBackend(t, long{content}, o)
			addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1")
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := chatBody("m", "stalled", fmt.Sprintf(`,"stream":%v`, stream))
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
			time.Sleep(200 * time.Millisecond) // the stalled answer is being written
			resp, raw := post(t, url, chatBody("m", "reading", ""))
			if resp.StatusCode != http.StatusOK {
				t.Errorf("a request beside the stalled one got %d: %.200s", resp.StatusCode, raw)
			}
			deadline := time.Now().Add(3 * time.Second)
			for strings.Count(logBuf.String(), `"path":"/v1/chat/completions"`) < 2 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if n := strings.Count(logBuf.String(), `"path":"/v1/chat/completions"`); n < 2 {
				t.Errorf("the stalled request still holds its connection 3 s on (%d of 2 requests logged)", n)
			}
		})
	}
}

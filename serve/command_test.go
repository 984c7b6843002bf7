package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

func TestCommandUsageErrors(t *testing.T) {
	tests := []struct {
		desc  string
		args  []string
		usage bool
		want  string
	}{
		{desc: "no summarizer", args: nil, usage: true, want: "--summarizer is required"},
		{desc: "bad workers", args: []string{"--summarizer", "x", "--workers", "0"}, usage: true, want: "--workers must be >= 1"},
		{desc: "bad workers by --set", args: []string{"--set", "serve.summarizer=x", "--set", "serve.workers=0"}, usage: true, want: "--workers must be >= 1"},
		{desc: "unset key variable", args: []string{"--summarizer", "x", "--api-key-env", "TRACKSUM_SERVE_TEST_UNSET"}, usage: true, want: "TRACKSUM_SERVE_TEST_UNSET"},
		{desc: "missing checkpoint", args: []string{"--summarizer", filepath.Join(t.TempDir(), "nope")}, want: "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := serve.Command()
			if err := cmd.Flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := cmd.Run(context.Background(), cmd.Flags.Args())
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, cli.ErrUsage) != tc.usage {
				t.Errorf("error = %v, want one containing %q (usage error: %v)", err, tc.want, tc.usage)
			}
		})
	}
}

// TestDefaultsAreTheKeys: tracksum-serve's defaults are the serve.* keys' (a flag left out takes
// the key's value, so the two must agree).
func TestDefaultsAreTheKeys(t *testing.T) {
	c := config.DefaultServe()
	if c.MaxTokens != serve.DefaultChatMaxTokens {
		t.Errorf("serve.max_tokens default %d, DefaultChatMaxTokens %d", c.MaxTokens, serve.DefaultChatMaxTokens)
	}
	if d := serve.DefaultOptions(); d.Listen != c.Listen || d.Workers != c.Workers || d.BodyTimeout != c.BodyTimeout {
		t.Errorf("DefaultOptions %+v, serve keys %+v", d, c)
	}
}

// TestBinarySIGTERM builds bin/tracksum-serve, serves the tiny checkpoints, answers a request and
// stops on SIGTERM with exit status 0 and a "stopped" log line.
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command; skipped with -short")
	}
	summ, trk, _ := servetest.Checkpoints(t)
	bin := filepath.Join(t.TempDir(), "tracksum-serve")
	build := exec.Command("go", "build", "-o", bin, "./cmd/serve")
	build.Dir = servetest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--summarizer", summ, "--tracker", trk, "--listen", "127.0.0.1:0", "--model-name", "tiny")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var addr string
	deadline := time.After(60 * time.Second)
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server exited before listening")
			}
			var ev struct{ Event, Addr string }
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "listening" {
				addr = ev.Addr
			}
		case <-deadline:
			t.Fatal("no listening line within 60s")
		}
	}
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"tiny","messages":[{"role":"user","content":"Aspect: o\n[0] Pain fell by 30%."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	err = cmd.Wait()
	if err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	all := strings.Join(rest, "\n")
	if !strings.Contains(all, `"event":"stopped"`) || !strings.Contains(all, `"status":200`) {
		t.Errorf("log after the request:\n%s", all)
	}
}

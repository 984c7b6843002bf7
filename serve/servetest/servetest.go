// Package servetest trains tiny tracksum checkpoints once per test binary and serves them with a
// real tracksum-serve on 127.0.0.1, so that the LLM methods are tested end to end over real HTTP.
//
// # Example
//
//	func TestMain(m *testing.M) { os.Exit(servetest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		url, srv := servetest.Start(t, serve.DefaultOptions())
//		// url is http://127.0.0.1:PORT/v1
//	}
package servetest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/serve"
)

var (
	once       sync.Once
	dir        string
	summ, trk  string
	trainError error
)

// Main runs the tests (through preparetest.Main, which removes the prepared sample) and then
// removes the checkpoints trained for them; call it from TestMain.
func Main(m *testing.M) int {
	code := preparetest.Main(m)
	if dir != "" {
		os.RemoveAll(dir)
	}
	return code
}

// RepoRoot is the repository's root directory (where configs/ lives).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Checkpoints returns a tiny summarizer and a tiny tracker trained for a few steps on the built-in
// synthetic sample with configs/tiny.yaml (once per test binary, a few seconds on 2 cores), and
// the prepared directory they were trained on (preparetest's, read-only). The models are barely
// trained: the tests check the plumbing, not the summaries' quality.
func Checkpoints(t testing.TB) (summarizerDir, trackerDir, preparedDir string) {
	t.Helper()
	cfg, err := tinyConfig()
	if err != nil {
		t.Fatal(err)
	}
	data := preparetest.Dir(t, cfg)
	once.Do(func() {
		dir, trainError = os.MkdirTemp("", "tracksum-servetest-")
		if trainError != nil {
			return
		}
		trainError = train(dir, cfg, data)
	})
	if trainError != nil {
		t.Fatalf("training the tiny checkpoints: %v", trainError)
	}
	return summ, trk, data
}

// TrackerWith trains a tiny tracker as Checkpoints does, with edit applied to its config, into a
// directory removed when the test ends, on Checkpoints' prepared directory.
func TrackerWith(t testing.TB, edit func(cfg *config.Config)) string {
	t.Helper()
	_, _, data := Checkpoints(t)
	cfg, err := tinyConfig()
	if err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	out := filepath.Join(t.TempDir(), "tracker")
	if _, _, err := tracker.Train(context.Background(), cfg, data, out, tracker.TrainOptions{Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	return out
}

// tinyConfig is configs/tiny.yaml on 24 abstracts with a few training steps.
func tinyConfig() (*config.Config, error) {
	cfg, err := config.ReadFile(filepath.Join(RepoRoot(), "configs", "tiny.yaml"))
	if err != nil {
		return nil, err
	}
	cfg.Prepare.SampleSize = 24
	cfg.Summarizer.Train.MaxSteps = 4
	cfg.Summarizer.DevDecodeLimit = 2
	cfg.Tracker.Train.MaxSteps = 2
	return cfg, nil
}

func train(dir string, cfg *config.Config, data string) error {
	ctx := context.Background()
	s, tr := filepath.Join(dir, "summarizer"), filepath.Join(dir, "tracker")
	if _, _, err := summarizer.Train(ctx, cfg, data, s, summarizer.TrainOptions{Log: io.Discard}); err != nil {
		return err
	}
	if _, _, err := tracker.Train(ctx, cfg, data, tr, tracker.TrainOptions{Log: io.Discard}); err != nil {
		return err
	}
	summ, trk = s, tr
	return nil
}

// Start serves the tiny checkpoints (tracker included) with o on 127.0.0.1 (o.Listen is ignored)
// and returns the base URL, http://127.0.0.1:PORT/v1, and the server. The server is shut down,
// and its Serve error checked, when the test ends.
func Start(t testing.TB, o serve.Options) (string, *serve.Server) {
	t.Helper()
	s, tr, _ := Checkpoints(t)
	b, err := serve.LoadTrackSum(s, tr, "")
	if err != nil {
		t.Fatal(err)
	}
	return StartBackend(t, b, o)
}

// StartBackend serves b like Start.
func StartBackend(t testing.TB, b serve.Backend, o serve.Options) (string, *serve.Server) {
	t.Helper()
	srv, err := serve.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/v1", srv
}

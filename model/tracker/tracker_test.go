package tracker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset/prepare"
)

// tinyConfig loads configs/tiny.yaml, the profile CI trains with.
func tinyConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Load(viper.New(), "../../configs/tiny.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var (
	preparedOnce sync.Once
	preparedDir  string
	preparedErr  error
)

// syntheticPrepared prepares the built-in synthetic sample once per test binary.
func syntheticPrepared(t testing.TB) string {
	t.Helper()
	preparedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tracker-prepared-")
		if err != nil {
			preparedErr = err
			return
		}
		preparedDir = filepath.Join(dir, "prepared")
		_, preparedErr = prepare.Run(context.Background(), tinyConfig(t), prepare.Options{Out: preparedDir})
	})
	if preparedErr != nil {
		t.Fatal(preparedErr)
	}
	return preparedDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if preparedDir != "" {
		os.RemoveAll(filepath.Dir(preparedDir))
	}
	os.Exit(code)
}

func TestTrainTinySynthetic(t *testing.T) {
	data := syntheticPrepared(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(t)
	m, rep, err := Train(context.Background(), cfg, data, out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dev.Sentence["f1"] < 0.9 {
		t.Errorf("dev F1 %.3f, want >= 0.9 on the synthetic sample", rep.Dev.Sentence["f1"])
	}
	// Load from disk must reproduce the in-memory model bit for bit.
	loaded, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadData(data, cfg.Tracker.MaxLen-1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.ScoreExamples(d.Dev.Examples)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.ScoreExamples(d.Dev.Examples)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("example %d: loaded model gives %v, in-memory %v", i, got[i], want[i])
		}
	}
	_ = errors.Is
}

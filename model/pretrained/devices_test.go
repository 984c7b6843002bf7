package pretrained_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// TestDevicesRefused: train.devices > 1 is refused by both tasks in one line that names the key,
// the backend and its device count, and points at the docs, before the snapshot is read or the
// output created.
func TestDevicesRefused(t *testing.T) {
	backend, name, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"tracker", "summarizer"} {
		t.Run(task, func(t *testing.T) {
			cfg, data, llm := setup(t)
			cfg.Tracker.Pretrained, cfg.Summarizer.Pretrained = llm, llm
			cfg.Tracker.Train.Devices, cfg.Summarizer.Train.Devices = 2, 2
			out := filepath.Join(t.TempDir(), "ck")
			tt, _ := training.LookupTask(task)
			err := tt.Train(context.Background(), cfg, training.Request{Data: data, Out: out, Log: testLog()})
			if err == nil {
				t.Fatal("devices 2 was accepted")
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{task + ".train.devices 2: ", fmt.Sprintf("backend %q has %d device", name, backend.NumDevices()), training.DevicesDoc} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the refused run created %s (%v)", out, err)
			}
		})
	}
}

// TestFlashRefusedWithoutCUDA: train.attention flash on a backend without cuDNN's fused attention
// is refused by both tasks in one line naming the key and the backend, before the output is
// created (GoMLX would otherwise run its own decomposed attention without a word).
func TestFlashRefusedWithoutCUDA(t *testing.T) {
	_, name, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(name), "cuda") {
		t.Skipf("backend %s has the fused attention", name)
	}
	for _, task := range []string{"tracker", "summarizer"} {
		t.Run(task, func(t *testing.T) {
			cfg, data, llm := setup(t)
			cfg.Tracker.Pretrained, cfg.Summarizer.Pretrained = llm, llm
			cfg.Tracker.Train.Attention, cfg.Summarizer.Train.Attention = "flash", "flash"
			out := filepath.Join(t.TempDir(), "ck")
			tt, _ := training.LookupTask(task)
			err := tt.Train(context.Background(), cfg, training.Request{Data: data, Out: out, Log: testLog()})
			want := fmt.Sprintf("%s.train.attention: flash needs cuDNN's fused attention, which backend %s lacks: use auto or eager", task, name)
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %q", err, want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the refused run created %s (%v)", out, err)
			}
		})
	}
}

// TestPackingRefusedForEncoder: tracker.train.packing with a BERT encoder (encoder_cls) is refused
// in one line naming the key, before the output is created: the encoder has no packed path.
func TestPackingRefusedForEncoder(t *testing.T) {
	cfg, data, _ := setup(t)
	bert := filepath.Join(t.TempDir(), "bert")
	if err := randsnap.WriteEncoder(bert, randsnap.Encoder{Vocab: 120, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	cfg.Tracker.Pretrained, cfg.Tracker.Train.Packing = bert, true
	out := filepath.Join(t.TempDir(), "ck")
	tt, _ := training.LookupTask("tracker")
	err := tt.Train(context.Background(), cfg, training.Request{Data: data, Out: out, Log: testLog()})
	want := "tracker.train.packing: " + bert + " is an encoder (model_type bert), which has no packed path: set it false"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run created %s (%v)", out, err)
	}
}

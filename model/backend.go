// Package model holds what tracksum's GoMLX models share: the choice of compute backend and the
// storage of a model's variables (safetensors files), so that a checkpoint — ours or a converted
// pretrained backbone — can be loaded into a GoMLX Store by variable path.
//
// The models themselves live in sub-packages: model/tracker (sentence relevance), model/summarizer
// (seq2seq); model/training is the training loop they share.
//
// # Example
//
//	backend, name, err := model.Backend()
//	if err != nil {
//		return err
//	}
//	fmt.Fprintf(os.Stderr, "backend: %s\n", name)
//	store := gomlxmodel.NewStore()
//	if err := model.LoadVariablesInto(store, "checkpoints/run/best/model.safetensors", nil); err != nil {
//		return err
//	}
package model

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/gomlx/backends/default" // registers the "go" backend, and "xla" unless built with -tags noxla
)

// GoBackendConfig is the configuration of the pure-Go backend used when GOMLX_BACKEND is unset and
// no XLA PJRT plugin is installed. A build with GOEXPERIMENT=simd uses the sequential op scheduler:
// the parallel scheduler deadlocked there inside training steps (see docs/tracker.md).
var GoBackendConfig = defaultGoConfig

var (
	backendOnce sync.Once
	backendVal  compute.Backend
	backendName string
	backendErr  error
)

// Backend returns the process-wide compute backend and its configuration string, creating it on the
// first call:
//   - GOMLX_BACKEND, when set, is honoured as is (e.g. "xla:cuda" on a GPU machine, "go");
//   - otherwise "xla:cpu" when the xla backend is compiled in and a CPU PJRT plugin is installed;
//   - otherwise the pure-Go backend (GoBackendConfig).
//
// It never downloads a plugin: GOMLX_NO_AUTO_INSTALL is set before any xla backend is created.
func Backend() (compute.Backend, string, error) {
	backendOnce.Do(func() {
		if _, set := os.LookupEnv("GOMLX_NO_AUTO_INSTALL"); !set {
			os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
		}
		cfg, explicit := os.LookupEnv(compute.ConfigEnvVar)
		if !explicit || strings.TrimSpace(cfg) == "" {
			cfg = GoBackendConfig
			if slices.Contains(compute.List(), "xla") && xlaPluginInstalled("cpu") {
				cfg = "xla:cpu"
			}
		}
		backendName = cfg
		backendVal, backendErr = newBackend(cfg)
		if backendErr != nil {
			backendErr = fmt.Errorf("backend %q: %w", cfg, backendErr)
		}
	})
	return backendVal, backendName, backendErr
}

// newBackend wraps compute.NewWithConfig, which panics on unknown backend names.
func newBackend(cfg string) (b compute.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v (compiled-in backends: %s)", r, strings.Join(compute.List(), ", "))
		}
	}()
	return compute.NewWithConfig(cfg)
}

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
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/gomlx/backends/default" // registers the "go" backend, and "xla" unless built with -tags noxla
)

// GoBackendConfig is the configuration of the pure-Go backend used when GOMLX_BACKEND is unset and
// no XLA PJRT plugin is installed: the sequential op scheduler, in every build. The parallel
// scheduler's worker pool can deadlock (an op holds a slot while its matmul waits for another; seen
// in tracker and summarizer training, plain and GOEXPERIMENT=simd builds; see docs/tracker.md).
// Training uses both cores through data-parallel shards instead (training.Options.Shards).
var GoBackendConfig = "go:ops_sequential"

var (
	backendOnce sync.Once
	backendVal  compute.Backend
	backendName string
	backendErr  error
)

// Backend returns the process-wide compute backend and its configuration string, creating it on the
// first call:
//   - GOMLX_BACKEND, when set, is honoured (e.g. "xla:cuda" on a GPU machine, "go"; "go" without a
//     scheduler gets the sequential one: withGoScheduler);
//   - otherwise "xla:cpu" when the xla backend is compiled in and a CPU PJRT plugin is installed;
//   - otherwise the pure-Go backend (GoBackendConfig).
//
// It never downloads a plugin: go-xla's auto-install is switched off before any xla backend is
// created (the GOMLX_NO_AUTO_INSTALL variable alone only works when set before the program starts).
func Backend() (compute.Backend, string, error) {
	backendOnce.Do(func() {
		disableXLAAutoInstall()
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
		cfg = withGoScheduler(cfg)
		backendName = cfg
		backendVal, backendErr = newBackend(cfg)
		if backendErr != nil {
			backendErr = fmt.Errorf("backend %q: %w", cfg, backendErr)
		}
	})
	return backendVal, backendName, backendErr
}

// withGoScheduler returns cfg with the pure-Go backend's sequential op scheduler added when cfg
// names that backend without choosing a scheduler ("go", "go:parallelism=4"): GoMLX's default
// there runs ops in parallel whenever one execution is alone, which can deadlock
// (GoBackendConfig; seen again 27 Nov 2026 with GOMLX_BACKEND=go: a pretrained summarizer's first
// LoRA step on 1,024 tokens hung with every worker waiting in a matmul's fan-out). A cfg that
// names ops_parallel (or ops_sequential) and every other backend are returned unchanged.
func withGoScheduler(cfg string) string {
	name, opts, _ := strings.Cut(strings.TrimSpace(cfg), ":")
	if name != "go" {
		return cfg
	}
	var keep []string
	for _, o := range strings.Split(opts, ",") {
		switch o = strings.TrimSpace(o); o {
		case "ops_sequential", "ops_parallel":
			return cfg
		case "":
		default:
			keep = append(keep, o)
		}
	}
	return "go:" + strings.Join(append(keep, "ops_sequential"), ",")
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

// SetGoParallelism sets the size of the pure-Go backend's worker pool (the fan-out of matmuls and
// large elementwise ops inside one op; 0 runs everything on the calling goroutine) and returns
// whether b is that backend. The backend's "parallelism=N" configuration does the same at creation
// but prints to stdout; data-parallel training (training.Options.Shards) needs 0 only once it
// runs two executions at once.
func SetGoParallelism(b compute.Backend, n int) bool {
	v := reflect.ValueOf(b)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	workers := v.Elem().FieldByName("Workers")
	if !workers.IsValid() || workers.Kind() != reflect.Pointer || workers.IsNil() {
		return false
	}
	set := workers.MethodByName("SetMaxParallelism")
	if !set.IsValid() || set.Type().NumIn() != 1 || set.Type().In(0).Kind() != reflect.Int {
		return false
	}
	set.Call([]reflect.Value{reflect.ValueOf(n)})
	return true
}

var (
	decodingOnce sync.Once
	decodingVal  compute.Backend
	decodingErr  error
)

// DecodingBackend returns the backend token-by-token decoding runs on: the process-wide one
// (Backend), except on the pure-Go backend, where it is a second instance of it whose ops run on
// the calling goroutine (SetGoParallelism 0). A decoding step is many small products (one token
// per hypothesis); the pool's fan-out of their batch axis (heads) into goroutines cost more CPU
// than it saved (docs/summarizer.md, BenchmarkDecode), and decoding runs in parallel across
// requests instead (infer's workers, serve's clients). Tensors of one backend are not read by the
// other: a model decodes from variables loaded for this one.
func DecodingBackend() (compute.Backend, error) {
	decodingOnce.Do(func() {
		b, name, err := Backend()
		if err != nil || CompilesPerShape() {
			decodingVal, decodingErr = b, err
			return
		}
		decodingVal, decodingErr = newBackend(name)
		if decodingErr != nil {
			decodingErr = fmt.Errorf("decoding backend %q: %w", name, decodingErr)
			return
		}
		SetGoParallelism(decodingVal, 0)
	})
	return decodingVal, decodingErr
}

// CompilesPerShape reports whether the process-wide backend compiles a program for each new input
// shape (the XLA backends: about half a minute for a 30-layer decoder's training step on an H100,
// docs/gpu.md), rather than running any shape at no extra cost (the pure-Go backend). Callers
// that pad batches then use few shapes (powers of two) instead of tight ones.
func CompilesPerShape() bool {
	b, name, err := Backend()
	return err == nil && b != nil && !strings.HasPrefix(strings.TrimSpace(name), "go")
}

// BucketLen is the padded length of n for a graph input: the next multiple of step on the go
// backend, where a new shape costs nothing, and the next power of two (at least step, itself a
// power of two) on a backend that compiles a program per shape (CompilesPerShape), so that a run
// meets a few shapes only: the first GPU check of the pretrained fine-tuning spent ~35 s of each
// 5-step run compiling, because every batch of multiples of 16 was a new shape.
func BucketLen(n, step int) int { return BucketLenFor(n, step, CompilesPerShape()) }

// BucketLenFor is BucketLen with the kind of backend given: powers of two when pow2 (lets a test
// run the shapes of an XLA backend on the go one).
func BucketLenFor(n, step int, pow2 bool) int {
	if !pow2 {
		return max(step, (n+step-1)/step*step)
	}
	p := step
	for p < n {
		p *= 2
	}
	return p
}

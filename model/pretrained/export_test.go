package pretrained

import "github.com/tracksum/tracksum/model/checkpoint"

// SetAfterStep lets the external tests interrupt a training run after a given step.
func SetAfterStep(f func(step int)) { afterStep = f }

// ProcessCPUSeconds is processCPUSeconds for the external benchmarks.
func ProcessCPUSeconds() float64 { return processCPUSeconds() }

// ReadMeta reads dir's pretrained.json as it is on disk, for the tests (the loaders read it
// through the checkpoint's verified manifest).
func ReadMeta(dir string) (*Meta, error) { return readMeta(checkpoint.DirFiles(dir), dir) }

//go:build !unix

package pretrained

// processCPUSeconds is not measured off Unix: the per-CPU-second metric reads 0 there.
func processCPUSeconds() float64 { return 0 }

//go:build !unix

package eval

// processCPUSeconds is not measured outside unix; the benchmark then omits instances/cpu-s.
func processCPUSeconds() float64 { return 0 }

package pretrained

// SetAfterStep lets the external tests interrupt a training run after a given step.
func SetAfterStep(f func(step int)) { afterStep = f }

// ProcessCPUSeconds is processCPUSeconds for the external benchmarks.
func ProcessCPUSeconds() float64 { return processCPUSeconds() }

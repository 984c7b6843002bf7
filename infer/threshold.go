package infer

import "github.com/tracksum/tracksum/config"

// DefaultThreshold is the tracker's decision threshold when neither the command line, the config
// nor the tracker's checkpoint sets one: TracSum's (section C.1).
const DefaultThreshold = 0.5

// Threshold resolves a tracker's decision threshold, the one rule tracksum-infer and
// tracksum-serve (both through LoadPipeline) follow, so that the same checkpoints cite the same
// sentences through either: override (the command line's when > 0: tracksum-serve --threshold,
// Options.Threshold), else infer.threshold when set (tracksum-infer --threshold, a profile, an
// environment variable; 0 keeps every sentence), else recorded (the threshold the tracker's checkpoint was trained
// with, when > 0), else DefaultThreshold. It returns the threshold and where it came from, for the
// log.
func Threshold(override float64, cfg *config.Config, recorded float64) (float64, string) {
	switch {
	case override > 0:
		return override, "the command line's"
	case cfg.Infer.Threshold != nil:
		return *cfg.Infer.Threshold, "infer.threshold"
	case recorded > 0:
		return recorded, "the tracker checkpoint's"
	}
	return DefaultThreshold, "the default"
}

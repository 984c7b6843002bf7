package summarizer

import (
	"os"
	"testing"
)

// TestMain selects the sequential op scheduler of the pure-Go backend unless GOMLX_BACKEND says
// otherwise: the parallel scheduler deadlocked in this package's training steps (see Train).
func TestMain(m *testing.M) {
	if _, set := os.LookupEnv("GOMLX_BACKEND"); !set {
		os.Setenv("GOMLX_BACKEND", "go:ops_sequential")
	}
	os.Exit(m.Run())
}

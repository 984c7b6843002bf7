package encoder

import (
	"os"
	"testing"

	"github.com/tracksum/tracksum/internal/knowncrash"
)

// The bf16 tests can die of GoMLX compute v0.1.5's half-precision matmul over-read: rerun once.
func TestMain(m *testing.M) { os.Exit(knowncrash.Main(m.Run)) }

package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/cli"
)

// TestCommand runs tracksum-export's flags: both paths required (a usage error), then an export.
func TestCommand(t *testing.T) {
	root := t.TempDir()
	baseDir, ck, out := filepath.Join(root, "base"), filepath.Join(root, "ck"), filepath.Join(root, "out")
	if err := randsnap.WriteDecoder(baseDir, tiny(dtypes.Float32, 9)); err != nil {
		t.Fatal(err)
	}
	checkpointFor(t, baseDir, ck, false)
	for _, tc := range []struct {
		args  []string
		usage bool
	}{
		{[]string{"--checkpoint", ck}, true},
		{[]string{"--checkpoint", ck, "--out", out, "extra"}, true},
		{[]string{"--checkpoint", ck, "--out", out}, false},
	} {
		cmd := Command()
		if err := cmd.Flags.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := cmd.Run(context.Background(), cmd.Flags.Args())
		if got := errors.Is(err, cli.ErrUsage); got != tc.usage || (!tc.usage && err != nil) {
			t.Errorf("%v: err = %v", tc.args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, snapshot.WeightsFile)); err != nil {
		t.Errorf("no export: %v", err)
	}
}

//go:build unix

package snapshot

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSnapshotFIFOTokenizer: issue 22 rough edge: a FIFO as tokenizer.json made loading block
// forever; Open refuses it at once, naming the file.
func TestSnapshotFIFOTokenizer(t *testing.T) {
	dir := makeSnapshot(t)
	path := filepath.Join(dir, TokenizerFile)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := openErr(t, dir)
	if want := path + ": not a regular file"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

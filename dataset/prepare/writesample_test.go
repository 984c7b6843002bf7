package prepare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteSampleKeepsExistingFile is the regression test of issue 10 item 14 (--write-sample): an
// existing file was replaced without a word. It is refused unless --overwrite.
func TestWriteSampleKeepsExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.jsonl")
	if err := os.WriteFile(path, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runCommand(t, "--write-sample", path, "--sample-size", "3")
	if err == nil || !strings.Contains(err.Error(), "already exists: refusing to replace it without --overwrite") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious\n" {
		t.Fatal("the existing file was replaced")
	}
	if _, err := runCommand(t, "--write-sample", path, "--sample-size", "3", "--overwrite"); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), `{"PMID"`) {
		t.Fatalf("with --overwrite the sample was not written: %.40q", b)
	}
}

package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzOpen feeds arbitrary bytes as the manifest of a sealed tracker cross-validation (two sealed
// fold checkpoints with their fold records) to Open: any manifest gets an answer within a bound
// (a manifest or a one-line ErrCheckpoint), never a panic or an endless walk (issue 35 item 4), and
// an accepted one lists every file and member the directory's kind needs (issue 35 item 13) with
// members that are subdirectories of the checkpoint.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	foldCV(f, dir)
	sealed := sealCV(f, dir)
	valid, err := json.Marshal(sealed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, members := range []string{`["."]`, `["fold-0","fold-0"]`, `["fold-0/.."]`, `["../x"]`, `["fold-1","fold-0"]`, `[""]`, `null`} {
		f.Add([]byte(strings.Replace(string(valid), `"members":["fold-0","fold-1"]`, `"members":`+members, 1)))
	}
	f.Add([]byte(strings.Replace(string(valid), `"files":[`, `"files":[],"x":[`, 1)))
	f.Add([]byte(`{"format_version":1,"kind":"tracker","task":"tracker","backbone":{"type":"scratch"},"files":[{"path":"../cv.json"}]}`))
	f.Add([]byte(`{"format_version":1}`))
	f.Add([]byte(`[]`))
	want := sealed
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		m, err := Open(ctx, dir)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Open did not finish within 10 s for %q", manifest)
		}
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line wrapping ErrCheckpoint", err)
			}
			return
		}
		if m.Migrated || m.Kind != want.Kind || !slices.Equal(m.Members, want.Members) {
			t.Errorf("accepted %q as %+v, want kind %s, members %v", manifest, m, want.Kind, want.Members)
		}
		for _, f := range want.Files {
			if !slices.ContainsFunc(m.Files, func(g File) bool { return g.Path == f.Path }) {
				t.Errorf("accepted %q, which does not list %s", manifest, f.Path)
			}
		}
	})
}

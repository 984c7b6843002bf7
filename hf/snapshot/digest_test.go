package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The base's digests are computed once per version of its files: a second digest of an unchanged
// file reads nothing; a touched, rewritten or replaced file is hashed again; the digest is always
// the file's sha256.
func TestDigestCacheAvoidsRehash(t *testing.T) {
	t.Setenv(CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	write := func(data string) {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := func(data string) string {
		s := sha256.Sum256([]byte(data))
		return hex.EncodeToString(s[:])
	}
	write("weights v1")
	steps := []struct {
		desc   string
		change func()
		data   string
		hashes int64 // files read by this digest
	}{
		{"first digest", func() {}, "weights v1", 1},
		{"unchanged: from the cache", func() {}, "weights v1", 0},
		{"unchanged again", func() {}, "weights v1", 0},
		{"touched", func() {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Fatal(err)
			}
		}, "weights v1", 1},
		{"rewritten, same size", func() { write("weights v2") }, "weights v2", 1},
		{"replaced by another file (new inode)", func() {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte("weights v3!"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "weights v3!", 1},
		{"cached after the change", func() {}, "weights v3!", 0},
	}
	for _, st := range steps {
		st.change()
		before := hashed.Load()
		got, err := FileSHA256(path)
		if err != nil {
			t.Fatalf("%s: %v", st.desc, err)
		}
		if got != want(st.data) {
			t.Errorf("%s: digest %s, want %s", st.desc, got, want(st.data))
		}
		if n := hashed.Load() - before; n != st.hashes {
			t.Errorf("%s: %d files hashed, want %d", st.desc, n, st.hashes)
		}
	}
}

// The cache lives in the user cache directory, never in the snapshot: pointed inside the
// snapshot, it is not used (every digest reads the file).
func TestDigestCacheNeverInsideSnapshot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(CacheDirEnv, filepath.Join(dir, ".cache"))
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		before := hashed.Load()
		if _, err := FileSHA256(path); err != nil {
			t.Fatal(err)
		}
		if hashed.Load()-before != 1 {
			t.Error("digest came from a cache inside the snapshot")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".cache")); err == nil {
		t.Error("cache directory created inside the snapshot")
	}
}

// A snapshot's weights digest goes through the cache too: the second WeightsSHA256 of an
// unchanged snapshot reads no weight file.
func TestWeightsSHA256Cached(t *testing.T) {
	t.Setenv(CacheDirEnv, filepath.Join(t.TempDir(), "cache"))
	s, err := Open(makeSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.WeightsSHA256(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := hashed.Load()
	second, err := s.WeightsSHA256(context.Background())
	if err != nil || second != first {
		t.Fatalf("second digest %s, %v; want %s", second, err, first)
	}
	if hashed.Load() != before {
		t.Error("unchanged weights hashed again")
	}
	digests, err := s.FileDigests()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ConfigFile, TokenizerFile, TokenizerConfigFile} {
		if len(digests[name]) != 64 {
			t.Errorf("FileDigests lacks %s: %v", name, digests)
		}
	}
}

package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// A base model's files are hashed when a checkpoint is written, and again at every infer, export
// and resume to check that the base has not changed: 16 GB for an 8B model in bf16, about a
// minute each time. The digests are therefore cached in the user's cache directory, keyed by each
// file's (absolute path, size, modification time, inode): a file rewritten, replaced or touched
// changes one of them and is hashed again. The cache is never inside a checkpoint (whose files
// its own manifest verifies) nor inside the snapshot (an input, perhaps read-only or shared); a
// cache that cannot be read or written only costs the hashing.

// CacheDirEnv overrides the cache directory (default: os.UserCacheDir()/tracksum).
const CacheDirEnv = config.CacheDirEnv

// digestDir is the cache's subdirectory of digests.
const digestDir = "sha256"

// hashed counts the files actually read for a digest (tests check that the cache avoids them).
var hashed atomic.Int64

// fileStat is what identifies a file's content for the cache.
type fileStat struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	Inode   uint64 `json:"inode"`
}

// digestEntry is one cache file: the digest of Files' bytes concatenated, valid while every file
// still has its recorded stat.
type digestEntry struct {
	Files  []fileStat `json:"files"`
	SHA256 string     `json:"sha256"`
}

func statOf(path string) (fileStat, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fileStat{}, fmt.Errorf("%s: %v", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fileStat{}, fmt.Errorf("%s: %v", path, err)
	}
	st := fileStat{Path: abs, Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Inode = uint64(sys.Ino)
	}
	return st, nil
}

// CacheDir returns the digest cache directory: $TRACKSUM_CACHE_DIR, else the user cache
// directory's tracksum/ ("" when neither can be determined: no caching).
func CacheDir() string {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "tracksum")
}

// FileSHA256 returns the hex SHA-256 of the file at path, from the cache when its path, size,
// modification time and inode are those it was hashed with.
// It takes no context: it is for the small files of a snapshot (ShapingFiles), read in an instant.
func FileSHA256(path string) (string, error) {
	return CachedSHA256(context.Background(), []string{path})
}

// CachedSHA256 returns the hex SHA-256 of the files' bytes concatenated in order (for one file,
// `sha256sum FILE`), through the cache. Hashing 16 GB of weights takes about a minute: ctx is
// checked between reads, and a cancelled ctx gives an error wrapping ctx.Err() naming the file.
func CachedSHA256(ctx context.Context, paths []string) (string, error) {
	stats := make([]fileStat, len(paths))
	for i, p := range paths {
		st, err := statOf(p)
		if err != nil {
			return "", err
		}
		stats[i] = st
	}
	entryPath := cacheEntry(stats)
	if entryPath != "" {
		var e digestEntry
		// Any failure to read the entry (missing, damaged) is a cache miss.
		if atomicio.ReadJSON(entryPath, &e, false) == nil && sameStats(e.Files, stats) && len(e.SHA256) == 64 {
			return e.SHA256, nil
		}
	}
	h := sha256.New()
	for _, st := range stats {
		if err := hashInto(ctx, h, st.Path); err != nil {
			return "", err
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	// A file changed while it was read would be cached under its old stat with a digest of
	// neither version: cache only when the stats still hold.
	if entryPath != "" {
		after := make([]fileStat, len(stats))
		for i, st := range stats {
			after[i], _ = statOf(st.Path)
		}
		if sameStats(after, stats) {
			_ = atomicio.WriteJSON(entryPath, digestEntry{Files: stats, SHA256: sum}) // best effort: a failure costs a rehash next time
		}
	}
	return sum, nil
}

func hashInto(ctx context.Context, h io.Writer, path string) error {
	hashed.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	defer f.Close()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: hashing stopped: %w", path, ctx.Err())
		}
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// ctxReader stops a long read (io.Copy reads in 32 KB pieces) once its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// cacheEntry returns the cache file of a list of files ("" when there is no usable cache
// directory, or when it lies inside a hashed file's directory, i.e. inside the snapshot).
func cacheEntry(stats []fileStat) string {
	dir := CacheDir()
	if dir == "" {
		return ""
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	key := sha256.New()
	for _, st := range stats {
		if within(dir, filepath.Dir(st.Path)) {
			return ""
		}
		fmt.Fprintf(key, "%s\x00", st.Path)
	}
	return filepath.Join(dir, digestDir, hex.EncodeToString(key.Sum(nil))+".json")
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func sameStats(a, b []fileStat) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ShapingFiles are the files of a snapshot, besides its weights, that change what the model
// computes or how its text is encoded and templated: a checkpoint records their digests so that
// an edited rope_theta, tokenizer or chat template is refused like changed weights.
var ShapingFiles = []string{ConfigFile, TokenizerFile, TokenizerConfigFile, GenerationConfigFile,
	"special_tokens_map.json", "chat_template.jinja", "chat_template.json"}

// FileDigests returns the SHA-256 (through the cache) of each of ShapingFiles present in the
// snapshot, by file name.
func (s *Snapshot) FileDigests() (map[string]string, error) {
	out := map[string]string{}
	for _, name := range ShapingFiles {
		path := filepath.Join(s.Dir, name)
		if !fileExists(path) {
			continue
		}
		sum, err := FileSHA256(path)
		if err != nil {
			return nil, err
		}
		out[name] = sum
	}
	return out, nil
}

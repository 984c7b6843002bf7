package atomicio

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// SHA256 returns the hex SHA-256 of the file at path (`sha256sum FILE`) and its size in bytes: the
// one digest of a file that manifests (checkpoint.json, cv.json's folds, prepare's inputs) record.
// A file that cannot be opened gives os.Open's error, so errors.Is(err, fs.ErrNotExist) holds for
// a missing one; hf/snapshot caches the digests of a base model's large files on top of this.
func SHA256(path string) (sum string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

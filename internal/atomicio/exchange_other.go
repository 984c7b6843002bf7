//go:build !linux

package atomicio

import "errors"

// exchange is only available on Linux; Commit falls back to an aside copy elsewhere.
func exchange(a, b string) error {
	return errors.ErrUnsupported
}

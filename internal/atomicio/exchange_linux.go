package atomicio

import "golang.org/x/sys/unix"

// exchange swaps the directory entries a and b in one atomic step (renameat2 RENAME_EXCHANGE), so
// that a reader sees either one or the other at each path, never nothing. It fails on file
// systems (and kernels before 3.15) that cannot do it; Commit then falls back to an aside copy.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

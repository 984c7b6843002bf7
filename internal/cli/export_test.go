package cli

import "io"

// ErrConfigPrinted is errConfigPrinted for the external tests.
var ErrConfigPrinted = errConfigPrinted

// CaptureStdout sends what --print-config writes to w until the returned function is called.
func CaptureStdout(w io.Writer) (restore func()) {
	old := stdout
	stdout = w
	return func() { stdout = old }
}

package knowncrash

import "testing"

// TestKnown: only a fault in the half-precision small-matmul kernels is the known crash.
func TestKnown(t *testing.T) {
	tests := []struct {
		name   string
		stderr string
		want   bool
	}{
		{"bf16 kernel fault", "unexpected fault address 0xbd2d4400000\nfatal error: fault\n[signal SIGSEGV: segmentation violation code=0x2]\n" +
			"github.com/gomlx/compute/internal/gobackend/dot/matmul.avx2SmallBFloat16({0x1}, ...)\n", true},
		{"f16 kernel fault", "[signal SIGSEGV: segmentation violation]\nmatmul.avx2SmallFloat16(...)\n", true},
		{"a fault elsewhere", "[signal SIGSEGV: segmentation violation]\ngithub.com/tracksum/tracksum/hf/decoder.(*Model).Hidden(...)\n", false},
		{"a test failure", "--- FAIL: TestBF16Parity (0.30s)\nmatmul.avx2SmallBFloat16 mentioned in a log line\n", false},
		{"a panic", "panic: runtime error: index out of range\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Known([]byte(tt.stderr)); got != tt.want {
				t.Errorf("Known = %v, want %v", got, tt.want)
			}
		})
	}
}

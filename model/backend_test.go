package model

import "testing"

// TestWithGoScheduler: a GOMLX_BACKEND naming the pure-Go backend without a scheduler gets the
// sequential one (the parallel one can deadlock); an explicit scheduler and other backends are
// kept as given.
func TestWithGoScheduler(t *testing.T) {
	tests := []struct{ in, want string }{
		{"go", "go:ops_sequential"},
		{" go ", "go:ops_sequential"},
		{"go:", "go:ops_sequential"},
		{"go:parallelism=4", "go:parallelism=4,ops_sequential"},
		{"go:ops_parallel", "go:ops_parallel"},
		{"go:parallelism=2,ops_parallel", "go:parallelism=2,ops_parallel"},
		{"go:ops_sequential", "go:ops_sequential"},
		{"xla:cuda", "xla:cuda"},
		{"xla:/opt/xla_cuda_plugin.so", "xla:/opt/xla_cuda_plugin.so"},
		{"gomlx", "gomlx"},
	}
	for _, tt := range tests {
		if got := withGoScheduler(tt.in); got != tt.want {
			t.Errorf("withGoScheduler(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

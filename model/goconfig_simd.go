//go:build goexperiment.simd

package model

// defaultGoConfig is the pure-Go backend configuration of a GOEXPERIMENT=simd build: the AVX2 matmul
// kernels with the sequential op scheduler, because the parallel one deadlocked in training steps.
const defaultGoConfig = "go:ops_sequential"

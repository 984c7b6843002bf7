//go:build !goexperiment.simd

package model

// defaultGoConfig is the pure-Go backend configuration of a plain build: the parallel op scheduler.
const defaultGoConfig = "go"

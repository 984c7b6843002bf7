// Package layering holds the test that keeps tracksum's imports running one way, from commands
// down to plumbing, in the order docs/architecture.md ("Layers") draws. It has no code: a
// package that imports one above its own layer, or a package the order does not place, fails
// `go test ./internal/layering`.
package layering

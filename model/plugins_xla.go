//go:build !noxla

package model

import "github.com/gomlx/go-xla/pjrt"

// xlaPluginInstalled reports whether a PJRT plugin with that name (e.g. "cpu", "cuda") is installed
// locally; it only searches the disk, never downloads.
func xlaPluginInstalled(name string) bool {
	_, found := pjrt.AvailablePlugins()[name]
	return found
}

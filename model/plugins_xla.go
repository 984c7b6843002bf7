//go:build !noxla

package model

import (
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// xlaPluginInstalled reports whether a PJRT plugin with that name (e.g. "cpu", "cuda") is installed
// locally; it only searches the disk, never downloads.
func xlaPluginInstalled(name string) bool {
	_, found := pjrt.AvailablePlugins()[name]
	return found
}

// disableXLAAutoInstall stops go-xla from downloading a missing PJRT plugin. Setting
// GOMLX_NO_AUTO_INSTALL from inside the program is too late: go-xla reads it once, in its init.
func disableXLAAutoInstall() { xla.EnableAutoInstall(false) }

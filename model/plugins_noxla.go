//go:build noxla

package model

// xlaPluginInstalled is always false in a build without the xla backend.
func xlaPluginInstalled(string) bool { return false }

// disableXLAAutoInstall has nothing to disable in a build without the xla backend.
func disableXLAAutoInstall() {}

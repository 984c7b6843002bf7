package training

import (
	"fmt"

	"github.com/gomlx/compute"
)

// DevicesDoc is where a user who asks for several devices is sent: what runs on a GPU, and why
// train.devices > 1 is refused.
const DevicesDoc = `docs/pretrained.md, "GPUs and several devices"`

// CheckDevices refuses train.devices n > 1 (key names the config key, e.g.
// "tracker.train.devices"; name the backend as the user chose it, e.g. "xla:cuda", or "" for
// b.String()). A count beyond the backend's devices names both numbers and the backend; a count
// the backend could hold is refused all the same, because no training loop of tracksum runs on
// several devices: GoMLX's distributed execution (Exec.AutoSharding over a device mesh) is not
// wired in. It cannot be tried here: the pure-Go backend has one device and implements neither
// AutoSharding nor SPMD, not even over a mesh of one device, and no PJRT plugin or GPU was
// available (see DevicesDoc). n = 1 runs on the backend's first device.
func CheckDevices(key string, n int, b compute.Backend, name string) error {
	if n <= 1 {
		return nil
	}
	if name == "" {
		name = b.String()
	}
	have := b.NumDevices()
	if n > have {
		plural := "s"
		if have == 1 {
			plural = ""
		}
		return fmt.Errorf("%s %d: backend %q has %d device%s; use 1 (training on several devices is not implemented: %s)",
			key, n, name, have, plural, DevicesDoc)
	}
	return fmt.Errorf("%s %d: training on several devices is not implemented (backend %q has %d devices, but GoMLX's distributed execution is not wired into the training loop: %s); use 1",
		key, n, name, have, DevicesDoc)
}

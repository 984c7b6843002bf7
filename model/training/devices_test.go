package training

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/model"
)

// devicesBackend is a backend that reports n devices: the messages for a machine with several
// GPUs, which this project does not have.
type devicesBackend struct {
	compute.Backend
	n int
}

func (b devicesBackend) NumDevices() int { return b.n }
func (b devicesBackend) String() string  { return "xla" }

func TestCheckDevices(t *testing.T) {
	gob, name, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		n    int
		b    compute.Backend
		name string
		want string // "" = accepted
	}{
		{n: 1, b: gob, name: name},
		{n: 1, b: devicesBackend{n: 4}, name: "xla:cuda"},
		{n: 2, b: devicesBackend{n: 1}, name: "go:ops_sequential",
			want: `tracker.train.devices 2: backend "go:ops_sequential" has 1 device; use 1 (training on several devices is not implemented: docs/pretrained.md, "GPUs and several devices")`},
		{n: 8, b: devicesBackend{n: 4}, name: "",
			want: `tracker.train.devices 8: backend "xla" has 4 devices; use 1 (training on several devices is not implemented: docs/pretrained.md, "GPUs and several devices")`},
		{n: 4, b: devicesBackend{n: 4}, name: "xla:cuda",
			want: `tracker.train.devices 4: training on several devices is not implemented (backend "xla:cuda" has 4 devices, but GoMLX's distributed execution is not wired into the training loop: docs/pretrained.md, "GPUs and several devices"); use 1`},
	}
	for _, c := range cases {
		err := CheckDevices("tracker.train.devices", c.n, c.b, c.name)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckDevices(%d, %d devices, %q)\n got %q\nwant %q", c.n, c.b.NumDevices(), c.name, got, c.want)
		}
	}
	// The backend tracksum runs here: the pure-Go one has one device.
	if strings.HasPrefix(name, "go") && gob.NumDevices() != 1 {
		t.Errorf("backend %s reports %d devices, want 1", name, gob.NumDevices())
	}
}

// TestRunRefusesDevices: every model's loop refuses train.devices > 1 before writing anything.
func TestRunRefusesDevices(t *testing.T) {
	dir := t.TempDir() + "/out"
	loop := toyLoop()
	loop.Devices = 2
	o, _ := toyOptions(t, dir, loop)
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "training: train.devices 2: ") || !strings.Contains(err.Error(), DevicesDoc) {
		t.Fatalf("Run with devices 2: err %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Run refused but created %s (%v)", dir, err)
	}
}

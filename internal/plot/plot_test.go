package plot

import (
	"bytes"
	"image/png"
	"math"
	"path/filepath"
	"testing"
)

func TestEncode(t *testing.T) {
	chart := Chart{Width: 400, PanelHeight: 200, Panels: []Panel{
		{Title: "loss", XLabel: "step", Series: []Series{
			{Name: "train", X: []float64{0, 10, 20}, Y: []float64{1, 0.5, 0.25}},
			{Name: "dev", X: []float64{0, 10, 20}, Y: []float64{1, math.NaN(), 0.4}},
		}},
		{Title: "empty"},
	}}
	var buf bytes.Buffer
	if err := chart.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 400 {
		t.Errorf("image %v, want 400x400", b)
	}
	if err := (Chart{}).Encode(&buf); err == nil {
		t.Error("a chart without panels: no error")
	}
	if err := chart.WritePNG(filepath.Join(t.TempDir(), "c.png")); err != nil {
		t.Error(err)
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		lo, hi float64
		want   []float64
	}{
		{"unit interval", 0, 1, []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}},
		{"steps", 0, 700, []float64{0, 200, 400, 600}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := ticks(tc.lo, tc.hi, 5)
			if len(got) != len(tc.want) {
				t.Fatalf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Fatalf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
				}
			}
		})
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {0.25, "0.25"}, {600, "600"}, {1e-5, "1e-5"}} {
		if got := formatTick(tc.v); got != tc.want {
			t.Errorf("formatTick(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/tensorio"
	"github.com/tracksum/tracksum/model"
)

// parityTol is hf/decoder's test tolerance against the float32 PyTorch reference
// (tools/hfparity/decoder.py): the same goldens must hold on any backend.
const parityTol = 1e-4

// parityLoRA is the adapter setting the goldens were generated with (hf/decoder's testLoRA).
var parityLoRA = decoder.LoRA{Rank: 4, Alpha: 8, RSLoRA: true}

func parityCommand() cli.Command {
	fs := cli.NewFlags("gpucheck parity")
	fs.String("goldens", filepath.Join("hf", "decoder", "testdata"), "directory of the families' golden snapshots (tools/hfparity/decoder.py)")
	return cli.Command{
		Name: "gpucheck parity", Synopsis: "[--goldens DIR]", Flags: fs,
		Description: "Runs every decoder family's goldens (forward, LoRA forward, loss) on the backend; one JSON line per family.",
		Run: func(ctx context.Context, args []string) error {
			dir, _ := fs.GetString("goldens")
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments %v", args)
			}
			_, name, err := model.Backend()
			if err != nil {
				return err
			}
			failed := 0
			// Every registered decoder family has a golden directory (hf/decoder's
			// TestEveryFamilyHasGoldens).
			for _, fam := range family.Names(family.CausalLM) {
				start := time.Now()
				res := map[string]any{"step": "parity", "family": fam, "backend": name, "tf32": tf32(name), "tolerance": parityTol}
				diffs, err := parity(ctx, filepath.Join(dir, fam))
				ok := err == nil
				for k, v := range diffs {
					res[k] = v
					ok = ok && v <= parityTol
				}
				if err != nil {
					res["error"] = err.Error()
				}
				res["ok"], res["seconds"] = ok, time.Since(start).Seconds()
				if !ok {
					failed++
				}
				if err := emit(os.Stdout, res); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("parity: %d of 4 families outside %g", failed, parityTol)
			}
			return nil
		},
	}
}

// parity returns the largest differences from a family's goldens: hidden states and logits of the
// base, logits with the golden adapters, and the loss with them.
func parity(ctx context.Context, dir string) (map[string]float64, error) {
	gold, err := tensorio.ReadTensors(filepath.Join(dir, "golden.safetensors"))
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		return nil, err
	}
	b, _, err := model.Backend()
	if err != nil {
		return nil, err
	}
	store := gomlxmodel.NewStore()
	m, err := decoder.Load(ctx, snap, store, parityLoRA, 0)
	if err != nil {
		return nil, err
	}
	mask := tensors.MustCopyFlatData[int32](gold["mask"])
	exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, tok, msk, labels *Node) []*Node {
		h := m.Hidden(scope, tok, msk)
		logits := m.Logits(scope, h)
		return []*Node{h, logits, decoder.CausalLMLoss(logits, labels)}
	})
	if err != nil {
		return nil, err
	}
	out, err := exec.Exec(gold["tokens"], gold["mask"], gold["labels"])
	if err != nil {
		return nil, err
	}
	res := map[string]float64{
		"hidden_max_abs_diff": maxDiff(out[0], gold["hidden"], mask),
		"logits_max_abs_diff": maxDiff(out[1], gold["logits"], mask),
	}
	ad, err := tensorio.ReadTensors(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return nil, err
	}
	vars := m.LoRAVariables()
	for k, v := range ad {
		lv, ok := vars[k]
		if !ok {
			return nil, fmt.Errorf("%s: adapter key %s has no LoRA variable", dir, k)
		}
		if err := lv.SetValue(v); err != nil {
			return nil, err
		}
	}
	if out, err = exec.Exec(gold["tokens"], gold["mask"], gold["labels"]); err != nil {
		return nil, err
	}
	res["lora_logits_max_abs_diff"] = maxDiff(out[1], gold["lora_logits"], mask)
	res["loss_abs_diff"] = math.Abs(float64(tensors.MustCopyFlatData[float32](out[2])[0] - tensors.MustCopyFlatData[float32](gold["loss"])[0]))
	return res, nil
}

// maxDiff is the largest |got - want| over the rows of [B, T, D] tensors where mask is 1.
func maxDiff(got, want *tensors.Tensor, mask []int32) float64 {
	g, w := tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)
	if len(g) != len(w) {
		return math.Inf(1)
	}
	d := len(w) / len(mask)
	worst := 0.0
	for row, m := range mask {
		if m == 0 {
			continue
		}
		for j := range d {
			worst = max(worst, math.Abs(float64(g[row*d+j]-w[row*d+j])))
		}
	}
	return worst
}

// tf32 says whether the backend's float32 matmuls use TF32 (go-xla's default on CUDA: ~1e-3
// relative error, outside the goldens' tolerance; "tf32=false" in GOMLX_BACKEND turns it off).
func tf32(backend string) string {
	switch {
	case !strings.HasPrefix(backend, "xla"):
		return "n/a"
	case strings.Contains(backend, "tf32=false"):
		return "off"
	case strings.Contains(strings.ToLower(backend), "cuda"):
		return "on"
	}
	return "n/a"
}

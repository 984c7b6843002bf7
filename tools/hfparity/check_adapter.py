#!/usr/bin/python3
"""Independent check of a tracksum checkpoint's PEFT files and of its tracksum-export snapshot.

Reads, with numpy/torch only (no tracksum code, no PEFT, no transformers), for each pair CK EXPORT:

  CK/base.json                              the base snapshot's directory and weights' sha256
  CK/adapter/adapter_config.json            PEFT's LoraConfig (r, lora_alpha, use_rslora, targets)
  CK/adapter/adapter_model.safetensors      base_model.model.<module>.lora_A.weight / lora_B.weight
  (or CK/full/model.safetensors             full fine-tuning, lora.rank 0)
  BASE/model.safetensors, BASE/config.json  the base
  EXPORT/model.safetensors, config.json     the merged snapshot written by tracksum-export

and checks:
  - base.json's sha256 is the base file's;
  - the adapter's key names follow PEFT (base_model.model.<base module>.lora_A.weight [r, in] and
    lora_B.weight [out, r]), every Linear that target_modules selects (PEFT's suffix match) has
    both, nothing else is adapted, and the other keys are modules_to_save (a head);
  - every targeted weight of the export equals base + scale * B @ A (scale = lora_alpha / sqrt(r)
    with use_rslora, else lora_alpha / r), computed here in float64, to within half a unit in the
    last place of the stored dtype plus float32 accumulation error; every other base tensor is
    bit-identical; a head equals the adapter's, rounded to the export's dtype; with full
    fine-tuning every tensor equals full/'s rounded to the export's dtype;
  - the export's config.json is a *ForSequenceClassification with one label per head row when the
    adapter's task_type is SEQ_CLS, else the base's architecture.
With --forward (causal LMs): the forward of tools/hfparity/decoder.py (written from transformers'
modeling code) on the export's weights and on base + adapter applied unmerged (PEFT's
y = x W^T + scale * (x A^T) B^T, float32), for a seeded batch of random tokens: the largest logit
difference is reported (it comes from rounding the merged weights to the stored dtype).

Exits 1 on any mismatch. Usage (from the repository root):

  /usr/bin/python3 tools/hfparity/check_adapter.py [--base DIR] [--forward] CK EXPORT [CK EXPORT ...]

scripts/pretrained-demo.sh runs it on the demo's checkpoints when python3 has torch.
"""

import argparse
import hashlib
import json
import math
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st  # noqa: E402

KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<ab>[AB])\.weight$")
PREFIX = "base_model.model."
# Mantissa bits of the stored dtypes, for the unit in the last place.
MANTISSA = {"BF16": 7, "F16": 10, "F32": 23}


class Failure(Exception):
    pass


def header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h


def to_f64(a, dtype):
    """A stored tensor (numpy, BF16 as uint16 bits) as float64."""
    if dtype == "BF16":
        a = _st.bf16_to_f32(a)
    return np.asarray(a, dtype=np.float64)


def round_to(a32, dtype):
    """float32 numpy -> the stored dtype's value, as float64 (round to nearest even, as torch)."""
    t = torch.from_numpy(np.ascontiguousarray(a32, dtype=np.float32))
    t = {"BF16": t.to(torch.bfloat16), "F16": t.to(torch.float16), "F32": t}[dtype]
    return t.to(torch.float64).numpy()


def ulp(x, dtype):
    """Unit in the last place of |x| in dtype (normal range; subnormals get the smallest normal's)."""
    e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** -14 if dtype == "F16" else 2.0 ** -126)))
    return 2.0 ** (e - MANTISSA[dtype])


def targeted(module, targets):
    """PEFT's target_modules as a list: the module's name equals a target or ends with "." + it."""
    return any(module == t or module.endswith("." + t) for t in targets)


def check_pair(ck, export, base_override, forward):
    ref = json.load(open(os.path.join(ck, "base.json")))
    base_dir = base_override or ref["dir"]
    base_file = os.path.join(base_dir, "model.safetensors")
    digest = hashlib.sha256(open(base_file, "rb").read()).hexdigest()
    if digest != ref["weights_sha256"]:
        raise Failure(f"{ck}/base.json: weights_sha256 {ref['weights_sha256']}, {base_file} has {digest}")
    bh, eh = header(base_file), header(os.path.join(export, "model.safetensors"))
    base, merged = _st.read(base_file), _st.read(os.path.join(export, "model.safetensors"))
    base_cfg = json.load(open(os.path.join(base_dir, "config.json")))
    export_cfg = json.load(open(os.path.join(export, "config.json")))
    report = {"checkpoint": ck, "export": export}

    full_path = os.path.join(ck, "full", "model.safetensors")
    adapter_dir = os.path.join(ck, "adapter")
    if os.path.exists(full_path):
        # Full fine-tuning: the export is full/'s tensors in the base's dtypes.
        fh, full = header(full_path), _st.read(full_path)
        missing = sorted(set(bh) - set(fh))
        if missing:
            raise Failure(f"{full_path}: lacks base tensors {missing[:3]}")
        worst = 0.0
        for name in fh:
            if name not in eh:
                raise Failure(f"{export}: lacks {name} of full/")
            want = round_to(to_f64(full[name], fh[name]["dtype"]).astype(np.float32), eh[name]["dtype"])
            got = to_f64(merged[name], eh[name]["dtype"])
            if not np.array_equal(want, got):
                raise Failure(f"{export}: {name} differs from full/'s rounded to {eh[name]['dtype']} "
                              f"(max {np.abs(want - got).max():.3g})")
            if name in bh:
                worst = max(worst, float(np.abs(got - to_f64(base[name], bh[name]["dtype"])).max()))
        report.update(mode="full", tensors=len(fh), max_change_from_base=worst)
        print(f"check_adapter: {ck}: full fine-tuning: {len(fh)} tensors of {export} equal full/'s "
              f"rounded to the export's dtype (largest change from the base {worst:.3g})")
        return report

    cfg = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    for key, want in (("peft_type", "LORA"), ("bias", "none"), ("fan_in_fan_out", False)):
        if cfg.get(key) != want:
            raise Failure(f"{adapter_dir}/adapter_config.json: {key} = {cfg.get(key)!r}, want {want!r}")
    r, alpha, rslora = cfg["r"], cfg["lora_alpha"], cfg.get("use_rslora", False)
    targets = cfg["target_modules"]
    if isinstance(targets, str):
        raise Failure(f"{adapter_dir}/adapter_config.json: target_modules is a regex; this check handles lists")
    scale = alpha / math.sqrt(r) if rslora else alpha / r
    saved_modules = cfg.get("modules_to_save") or []
    ah = header(os.path.join(adapter_dir, "adapter_model.safetensors"))
    adapter = _st.read(os.path.join(adapter_dir, "adapter_model.safetensors"))

    pairs, heads = {}, {}
    for key, meta in ah.items():
        m = KEY.match(key)
        if m:
            if meta["dtype"] != "F32":
                raise Failure(f"{key}: dtype {meta['dtype']}, PEFT adapters here are float32")
            pairs.setdefault(m["module"], {})[m["ab"]] = adapter[key]
            continue
        if not key.startswith(PREFIX) or key[len(PREFIX):].split(".")[0] not in saved_modules:
            raise Failure(f"{key}: neither base_model.model.<module>.lora_A/B.weight nor a modules_to_save tensor ({saved_modules})")
        heads[key[len(PREFIX):]] = (adapter[key], meta)

    linear = {n[: -len(".weight")] for n, m in bh.items() if n.endswith(".weight") and len(m["shape"]) == 2
              and not n.endswith("embed_tokens.weight") and n != "lm_head.weight"}
    want_modules = {n for n in linear if targeted(n, targets)}
    if set(pairs) != want_modules:
        extra, lacking = sorted(set(pairs) - want_modules), sorted(want_modules - set(pairs))
        raise Failure(f"{adapter_dir}: adapted modules differ from target_modules {targets}: extra {extra[:3]}, missing {lacking[:3]}")
    example = "model.layers.0.self_attn.q_proj"
    if example in pairs and PREFIX + example + ".lora_A.weight" not in ah:
        raise Failure(f"{adapter_dir}: no key base_model.model.{example}.lora_A.weight")

    worst_abs, worst_ulps, total, torch_same, peft_same = 0.0, 0.0, 0, 0, 0
    for module, ab in sorted(pairs.items()):
        if set(ab) != {"A", "B"}:
            raise Failure(f"{module}: has lora_{''.join(ab)} only")
        name = module + ".weight"
        a, b = ab["A"], ab["B"]
        out_dim, in_dim = bh[name]["shape"]
        if list(a.shape) != [r, in_dim] or list(b.shape) != [out_dim, r]:
            raise Failure(f"{module}: lora_A {list(a.shape)}, lora_B {list(b.shape)}; want [{r}, {in_dim}] and [{out_dim}, {r}] for weight {[out_dim, in_dim]}")
        dt = eh[name]["dtype"]
        if dt != bh[name]["dtype"]:
            raise Failure(f"{export}: {name} is {dt}, the base's is {bh[name]['dtype']}")
        w = to_f64(base[name], bh[name]["dtype"])
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        exact = w + scale * (b64 @ a64)
        got = to_f64(merged[name], dt)
        diff = np.abs(got - exact)
        # Rounding to the stored dtype (half an ulp) plus float32 accumulation of the product and sum.
        accum = (r + 2) * 2.0 ** -24 * (np.abs(w) + scale * (np.abs(b64) @ np.abs(a64)))
        tol = 0.5 * ulp(exact, dt) + accum
        if (diff > tol).any():
            i = np.unravel_index(np.argmax(diff - tol), diff.shape)
            raise Failure(f"{export}: {name}{list(i)} = {got[i]!r}, base + scale * B @ A = {exact[i]!r} "
                          f"(difference {diff[i]:.3g} > tolerance {tol[i]:.3g})")
        worst_abs = max(worst_abs, float(diff.max()))
        worst_ulps = max(worst_ulps, float((diff / ulp(exact, dt)).max()))
        total += diff.size
        # How torch would do it: one rounding of the float32 sum (as tracksum), and PEFT's
        # merge_and_unload, which rounds the delta to W's dtype before adding it there.
        w32 = torch.from_numpy(w.astype(np.float32))
        delta = torch.from_numpy(b.copy()) @ torch.from_numpy(a.copy()) * scale
        if dt == "BF16":
            one = (w32 + delta).to(torch.bfloat16).float()
            two = (w32.to(torch.bfloat16) + delta.to(torch.bfloat16)).float()
        else:
            one = two = w32 + delta
        g32 = torch.from_numpy(got.astype(np.float32))
        torch_same += int((one == g32).sum())
        peft_same += int((two == g32).sum())

    adapted = {m + ".weight" for m in pairs}
    for name, meta in bh.items():
        if name in adapted:
            continue
        if name not in eh or eh[name]["dtype"] != meta["dtype"] or eh[name]["shape"] != meta["shape"] or \
                not np.array_equal(merged[name], base[name]):
            if name.split(".")[0] in saved_modules:
                continue
            raise Failure(f"{export}: {name} is not the base's tensor, bit for bit")
    for name, (t, meta) in heads.items():
        if name not in eh:
            raise Failure(f"{export}: lacks the head tensor {name}")
        want = round_to(t.astype(np.float32), eh[name]["dtype"])
        if not np.array_equal(want, to_f64(merged[name], eh[name]["dtype"])):
            raise Failure(f"{export}: head {name} differs from the adapter's rounded to {eh[name]['dtype']}")
    extra = sorted(set(eh) - set(bh) - set(heads))
    if extra:
        raise Failure(f"{export}: tensors in neither the base nor the adapter: {extra[:3]}")

    arch = export_cfg.get("architectures", [""])[0]
    if cfg.get("task_type") == "SEQ_CLS":
        rows = next((t.shape[0] for n, (t, _) in heads.items() if n.endswith(".weight")), None)
        if not arch.endswith("ForSequenceClassification") or len(export_cfg.get("id2label", {})) != rows:
            raise Failure(f"{export}/config.json: architectures {arch}, {len(export_cfg.get('id2label', {}))} labels; "
                          f"want *ForSequenceClassification with {rows}")
    elif export_cfg.get("architectures") != base_cfg.get("architectures"):
        raise Failure(f"{export}/config.json: architectures {export_cfg.get('architectures')}, the base's {base_cfg.get('architectures')}")

    report.update(mode="lora", r=r, lora_alpha=alpha, use_rslora=rslora, scale=scale, modules=len(pairs),
                  values=total, max_abs_diff=worst_abs, max_ulps=worst_ulps, torch_one_rounding_identical=torch_same,
                  peft_two_roundings_identical=peft_same, heads=sorted(heads))
    print(f"check_adapter: {ck}: {len(pairs)} modules, r {r}, alpha {alpha}, rsLoRA {rslora} (scale {scale:g}); "
          f"{total} merged values of {export} == base + scale * B @ A: max |diff| {worst_abs:.3g} "
          f"({worst_ulps:.3f} ulp of the stored dtype); {torch_same}/{total} bit-identical to torch's "
          f"(W.float() + B @ A * scale).to(dtype), {peft_same}/{total} to PEFT's two-rounding merge; "
          f"other tensors bit-identical; heads {sorted(heads) or 'none'}")

    if forward and base_cfg.get("model_type") in ("llama", "mistral", "qwen2", "gemma"):
        import decoder  # tools/hfparity/decoder.py: the reference forward
        decoder.SCALE = scale
        W_base = {n: torch.from_numpy(to_f64(base[n], bh[n]["dtype"]).astype(np.float32)) for n in bh}
        W_exp = {n: torch.from_numpy(to_f64(merged[n], eh[n]["dtype"]).astype(np.float32)) for n in bh}
        lora = {m: (torch.from_numpy(ab["A"].copy()), torch.from_numpy(ab["B"].copy())) for m, ab in pairs.items()}
        g = torch.Generator().manual_seed(0)
        tokens = torch.randint(0, base_cfg["vocab_size"], (2, 24), generator=g)
        mask = torch.ones_like(tokens)
        with torch.no_grad():
            _, lg_lora = decoder.forward(base_cfg, W_base, tokens, mask, lora=lora)
            _, lg_exp = decoder.forward(base_cfg, W_exp, tokens, mask)
            _, lg_base = decoder.forward(base_cfg, W_base, tokens, mask)
        d = float((lg_lora - lg_exp).abs().max())
        moved = float((lg_lora - lg_base).abs().max())
        if not math.isfinite(d) or d > 0.05 * max(1.0, float(lg_lora.abs().max())):
            raise Failure(f"{export}: forward logits differ from base + adapter by {d:.3g}")
        report.update(forward_max_logit_diff=d, forward_adapter_moves_logits=moved)
        print(f"check_adapter: {ck}: forward of {export} vs base + unmerged adapter (2 x 24 random tokens): "
              f"max |logit diff| {d:.3g} (the adapter moves the logits by up to {moved:.3g})")
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", help="base snapshot directory (default: the one CK/base.json names)")
    p.add_argument("--forward", action="store_true", help="also compare forward logits (causal LMs)")
    p.add_argument("--json", help="write the figures to this JSON file")
    p.add_argument("pairs", nargs="+", metavar="CK EXPORT")
    a = p.parse_args()
    if len(a.pairs) % 2:
        p.error("give checkpoint and export directories in pairs: CK EXPORT [CK EXPORT ...]")
    reports = []
    try:
        for i in range(0, len(a.pairs), 2):
            reports.append(check_pair(a.pairs[i], a.pairs[i + 1], a.base, a.forward))
    except (Failure, OSError, KeyError, ValueError) as e:
        print(f"check_adapter: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(reports, f, indent=2)
    print(f"check_adapter: ok ({len(reports)} checkpoint{'s' if len(reports) != 1 else ''})")


if __name__ == "__main__":
    main()

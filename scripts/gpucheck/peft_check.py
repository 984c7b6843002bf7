#!/usr/bin/env python3
"""GPU check steps (d) and (e), the Hugging Face side (scripts/gpu-check.sh; docs/gpu.md).

  peft_check.py load  --checkpoint CK --export DIR --ours LOGITS.safetensors [--tol 1e-3 --export-tol 1e-2] [--nf4]
      (e) PeftModel.from_pretrained(base, CK/adapter) and AutoModelForCausalLM.from_pretrained(DIR)
      (our merged export) on the token batch of `gpucheck logits`, logits compared with ours.
      --nf4 (a QLoRA checkpoint): bitsandbytes is absent there, so the base's layer projections are
      replaced by their NF4 round trip (blocks of 64, double quantization), as bitsandbytes'
      load_in_4bit would hold them (tools/hfparity/nf4.py's codec, ties aside).
  peft_check.py train --checkpoint CK --task NAME --batch B --seq T --steps N [--dtype bfloat16]
      (d) the same LoRA steps with transformers + PEFT: the base in --dtype, our adapter (trainable,
      float32 as PEFT casts it), AdamW, seeded random tokens of our run's shape with the loss on the
      last 8 positions: tokens/s, first loss, peak memory (torch.cuda.max_memory_allocated).

Prints one JSON object per line. Without torch, transformers or peft it prints a "skipped" status
and exits 0: the check runs everywhere and says what it could not do.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "hfparity"))


def emit(**kw):
    print(json.dumps(kw), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["load", "train"])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--export")
    ap.add_argument("--ours")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--export-tol", type=float, default=1e-2)
    ap.add_argument("--task", default="tracker")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--nf4", action="store_true",
                    help="the checkpoint's base is NF4 (train.quantization nf4): quantize the base's projections as bitsandbytes would")
    ap.add_argument("--gradient-checkpointing", action="store_true",
                    help="recompute each layer in the backward pass, as our run with train.gradient_checkpointing")
    a = ap.parse_args()
    step = "peft" if a.mode == "load" else "reference"
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import peft  # noqa: F401
    except ImportError as e:
        emit(step="skip", skipped=f"transformers/peft absent ({e})")
        return 0
    try:
        if a.mode == "load":
            return load(a)
        return train(a)
    except Exception as e:  # one line for the report; the log has the trace
        import traceback

        traceback.print_exc()
        emit(step=step, checkpoint=a.checkpoint, task=a.task, ok=False, error=f"{type(e).__name__}: {e}"[:500])
        return 1


def base_dir(ck):
    with open(os.path.join(ck, "base.json")) as f:
        return json.load(f)["dir"]


def device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load(a):
    import numpy as np
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    import _st

    ours = _st.read(a.ours)
    tokens = torch.from_numpy(np.asarray(ours["tokens"], dtype=np.int64)).to(device())
    want = np.asarray(ours["logits"], dtype=np.float64)
    dev = device()
    rc = 0

    def logits(model):
        with torch.no_grad():
            return model(input_ids=tokens).logits.float().cpu().numpy().astype(np.float64)

    def compare(what, got, tol, against=None):
        nonlocal rc
        diff = float(np.abs(got - (want if against is None else against)).max())
        ok = diff <= tol
        rc |= 0 if ok else 1
        emit(step="peft", checkpoint=a.checkpoint, what=what, max_abs_diff=diff, tolerance=tol, ok=ok)

    base = AutoModelForCausalLM.from_pretrained(base_dir(a.checkpoint), torch_dtype=torch.float32).to(dev)
    if a.nf4:
        n = nf4_base(base)
        emit(step="peft", checkpoint=a.checkpoint, what="base projections NF4 round trip (no bitsandbytes)", weights=n, ok=n > 0)
    model = PeftModel.from_pretrained(base, os.path.join(a.checkpoint, "adapter")).to(dev).eval()
    compare("PeftModel.from_pretrained(base, adapter), float32", logits(model), a.tol)
    if a.export:
        exp = AutoModelForCausalLM.from_pretrained(a.export, torch_dtype=torch.float32).to(dev).eval()
        exported = logits(exp)
        del exp
        # The merged weights are rounded to the base's stored dtype (bf16): a larger tolerance.
        compare("AutoModelForCausalLM.from_pretrained(export), float32", exported, a.export_tol)
        # Is that rounding all of it? PEFT's own merge (merge_and_unload, float32), each weight then
        # rounded once to the dtype the export stores, must give the export's logits: equal merges
        # differ by at most one rounding step in a few weights, far below the export tolerance.
        stored = export_dtype(a.export)
        merged = model.merge_and_unload()
        with torch.no_grad():
            for p in merged.parameters():
                p.data = p.data.to(stored).to(torch.float32)
        compare("PEFT merge_and_unload() rounded to %s, vs our export" % str(stored).replace("torch.", ""),
                logits(merged), a.tol, against=exported)
        del merged
    del model, base
    return rc


def nf4_base(model):
    """Replaces each layer projection whose size is a multiple of 64 (what hf/decoder packs) by
    its NF4 quantization dequantized, in float32: blocks of 64 scaled by their absmax, the nearest
    NF4 level, the absmax values 8-bit coded (dynamic map, blocks of 256, minus their mean).
    Returns how many weights it replaced."""
    import torch

    import nf4 as ref

    levels = ref.NF4.to(torch.float32)
    code = ref.create_dynamic_map().to(torch.float32)
    n = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".layers." not in name or not name.endswith("_proj.weight") or p.numel() % 64:
                continue
            dev = p.device
            lv, cd = levels.to(dev), code.to(dev)
            blocks = p.data.float().reshape(-1, 64)
            absmax = blocks.abs().amax(-1)
            scaled = torch.clamp(blocks * (1.0 / absmax.clamp(min=1e-38)).view(-1, 1), -1, 1)
            q = torch.bucketize(scaled, (lv[:-1] + lv[1:]) / 2)
            offset = absmax.double().mean().float()
            centred = absmax - offset
            pad = (-centred.numel()) % 256
            nb = torch.cat([centred, torch.zeros(pad, device=dev)]).reshape(-1, 256)
            nested = nb.abs().amax(-1)
            c = torch.bucketize(nb * (1.0 / nested.clamp(min=1e-38)).view(-1, 1), (cd[:-1] + cd[1:]) / 2)
            absmax2 = (cd[c] * nested.view(-1, 1)).reshape(-1)[: absmax.numel()] + offset
            p.data = (lv[q] * absmax2.view(-1, 1)).reshape(p.shape).to(p.dtype)
            n += 1
    return n


def export_dtype(export):
    """The dtype the export's weights are stored in (config.json's torch_dtype/dtype; bf16 by default)."""
    import torch

    with open(os.path.join(export, "config.json")) as f:
        cfg = json.load(f)
    name = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(name, torch.bfloat16)


def train(a):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    dev = device()
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[a.dtype]
    base = AutoModelForCausalLM.from_pretrained(base_dir(a.checkpoint), torch_dtype=dtype).to(dev)
    if a.gradient_checkpointing:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()
    model = PeftModel.from_pretrained(base, os.path.join(a.checkpoint, "adapter"), is_trainable=True).to(dev)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
    g = torch.Generator().manual_seed(3407)
    vocab = model.config.vocab_size
    tokens = torch.randint(0, vocab, (a.batch, a.seq), generator=g).to(dev)
    labels = torch.full_like(tokens, -100)
    labels[:, -8:] = tokens[:, -8:]  # the loss on the answer only, as ours
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    losses, start = [], None
    for i in range(a.steps + 1):
        if i == 1:  # the first step compiles kernels and allocates: not timed
            if dev == "cuda":
                torch.cuda.synchronize()
            start = time.time()
        out = model(input_ids=tokens, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(out.loss.detach()))
    if dev == "cuda":
        torch.cuda.synchronize()
    secs = time.time() - start
    peak = torch.cuda.max_memory_allocated() if dev == "cuda" else None
    emit(step="reference", task=a.task, snapshot=base_dir(a.checkpoint), device=dev, dtype=a.dtype, batch=a.batch,
         max_seq_len=a.seq, steps=a.steps, gradient_checkpointing=a.gradient_checkpointing, tokens_per_sec=a.batch * a.seq * a.steps / secs, first_loss=losses[0],
         losses=losses, peak_bytes=peak, ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

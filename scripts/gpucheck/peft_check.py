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
      float32 as PEFT casts it) with lora_B zeroed (our initialisation: the adapter adds nothing
      before the first update, so the first loss is comparable with ours), AdamW (lr 1e-4, weight
      decay 0.01), on our run's own batches (--batches: ids, attention lengths, answer labels) or
      else seeded random tokens of its shape with the loss on the last 8 positions: real tokens/s
      over the steps after the first, first loss (against ours, --batches), MFU (--peak-tflops;
      docs/gpu.md's FLOP count), peak memory (torch.cuda.max_memory_allocated).

  peft_check.py generate --checkpoint CK --prompts FILE [--batch-sizes 1,8,32 --beams 1,4 --max-new 64 --dtype float32]
      transformers' generate (PeftModel over the base, in --dtype; TF32 off in float32) on the prompts
      `gpucheck generate` wrote, left-padded, at each batch and beam size: new tokens/s of the second
      call (the first warms up); greedy ids compared with ours (batch 1 on the first prompt, and the
      largest batch on all).

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
    ap.add_argument("mode", choices=["load", "train", "generate"])
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
    ap.add_argument("--prompts", help="generate: gpucheck generate's prompts file (prompt ids, our greedy ids)")
    ap.add_argument("--batch-sizes", default="1,8,32", help="generate: batch sizes")
    ap.add_argument("--beams", default="1,4", help="generate: beam sizes (1: greedy)")
    ap.add_argument("--max-new", type=int, default=64, help="generate: new tokens at most")
    ap.add_argument("--batches", help="our run's batches (gpucheck train's TASK-batches.jsonl): train on them, not on random tokens")
    ap.add_argument("--peak-tflops", type=float, default=0, help="the card's dense bf16 peak, for the MFU (0: none)")
    ap.add_argument("--gradient-checkpointing", action="store_true",
                    help="recompute each layer in the backward pass, as our run with train.gradient_checkpointing")
    a = ap.parse_args()
    step = {"load": "peft", "train": "reference", "generate": "hf_generate"}[a.mode]
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
        if a.mode == "generate":
            return generate(a)
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


def read_batches(path, dev):
    """Our run's micro-batches as (step, our loss, input_ids, attention_mask, labels, real tokens)."""
    import torch

    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            ids = torch.tensor(r["input_ids"], dtype=torch.long)
            mask = torch.zeros_like(ids)
            labels = torch.full_like(ids, -100)
            for b, n in enumerate(r["lengths"]):
                mask[b, :n] = 1
                for p, t in zip(r["label_pos"][b], r["label_ids"][b]):
                    labels[b, p + 1] = t  # transformers shifts: logits at p predict labels[p + 1]
            out.append((r["step"], r["loss"], ids.to(dev), mask.to(dev), labels.to(dev), int(sum(r["lengths"]))))
    return out


def flops_per_token(cfg, seq, answer, checkpointing):
    """docs/gpu.md's FLOPs of a LoRA step per token (tools/gpucheck's trainFLOPsPerToken)."""
    h = cfg.hidden_size
    hd = getattr(cfg, "head_dim", None) or h // cfg.num_attention_heads
    q, kv = cfg.num_attention_heads * hd, getattr(cfg, "num_key_value_heads", cfg.num_attention_heads) * hd
    proj = h * q + 2 * h * kv + q * h + 3 * h * cfg.intermediate_size
    linear = 2 * proj * cfg.num_hidden_layers
    attn = 4 * seq * q * cfg.num_hidden_layers
    head = 2 * cfg.vocab_size * h * answer / max(seq, 1)
    fwd = linear + attn + head
    total = fwd + linear + head + 2 * attn
    return total + fwd if checkpointing else total


def train(a):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    dev = device()
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[a.dtype]
    if dev == "cuda" and dtype == torch.float32:
        # Our f32 runs use go-xla's TF32 matmuls; the reference the same.
        torch.backends.cuda.matmul.allow_tf32 = True
    base = AutoModelForCausalLM.from_pretrained(base_dir(a.checkpoint), torch_dtype=dtype).to(dev)
    if a.gradient_checkpointing:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()
    model = PeftModel.from_pretrained(base, os.path.join(a.checkpoint, "adapter"), is_trainable=True).to(dev)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.zero_()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
    if a.batches:
        batches = read_batches(a.batches, dev)
        answer = max(len(p) for s in [json.loads(l)["label_pos"] for l in open(a.batches)] for p in s)
    else:
        g = torch.Generator().manual_seed(3407)
        vocab = model.config.vocab_size
        tokens = torch.randint(0, vocab, (a.batch, a.seq), generator=g).to(dev)
        labels = torch.full_like(tokens, -100)
        labels[:, -8:] = tokens[:, -8:]  # the loss on the answer only, as ours
        batches = [(i + 1, None, tokens, torch.ones_like(tokens), labels, a.batch * a.seq) for i in range(a.steps)]
        answer = 8
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    losses, ours, start, real = [], [], None, 0
    for i, (step, our_loss, ids, mask, labels, n) in enumerate(batches):
        if i == 1:  # the first step compiles kernels and allocates: not timed
            if dev == "cuda":
                torch.cuda.synchronize()
            start = time.time()
        if i >= 1:
            real += n
        out = model(input_ids=ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(out.loss.detach()))
        ours.append(our_loss)
    if dev == "cuda":
        torch.cuda.synchronize()
    secs = max(time.time() - start, 1e-9) if start is not None else None
    tps = real / secs if secs else None
    seq = batches[0][2].shape[1]
    res = dict(step="reference", task=a.task, snapshot=base_dir(a.checkpoint), device=dev, dtype=a.dtype,
               batch=int(batches[0][2].shape[0]), max_seq_len=int(seq), steps=len(batches),
               gradient_checkpointing=a.gradient_checkpointing, same_batches=bool(a.batches),
               tokens_per_sec=tps, first_loss=losses[0], losses=losses,
               peak_bytes=torch.cuda.max_memory_allocated() if dev == "cuda" else None, ok=True)
    if a.batches and ours[0] is not None:
        # Step 0 is the base model's loss on the same batch (the adapters add nothing yet): equal
        # up to the precision's rounding: 1e-2 relative in bf16, 2e-3 in f32 with TF32 matmuls.
        tol = 1e-2 if a.dtype == "bfloat16" else 2e-3
        diff = abs(losses[0] - ours[0])
        res.update(ours_first_loss=ours[0], first_loss_rel_diff=diff / max(abs(ours[0]), 1e-9), first_loss_tol=tol)
        res["ok"] = diff <= tol * max(abs(ours[0]), 1e-9)
    if a.peak_tflops > 0 and tps:
        f = flops_per_token(model.config, seq, answer, a.gradient_checkpointing)
        res.update(flops_per_token=f, mfu=tps * f / (a.peak_tflops * 1e12))
    emit(**res)
    return 0 if res["ok"] else 1


def generate(a):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    dev = device()
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[a.dtype]
    if dev == "cuda":
        # Our greedy ids come from float32 matmuls with TF32 off (the script's EXACT backend).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    base = AutoModelForCausalLM.from_pretrained(base_dir(a.checkpoint), torch_dtype=dtype).to(dev)
    model = PeftModel.from_pretrained(base, os.path.join(a.checkpoint, "adapter")).to(dev).eval()
    rows = [json.loads(line) for line in open(a.prompts)]
    pad = model.config.pad_token_id
    if pad is None:
        pad = 0
    eos = model.config.eos_token_id

    def run(prompts, beams):
        n = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (n - len(p)) + p for p in prompts], dtype=torch.long, device=dev)
        mask = torch.tensor([[0] * (n - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long, device=dev)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=a.max_new, do_sample=False,
                                 num_beams=beams, eos_token_id=eos, pad_token_id=pad)
        if dev == "cuda":
            torch.cuda.synchronize()
        return [o[n:].tolist() for o in out]

    def trim(seq):
        """The ids up to and including the first end token (generate pads finished rows after it)."""
        ends = eos if isinstance(eos, list) else [eos]
        for i, t in enumerate(seq):
            if t in ends:
                return seq[: i + 1]
        return seq

    def same(ours, theirs):
        k = 0
        while k < min(len(ours), len(theirs)) and ours[k] == theirs[k]:
            k += 1
        return k

    ok = True
    for beams in [int(x) for x in a.beams.split(",")]:
        for b in [int(x) for x in a.batch_sizes.split(",")]:
            prompts = [r["prompt"] for r in rows[:b]]
            if len(prompts) < b:
                prompts = (prompts * b)[:b]
            run(prompts, beams)  # warm-up: kernels, allocator
            t0 = time.time()
            got = [trim(s) for s in run(prompts, beams)]
            secs = time.time() - t0
            new = sum(len(s) for s in got)
            res = dict(step="hf_generate", checkpoint=a.checkpoint, device=dev, dtype=a.dtype, batch=b, beam=beams,
                       max_new_tokens=a.max_new, seconds=secs, new_tokens=new, tokens_per_sec=new / max(secs, 1e-9), ok=True)
            if beams == 1:
                ours = [r["greedy"] for r in rows[:len(got)]]
                agree = [same(o, t) for o, t in zip(ours, got)]
                res["identical_greedy"] = sum(1 for o, t, k in zip(ours, got, agree) if k == len(o) == len(t))
                res["compared"] = len(agree)
                res["first_divergence"] = min(agree)
                # Identical greedy tokens are expected in float32 without TF32 (a near-tie of a
                # random model's logits can still split them: first_divergence says where).
                res["ok"] = res["identical_greedy"] == len(agree) or a.dtype != "float32"
                ok = ok and res["ok"]
            emit(**res)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

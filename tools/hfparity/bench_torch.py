#!/usr/bin/python3
"""PyTorch CPU timing of hf/decoder's benchmarks on the same shapes, for a side-by-side figure.

A random checkpoint of SmolLM2-135M's shape (hidden 576, 30 layers, 9 heads, 3 key/value heads,
intermediate 1536, vocabulary 49152, tied embeddings), a batch of 4 x 128 tokens:
  forward    logits of the batch, no gradients
  lora step  forward with rank-16 rsLoRA adapters on q,k,v,o,gate,up,down (base frozen), the
             next-token loss, backward into the adapters only, a plain SGD update
The model is decoder.py's reference forward (the one the parity goldens come from), eager float32.
Prints tokens/s (wall) and tokens per CPU-second (process time, all threads).

Usage: /usr/bin/python3 tools/hfparity/bench_torch.py [--threads N] [--iters N]
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _threads  # noqa: E402

_threads.pin_blas_threads(None)

import torch  # noqa: E402

import decoder  # noqa: E402

CONFIG = dict(model_type="llama", vocab_size=49152, hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
              num_key_value_heads=3, intermediate_size=1536, rms_norm_eps=1e-5, rope_theta=100000.0,
              tie_word_embeddings=True, hidden_act="silu", rope_scaling=None)
B, T, RANK = 4, 128, 16


def timed(fn, iters):
    fn()  # warm-up
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(iters):
        fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return wall / iters, cpu / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--iters", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = CONFIG
    W = {"model.embed_tokens.weight": torch.randn(c["vocab_size"], c["hidden_size"]) * 0.02,
         "model.norm.weight": torch.ones(c["hidden_size"])}
    lora = {}
    for i in range(c["num_hidden_layers"]):
        W[f"model.layers.{i}.input_layernorm.weight"] = torch.ones(c["hidden_size"])
        W[f"model.layers.{i}.post_attention_layernorm.weight"] = torch.ones(c["hidden_size"])
        for key, _, o, n, _ in decoder.modules(c, i):
            W[key + ".weight"] = torch.randn(o, n) * 0.02
            a = (torch.rand(RANK, n) * 2 - 1) / math.sqrt(n)
            lora[key] = (a.requires_grad_(True), torch.zeros(o, RANK, requires_grad=True))
    decoder.SCALE = 16 / math.sqrt(RANK)  # rsLoRA, alpha 16
    tokens = torch.randint(0, c["vocab_size"], (B, T))
    mask = torch.ones(B, T, dtype=torch.int64)

    def forward():
        with torch.no_grad():
            decoder.forward(c, W, tokens, mask)

    def lora_step():
        _, logits = decoder.forward(c, W, tokens, mask, lora)
        loss = decoder.causal_lm_loss(logits, tokens)
        loss.backward()
        with torch.no_grad():
            for a, b in lora.values():
                a -= 1e-3 * a.grad
                b -= 1e-3 * b.grad
                a.grad = None
                b.grad = None

    n = B * T
    for name, fn in (("forward", forward), ("lora step", lora_step)):
        wall, cpu = timed(fn, args.iters)
        print(f"torch {torch.__version__} threads={args.threads} {name}: {wall:.3f} s/iter, "
              f"{n / wall:.1f} tokens/s, {n / cpu:.1f} tokens per CPU-second")


if __name__ == "__main__":
    main()

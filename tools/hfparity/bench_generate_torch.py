#!/usr/bin/python3
"""PyTorch CPU anchor of model/pretrained's BenchmarkGenerate, on the same shapes.

A random 4-layer Llama (hidden 256, 8 heads, 4 key/value heads, intermediate 704, vocabulary 2000,
untied head), rank-8 LoRA on q_proj and v_proj, 8 prompts of 48 tokens, greedy decoding of 64 new
tokens with a KV cache as transformers' generate() does it: one prefill of the prompt, then one
forward per new token over the cached keys and values. Batch 1 decodes the prompts one at a time,
batch 8 all together. The math is decoder.py's reference layer (eager, float32) with a cache.
Prints generated tokens per second (wall) and per CPU-second (process time, all threads).

Usage: /usr/bin/python3 tools/hfparity/bench_generate_torch.py [--threads N] [--iters N]
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _threads  # noqa: E402

_threads.pin_blas_threads(1)

import torch  # noqa: E402

import decoder  # noqa: E402

C = dict(model_type="llama", vocab_size=2000, hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
         num_key_value_heads=4, intermediate_size=704, rms_norm_eps=1e-5, rope_theta=10000.0,
         tie_word_embeddings=False, hidden_act="silu", rope_scaling=None)
RANK, PROMPTS, PROMPT_LEN, NEW = 8, 8, 48, 64


def build():
    torch.manual_seed(3)
    c, h = C, C["hidden_size"]
    W = {"model.embed_tokens.weight": torch.randn(c["vocab_size"], h) * 0.02,
         "model.norm.weight": torch.ones(h), "lm_head.weight": torch.randn(c["vocab_size"], h) * 0.02}
    lora = {}
    for i in range(c["num_hidden_layers"]):
        W[f"model.layers.{i}.input_layernorm.weight"] = torch.ones(h)
        W[f"model.layers.{i}.post_attention_layernorm.weight"] = torch.ones(h)
        for key, name, o, n, _ in decoder.modules(c, i):
            W[key + ".weight"] = torch.randn(o, n) * 0.02
            if name in ("q_proj", "v_proj"):
                lora[key] = ((torch.rand(RANK, n) * 2 - 1) / math.sqrt(n), torch.randn(o, RANK) * 0.02)
    return W, lora


def step(W, lora, tokens, start, cache):
    """Logits of the last position of tokens [B, S] at positions start.., appending to cache."""
    c = C
    B, S = tokens.shape
    nh, kvh, hd = c["num_attention_heads"], c["num_key_value_heads"], decoder.head_dim(c)
    scale = 16 / math.sqrt(RANK)

    def linear(key, x):
        y = x @ W[key + ".weight"].T
        if key in lora:
            a, b = lora[key]
            y = y + (x @ a.T) @ b.T * scale
        return y

    h = W["model.embed_tokens.weight"][tokens]
    pos = torch.arange(start, start + S, dtype=torch.float32)
    freqs = pos[:, None] * decoder.inv_freq(c)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    total = start + S
    i = torch.arange(start, total)[:, None]
    j = torch.arange(total)[None, :]
    bias = torch.where(j <= i, 0.0, torch.finfo(torch.float32).min)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = decoder.rms_norm(h, W[p + "input_layernorm.weight"], c["rms_norm_eps"], False)
        q = linear(p + "self_attn.q_proj", x).view(B, S, nh, hd).transpose(1, 2)
        k = linear(p + "self_attn.k_proj", x).view(B, S, kvh, hd).transpose(1, 2)
        v = linear(p + "self_attn.v_proj", x).view(B, S, kvh, hd).transpose(1, 2)
        q = q * cos + decoder.rotate_half(q) * sin
        k = k * cos + decoder.rotate_half(k) * sin
        if layer in cache:
            pk, pv = cache[layer]
            k, v = torch.cat((pk, k), dim=2), torch.cat((pv, v), dim=2)
        cache[layer] = (k, v)
        rep = nh // kvh
        kk = k[:, :, None].expand(B, kvh, rep, total, hd).reshape(B, nh, total, hd)
        vv = v[:, :, None].expand(B, kvh, rep, total, hd).reshape(B, nh, total, hd)
        att = torch.softmax(q @ kk.transpose(2, 3) * hd ** -0.5 + bias, dim=-1)
        h = h + linear(p + "self_attn.o_proj", (att @ vv).transpose(1, 2).reshape(B, S, nh * hd))
        x = decoder.rms_norm(h, W[p + "post_attention_layernorm.weight"], c["rms_norm_eps"], False)
        h = h + linear(p + "mlp.down_proj", torch.nn.functional.silu(linear(p + "mlp.gate_proj", x)) * linear(p + "mlp.up_proj", x))
    h = decoder.rms_norm(h[:, -1:], W["model.norm.weight"], c["rms_norm_eps"], False)
    return (h @ W["lm_head.weight"].T)[:, -1]


def generate(W, lora, prompts):
    with torch.no_grad():
        cache = {}
        logits = step(W, lora, prompts, 0, cache)
        out = []
        for t in range(NEW):
            nxt = logits.argmax(-1)
            out.append(nxt)
            logits = step(W, lora, nxt[:, None], PROMPT_LEN + t, cache)
    return len(out) * prompts.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    W, lora = build()
    prompts = torch.tensor([[(i * 97 + j * 31) % 1990 for j in range(PROMPT_LEN)] for i in range(PROMPTS)])
    for batch in (1, 8):
        def run():
            return sum(generate(W, lora, prompts[lo:lo + batch]) for lo in range(0, PROMPTS, batch))
        run()  # warm-up
        w0, c0 = time.perf_counter(), time.process_time()
        tokens = sum(run() for _ in range(args.iters))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        print(f"torch {torch.__version__} threads={args.threads} generate batch{batch}: "
              f"{tokens / wall:.1f} tokens/s, {tokens / cpu:.1f} tokens per CPU-second")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Golden outputs of tiny random causal LMs (llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text,
phi3) for hf/decoder's tests.

transformers is not installable here, so the forward pass below is written from Hugging Face's
modeling_llama.py, modeling_mistral.py, modeling_qwen2.py, modeling_qwen3.py, modeling_gemma.py,
modeling_gemma2.py, modeling_gemma3.py (Gemma3ForCausalLM, text only) and modeling_phi3.py (eager attention,
float32) and PEFT's lora.Linear; it runs on Debian's torch 1.13 CPU. For each family it writes to
hf/decoder/testdata/<family>/:

  config.json, model.safetensors, tokenizer.json, tokenizer_config.json   a snapshot in HF layout
  adapter_config.json, adapter_model.safetensors   a LoRA (rank 4, rsLoRA, B != 0) with PEFT keys
  golden.safetensors   tokens, mask, labels and the outputs:
      hidden, logits               base model forward (last_hidden_state after the final norm)
      lora_logits                  forward with the adapter
      merged_logits                forward with W + scale * B @ A merged into the base weights
      loss                         mean next-token cross-entropy of the adapter model on labels
                                   (prompt and padding set to -100, transformers' ForCausalLMLoss)
      grad.<PEFT key>              gradients of that loss with respect to a few adapter tensors

Regenerate: /usr/bin/python3 tools/hfparity/decoder.py [FAMILY ...]   (from the repository root;
no argument: every family; each family's random stream is seeded by its position in FAMILIES, so
adding one at the end leaves the others' files unchanged)
"""

import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hf", "decoder", "testdata")

BASE = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=64, rms_norm_eps=1e-5, rope_theta=10000.0,
            max_position_embeddings=256, bos_token_id=1, eos_token_id=2, hidden_act="silu",
            initializer_range=0.02, torch_dtype="float32")

FAMILIES = {
    # Llama 3.1's rope_scaling; original_max_position_embeddings chosen so the frequencies of a
    # head_dim of 8 fall in all three bands (kept, smoothed, divided).
    "llama": dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"], tie_word_embeddings=False,
                  attention_bias=False, mlp_bias=False,
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=64)),
    # A window shorter than the sequence, so that it matters.
    "mistral": dict(BASE, model_type="mistral", architectures=["MistralForCausalLM"], tie_word_embeddings=False,
                    sliding_window=4, rope_scaling=None),
    "qwen2": dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], tie_word_embeddings=True,
                  rope_theta=1000000.0, use_sliding_window=False, sliding_window=None, rope_scaling=None),
    # head_dim 16 != hidden/heads = 8, one key/value head (as gemma-2b), tied embeddings.
    "gemma": dict(BASE, model_type="gemma", architectures=["GemmaForCausalLM"], tie_word_embeddings=True,
                  head_dim=16, num_key_value_heads=1, hidden_act="gelu_pytorch_tanh",
                  hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, rope_scaling=None),
    # Per-head q/k RMSNorm; head_dim 16 != hidden/heads = 8 (Qwen3's head_dim is its own key).
    "qwen3": dict(BASE, model_type="qwen3", architectures=["Qwen3ForCausalLM"], tie_word_embeddings=False,
                  head_dim=16, attention_bias=False, rope_theta=1000000.0, use_sliding_window=False,
                  sliding_window=None, rope_scaling=None),
    # Sandwich norms, soft-capped attention scores and logits (small caps, so that tanh bites),
    # query_pre_attn_scalar != head_dim, a window of 4 on layer 0 (even layers slide).
    "gemma2": dict(BASE, model_type="gemma2", architectures=["Gemma2ForCausalLM"], tie_word_embeddings=True,
                   head_dim=16, hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                   rms_norm_eps=1e-6, rope_scaling=None, query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                   final_logit_softcapping=3.0, sliding_window=4),
    # Three layers: two local (window 4, rope_local_base_freq) then one global (rope_theta with
    # linear rope_scaling); per-head q/k norms with Gemma's (1 + w); layer_types written out.
    "gemma3_text": dict(BASE, model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], tie_word_embeddings=True,
                        num_hidden_layers=3, head_dim=16, hidden_activation="gelu_pytorch_tanh",
                        hidden_act="gelu_pytorch_tanh", rms_norm_eps=1e-6, query_pre_attn_scalar=24,
                        attn_logit_softcapping=None, final_logit_softcapping=None, sliding_window=4,
                        sliding_window_pattern=3, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                        rope_scaling=dict(rope_type="linear", factor=8.0),
                        layer_types=["sliding_attention", "sliding_attention", "full_attention"]),
    # Fused qkv_proj and gate_up_proj (Phi3Attention, Phi3MLP), a window of 4 on every layer.
    "phi3": dict(BASE, model_type="phi3", architectures=["Phi3ForCausalLM"], tie_word_embeddings=False,
                 sliding_window=4, rope_scaling=None, original_max_position_embeddings=256,
                 partial_rotary_factor=1.0, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0),
}
FUSED = ("phi3",)

GEMMA_NORM = ("gemma", "gemma2", "gemma3_text")  # RMSNorm scaled by (1 + w), embeddings by sqrt(hidden)
SANDWICH = ("gemma2", "gemma3_text")  # post-attention, pre- and post-feedforward norms
QK_NORM = ("qwen3", "gemma3_text")

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
FUSED_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
RANK, ALPHA = 4, 8.0
SCALE = ALPHA / math.sqrt(RANK)  # rsLoRA
GRAD_MODULES = ["model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.v_proj", "model.layers.1.mlp.down_proj"]


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def modules(c, i):
    """(HF key prefix, module name, out, in, has bias) of layer i's projections."""
    h, hd = c["hidden_size"], head_dim(c)
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    bias = c["model_type"] == "qwen2"
    p = f"model.layers.{i}."
    if c["model_type"] in FUSED:
        return [
            (p + "self_attn.qkv_proj", "qkv_proj", q + 2 * kv, h, False),
            (p + "self_attn.o_proj", "o_proj", h, q, False),
            (p + "mlp.gate_up_proj", "gate_up_proj", 2 * c["intermediate_size"], h, False),
            (p + "mlp.down_proj", "down_proj", h, c["intermediate_size"], False),
        ]
    return [
        (p + "self_attn.q_proj", "q_proj", q, h, bias),
        (p + "self_attn.k_proj", "k_proj", kv, h, bias),
        (p + "self_attn.v_proj", "v_proj", kv, h, bias),
        (p + "self_attn.o_proj", "o_proj", h, q, False),
        (p + "mlp.gate_proj", "gate_proj", c["intermediate_size"], h, False),
        (p + "mlp.up_proj", "up_proj", c["intermediate_size"], h, False),
        (p + "mlp.down_proj", "down_proj", h, c["intermediate_size"], False),
    ]


def random_weights(c, rng):
    h, v = c["hidden_size"], c["vocab_size"]
    gemma = c["model_type"] in GEMMA_NORM
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (v, h))}

    def norm(n=h):
        # gemma stores w of its (1 + w) scale
        return rng.normal(0, 0.1, n) + (0.0 if gemma else 1.0)

    for i in range(c["num_hidden_layers"]):
        w[f"model.layers.{i}.input_layernorm.weight"] = norm()
        w[f"model.layers.{i}.post_attention_layernorm.weight"] = norm()
        if c["model_type"] in SANDWICH:
            w[f"model.layers.{i}.pre_feedforward_layernorm.weight"] = norm()
            w[f"model.layers.{i}.post_feedforward_layernorm.weight"] = norm()
        for key, _, o, n, bias in modules(c, i):
            w[key + ".weight"] = rng.normal(0, 1 / math.sqrt(n), (o, n))
            if bias:
                w[key + ".bias"] = rng.normal(0, 0.1, o)
        if c["model_type"] in QK_NORM:
            for name in ("q_norm", "k_norm"):
                w[f"model.layers.{i}.self_attn.{name}.weight"] = norm(head_dim(c))
    w["model.norm.weight"] = norm()
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = rng.normal(0, 1 / math.sqrt(h), (v, h))
    return {k: np.asarray(a, dtype=np.float32) for k, a in w.items()}


def inv_freq(c, local=False):
    """LlamaRotaryEmbedding's inv_freq (_compute_default_rope_parameters / _compute_linear_scaling_rope_parameters /
    _compute_llama3_parameters); local: Gemma 3's sliding layers (rope_local_base_freq, no scaling)."""
    dim, base = head_dim(c), c["rope_local_base_freq"] if local else c["rope_theta"]
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = None if local else c.get("rope_scaling")
    if not rs:
        return inv
    if rs.get("rope_type") == "linear":
        return inv / rs["factor"]
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_l)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rms_norm(x, w, eps, gemma):
    var = x.pow(2).mean(-1, keepdim=True)
    h = x * torch.rsqrt(var + eps)
    return h * (1.0 + w) if gemma else w * h


def act(c, x):
    if c["hidden_act"] == "silu" and c["model_type"] not in GEMMA_NORM:
        return torch.nn.functional.silu(x)
    return torch.nn.functional.gelu(x, approximate="tanh")


def is_sliding(c, layer):
    """Whether a layer attends within sliding_window: every layer (mistral), layer_types, or Gemma 2's
    even layers and Gemma 3's sliding_window_pattern."""
    mt = c["model_type"]
    if mt in ("mistral", "phi3"):
        return bool(c.get("sliding_window"))
    if "layer_types" in c:
        return c["layer_types"][layer] == "sliding_attention"
    if mt == "gemma2":
        return layer % 2 == 0
    if mt == "gemma3_text":
        return (layer + 1) % c.get("sliding_window_pattern", 6) != 0
    return False


def softcap(x, cap):
    return torch.tanh(x / cap) * cap if cap else x


def forward(c, W, tokens, mask, lora=None):
    """Returns the final-norm hidden states [B, T, H] and logits [B, T, V] (float32)."""
    mt = c["model_type"]
    gemma = mt in GEMMA_NORM
    eps = c["rms_norm_eps"]
    B, T = tokens.shape
    nh, kvh, hd = c["num_attention_heads"], c["num_key_value_heads"], head_dim(c)
    scaling = c.get("query_pre_attn_scalar", hd) ** -0.5 if mt in SANDWICH else hd ** -0.5

    def linear(key, x):
        y = x @ W[key + ".weight"].T
        if key + ".bias" in W:
            y = y + W[key + ".bias"]
        if lora is not None and key in lora:
            a, b = lora[key]
            y = y + (x @ a.T) @ b.T * SCALE  # PEFT: lora_B(lora_A(dropout(x))) * scaling, dropout 0
        return y

    h = W["model.embed_tokens.weight"][tokens]
    if gemma:
        h = h * torch.tensor(c["hidden_size"] ** 0.5, dtype=h.dtype)
    pos = torch.arange(T)[None, :].expand(B, T)

    def rope(local):
        freqs = (inv_freq(c, local)[None, :, None].float().expand(B, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[:, None], emb.sin()[:, None]

    # causal + padding (+ sliding window) masks, transformers' min-float convention
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = (j <= i)[None, :, :] & (mask[:, None, :] > 0)
    full_bias = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[:, None]
    sw = c.get("sliding_window")
    sliding_bias = torch.where(allowed & ((i - j) < sw)[None], 0.0, torch.finfo(torch.float32).min)[:, None] if sw else full_bias
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        sliding = is_sliding(c, layer)
        cos, sin = rope(sliding and mt == "gemma3_text")
        bias = sliding_bias if sliding else full_bias
        x = rms_norm(h, W[p + "input_layernorm.weight"], eps, gemma)
        if mt in FUSED:  # Phi3Attention: qkv = qkv_proj(x), split as [q | k | v]
            qkv = linear(p + "self_attn.qkv_proj", x)
            q = qkv[..., : nh * hd].view(B, T, nh, hd)
            k = qkv[..., nh * hd: (nh + kvh) * hd].view(B, T, kvh, hd)
            v = qkv[..., (nh + kvh) * hd:].view(B, T, kvh, hd).transpose(1, 2)
        else:
            q = linear(p + "self_attn.q_proj", x).view(B, T, nh, hd)
            k = linear(p + "self_attn.k_proj", x).view(B, T, kvh, hd)
            v = linear(p + "self_attn.v_proj", x).view(B, T, kvh, hd).transpose(1, 2)
        if mt in QK_NORM:  # q_norm/k_norm over head_dim, before RoPE
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps, gemma)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps, gemma)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // kvh
        k = k[:, :, None].expand(B, kvh, rep, T, hd).reshape(B, nh, T, hd)
        v = v[:, :, None].expand(B, kvh, rep, T, hd).reshape(B, nh, T, hd)
        att = softcap(torch.matmul(q, k.transpose(2, 3)) * scaling, c.get("attn_logit_softcapping")) + bias
        att = torch.softmax(att, dim=-1, dtype=torch.float32)
        o = linear(p + "self_attn.o_proj", torch.matmul(att, v).transpose(1, 2).reshape(B, T, nh * hd))
        if mt in SANDWICH:
            h = h + rms_norm(o, W[p + "post_attention_layernorm.weight"], eps, gemma)
            x = rms_norm(h, W[p + "pre_feedforward_layernorm.weight"], eps, gemma)
        else:
            h = h + o
            x = rms_norm(h, W[p + "post_attention_layernorm.weight"], eps, gemma)
        if mt in FUSED:  # Phi3MLP: gate, up = gate_up_proj(x).chunk(2, dim=-1)
            gate, up = linear(p + "mlp.gate_up_proj", x).chunk(2, dim=-1)
        else:
            gate, up = linear(p + "mlp.gate_proj", x), linear(p + "mlp.up_proj", x)
        m = linear(p + "mlp.down_proj", act(c, gate) * up)
        if mt in SANDWICH:
            m = rms_norm(m, W[p + "post_feedforward_layernorm.weight"], eps, gemma)
        h = h + m
    h = rms_norm(h, W["model.norm.weight"], eps, gemma)
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    return h, softcap(h @ head.T, c.get("final_logit_softcapping"))


def causal_lm_loss(logits, labels):
    """transformers' ForCausalLMLoss: labels shifted left, -100 ignored, mean."""
    labels = torch.nn.functional.pad(labels, (0, 1), value=-100)[:, 1:]
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100, reduction="mean")


def write_tokenizer(d):
    """A minimal byte-level BPE tokenizer (the snapshot must have one; the tests feed ids)."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for ch in "abcdefghijklmnopqrstuvwxyz":
        vocab[ch] = len(vocab)
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                             "normalized": False, "special": True} for s, i in list(vocab.items())[:3]],
           "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                                 "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                                               "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "ignore_merges": False, "vocab": vocab, "merges": []}}
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                   "tokenizer_class": "PreTrainedTokenizerFast"}, f, indent=1)


def main():
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    unknown = only - set(FAMILIES)
    if unknown:
        sys.exit(f"unknown families {sorted(unknown)}: want some of {list(FAMILIES)}")
    for fam_idx, (fam, c) in enumerate(FAMILIES.items()):
        if only and fam not in only:
            continue
        rng = np.random.default_rng(1000 + fam_idx)
        d = os.path.join(OUT, fam)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f, indent=2, sort_keys=True)
        write_tokenizer(d)
        Wn = random_weights(c, rng)
        _st.write(os.path.join(d, "model.safetensors"), Wn)
        W = {k: torch.from_numpy(a) for k, a in Wn.items()}

        B, T = 3, 10
        tokens = rng.integers(3, c["vocab_size"], (B, T)).astype(np.int32)
        mask = np.ones((B, T), np.int32)
        mask[1, 7:] = 0  # right padding
        mask[2, :2] = 0  # left padding
        tokens[mask == 0] = 0
        labels = tokens.copy()
        for b in range(B):
            valid = np.nonzero(mask[b])[0]
            labels[b, valid[:4]] = -100  # the prompt: no loss
        labels[mask == 0] = -100
        tt, mt, lt = (torch.from_numpy(x.astype(np.int64)) for x in (tokens, mask, labels))

        with torch.no_grad():
            hidden, logits = forward(c, W, tt, mt)

        # LoRA: A as PEFT draws it (kaiming_uniform a=sqrt(5)), B non-zero so it matters.
        lora, peft = {}, {}
        for layer in range(c["num_hidden_layers"]):
            for key, _, o, n, _ in modules(c, layer):
                bound = 1 / math.sqrt(n)
                a = rng.uniform(-bound, bound, (RANK, n)).astype(np.float32)
                b = rng.normal(0, 0.2, (o, RANK)).astype(np.float32)
                peft[f"base_model.model.{key}.lora_A.weight"] = a
                peft[f"base_model.model.{key}.lora_B.weight"] = b
                lora[key] = (torch.from_numpy(a).requires_grad_(True), torch.from_numpy(b).requires_grad_(True))
        _st.write(os.path.join(d, "adapter_model.safetensors"), peft)
        with open(os.path.join(d, "adapter_config.json"), "w") as f:
            json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA,
                       "use_rslora": True, "lora_dropout": 0.0,
                       "target_modules": FUSED_TARGETS if fam in FUSED else TARGETS, "bias": "none",
                       "base_model_name_or_path": None, "fan_in_fan_out": False, "inference_mode": True},
                      f, indent=2, sort_keys=True)

        _, lora_logits = forward(c, W, tt, mt, lora)
        loss = causal_lm_loss(lora_logits, lt)
        loss.backward()
        with torch.no_grad():
            merged = dict(W)
            for key, (a, b) in lora.items():
                merged[key + ".weight"] = W[key + ".weight"] + SCALE * (b @ a)
            _, merged_logits = forward(c, merged, tt, mt)

        gold = {"tokens": tokens, "mask": mask, "labels": labels,
                "hidden": hidden.numpy(), "logits": logits.numpy(),
                "lora_logits": lora_logits.detach().numpy(), "merged_logits": merged_logits.numpy(),
                "loss": np.array(loss.item(), np.float32)}
        grad_modules = GRAD_MODULES
        if fam in FUSED:
            grad_modules = ["model.layers.0.self_attn.qkv_proj", "model.layers.1.mlp.gate_up_proj", "model.layers.1.mlp.down_proj"]
        for key in grad_modules:
            a, b = lora[key]
            gold[f"grad.base_model.model.{key}.lora_A.weight"] = a.grad.numpy()
            gold[f"grad.base_model.model.{key}.lora_B.weight"] = b.grad.numpy()
        _st.write(os.path.join(d, "golden.safetensors"), {k: np.asarray(v) for k, v in gold.items()})
        print(f"{fam}: loss {loss.item():.6f}, |logits| max {logits.abs().max().item():.3f}, "
              f"|lora - merged| max {(lora_logits - merged_logits).abs().max().item():.2e}")


if __name__ == "__main__":
    main()

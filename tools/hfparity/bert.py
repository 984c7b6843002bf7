#!/usr/bin/python3
"""Generates hf/encoder/testdata/bert/: a tiny random BERT checkpoint in Hugging Face's layout and
golden outputs of a reference forward written from transformers' modeling_bert.py.

transformers is not installable here, so the reference is the math of modeling_bert.py
(BertEmbeddings, BertSelfAttention with an absolute position embedding, BertSelfOutput,
BertIntermediate, BertOutput, BertPooler, and BertForSequenceClassification's head), computed in
float64 with Debian's torch 1.13 (autograd for the gradients). The Go test (hf/encoder) compares its
float32 forward, loss and gradients with these values to 1e-4.

Files written (all small; the whole directory stays under 300 KB):
  config.json, model.safetensors (keys with the "bert." prefix of BertFor* checkpoints, plus
  bert.embeddings.position_ids and cls.predictions.bias as real checkpoints carry: the loader must
  skip them), tokenizer.json (a WordPiece tokenizer of ours over the same 100-token vocabulary),
  tokenizer_config.json, lora/adapter_config.json + lora/adapter_model.safetensors (PEFT layout,
  rsLoRA r=4 alpha=8 on query/key/value/dense, B != 0), golden.json.

Run: /usr/bin/python3 tools/hfparity/bert.py   (deterministic: the same files every run)
"""

import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st as st  # noqa: E402  (shared with decoder.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "hf", "encoder", "testdata", "bert")

V, H, L, NH, I, MAXPOS, TYPES = 100, 32, 2, 4, 64, 32, 2
EPS = 1e-12
PREFIX = "bert."
CONFIG = {
    "architectures": ["BertForMaskedLM"],
    "attention_probs_dropout_prob": 0.1,
    "classifier_dropout": None,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": H,
    "initializer_range": 0.02,
    "intermediate_size": I,
    "layer_norm_eps": EPS,
    "max_position_embeddings": MAXPOS,
    "model_type": "bert",
    "num_attention_heads": NH,
    "num_hidden_layers": L,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "torch_dtype": "float32",
    "transformers_version": "4.46.0",
    "type_vocab_size": TYPES,
    "use_cache": True,
    "vocab_size": V,
}
LORA_R, LORA_ALPHA = 4, 8.0
LORA_SCALE = LORA_ALPHA / math.sqrt(LORA_R)  # rsLoRA
LORA_TARGETS = ["query", "key", "value", "dense"]

rng = np.random.default_rng(20261122)


def randn(*shape, std):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def make_weights():
    """Random weights scaled so activations stay O(1) (BERT's own init, std 0.02, would make every
    output nearly the LayerNorm bias and the parity test weak)."""
    w = {}
    p = PREFIX + "embeddings."
    w[p + "word_embeddings.weight"] = randn(V, H, std=0.5)
    w[p + "position_embeddings.weight"] = randn(MAXPOS, H, std=0.5)
    w[p + "token_type_embeddings.weight"] = randn(TYPES, H, std=0.5)
    w[p + "LayerNorm.weight"] = 1 + randn(H, std=0.2)
    w[p + "LayerNorm.bias"] = randn(H, std=0.2)
    w[p + "position_ids"] = np.arange(MAXPOS, dtype=np.int64).reshape(1, MAXPOS)

    def linear(name, out, inp):
        w[name + ".weight"] = randn(out, inp, std=1 / math.sqrt(inp))
        w[name + ".bias"] = randn(out, std=0.1)

    for l in range(L):
        p = f"{PREFIX}encoder.layer.{l}."
        for m in ("query", "key", "value"):
            linear(p + "attention.self." + m, H, H)
        linear(p + "attention.output.dense", H, H)
        w[p + "attention.output.LayerNorm.weight"] = 1 + randn(H, std=0.2)
        w[p + "attention.output.LayerNorm.bias"] = randn(H, std=0.2)
        linear(p + "intermediate.dense", I, H)
        linear(p + "output.dense", H, I)
        w[p + "output.LayerNorm.weight"] = 1 + randn(H, std=0.2)
        w[p + "output.LayerNorm.bias"] = randn(H, std=0.2)
    linear(PREFIX + "pooler.dense", H, H)
    w["cls.predictions.bias"] = randn(V, std=0.1)
    return w


def lora_modules(weights):
    """PEFT's matching: every Linear whose last name component is a target (pooler.dense too)."""
    mods = []
    for k, a in weights.items():
        if k.endswith(".weight") and a.ndim == 2 and "embeddings" not in k:
            mod = k[: -len(".weight")]
            if mod.split(".")[-1] in LORA_TARGETS:
                mods.append(mod)
    return sorted(mods)


def make_lora(weights):
    """A as PEFT draws it (kaiming-uniform a=sqrt(5): U(-1/sqrt(in), 1/sqrt(in))); B random and
    non-zero, so the adapter changes the output (PEFT's B starts at zero)."""
    ab = {}
    for mod in lora_modules(weights):
        out, inp = weights[mod + ".weight"].shape
        bound = 1 / math.sqrt(inp)
        ab[mod] = (
            rng.uniform(-bound, bound, size=(LORA_R, inp)).astype(np.float32),
            randn(out, LORA_R, std=0.1),
        )
    return ab


def forward(W, ids, types, mask, lora=None):
    """modeling_bert.py in eval mode (dropout off). W: name -> float64 tensor (no prefix lookups
    needed: names are the checkpoint's). Returns (last_hidden_state, pooled_output)."""

    def lin(x, mod):
        y = x @ W[mod + ".weight"].T + W[mod + ".bias"]
        if lora is not None and mod in lora:
            a, b = lora[mod]
            y = y + LORA_SCALE * ((x @ a.T) @ b.T)
        return y

    def ln(x, mod):
        return torch.nn.functional.layer_norm(x, (H,), W[mod + ".weight"], W[mod + ".bias"], EPS)

    B, T = ids.shape
    e = PREFIX + "embeddings."
    pos = torch.arange(T)
    x = W[e + "word_embeddings.weight"][ids] + W[e + "token_type_embeddings.weight"][types] + W[e + "position_embeddings.weight"][pos]
    x = ln(x, e + "LayerNorm")
    # BertModel.get_extended_attention_mask: (1 - mask) * finfo(dtype).min, broadcast over heads and queries.
    ext = (1.0 - mask[:, None, None, :]) * torch.finfo(x.dtype).min
    hd = H // NH
    for l in range(L):
        p = f"{PREFIX}encoder.layer.{l}."

        def heads(t):
            return t.view(B, T, NH, hd).permute(0, 2, 1, 3)

        q = heads(lin(x, p + "attention.self.query"))
        k = heads(lin(x, p + "attention.self.key"))
        v = heads(lin(x, p + "attention.self.value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + ext
        probs = torch.softmax(scores, dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, T, H)
        a = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inter = torch.nn.functional.gelu(lin(a, p + "intermediate.dense"))  # hidden_act "gelu": erf
        x = ln(lin(inter, p + "output.dense") + a, p + "output.LayerNorm")
    pooled = torch.tanh(lin(x[:, 0], PREFIX + "pooler.dense"))
    return x, pooled


def head(pooled, cw, cb):
    """BertForSequenceClassification with num_labels=1 used as a binary classifier: one logit per
    example; the tracker trains it with BCEWithLogits."""
    return (pooled @ cw.T + cb)[:, 0]


def flat(t):
    return [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]


def tokenizer_files():
    """A WordPiece tokenizer.json of ours over the checkpoint's 100 ids (BERT's normalizer,
    pre-tokenizer and [CLS] A [SEP] B [SEP] template with token type ids)."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = ["the", "of", "and", "in", "with", "was", "were", "patients", "treatment", "dose", "mg", "study",
             "trial", "group", "outcome", "outcomes", "primary", "adverse", "events", "randomized", "placebo",
             "survival", "efficacy", "safety", "intervention", "population", "participants", "aspect",
             "results", "to", "a", "or"]
    pieces = ["##s", "##ed", "##ing", "##ly", "##al", "##ion"]
    chars = [c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    punct = [".", ",", "(", ")", "-", "/", "%", ":", ";", "="]
    vocab = specials + words + pieces + punct + chars
    subchars = ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    vocab += subchars[: V - len(vocab)]
    assert len(vocab) == V, len(vocab)
    ids = {t: i for i, t in enumerate(vocab)}
    special_tokens = [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                       "normalized": False, "special": True} for t in specials]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special_tokens,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [ids["[CLS]"]], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [ids["[SEP]"]], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }
    tok_cfg = {
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "do_lower_case": True,
        "mask_token": "[MASK]",
        "model_max_length": MAXPOS,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "tokenizer_class": "BertTokenizer",
        "unk_token": "[UNK]",
    }
    return tok, tok_cfg


def main():
    os.makedirs(os.path.join(OUT, "lora"), exist_ok=True)
    weights = make_weights()
    ab = make_lora(weights)
    cw = randn(1, H, std=0.3)
    cb = randn(1, std=0.1)

    # Three examples of 10 tokens: [CLS] segment A [SEP] segment B [SEP], then padding (id 0,
    # type 0, mask 0) in rows 1 and 2, as a tokenizer pads a batch.
    ids = np.zeros((3, 10), dtype=np.int64)
    types = np.zeros((3, 10), dtype=np.int64)
    mask = np.zeros((3, 10), dtype=np.float64)
    for row, (na, nb) in enumerate([(3, 4), (2, 3), (1, 2)]):
        seq = [2] + list(rng.integers(5, V, size=na)) + [3] + list(rng.integers(5, V, size=nb)) + [3]
        ids[row, : len(seq)] = seq
        types[row, na + 2 : len(seq)] = 1
        mask[row, : len(seq)] = 1
    labels = np.array([1.0, 0.0, 1.0])

    def tensors64(requires_grad):
        out = {}
        for k, a in weights.items():
            if a.dtype == np.float32:
                out[k] = torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
        return out

    tids, ttypes, tmask = torch.tensor(ids), torch.tensor(types), torch.tensor(mask)
    tlabels = torch.tensor(labels)

    # Full fine-tuning: forward, head, BCE loss and gradients.
    W = tensors64(True)
    tcw = torch.tensor(cw, dtype=torch.float64, requires_grad=True)
    tcb = torch.tensor(cb, dtype=torch.float64, requires_grad=True)
    hidden, pooled = forward(W, tids, ttypes, tmask)
    logits = head(pooled, tcw, tcb)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, tlabels)
    loss.backward()
    grad_rows = sorted(set(int(i) for i in ids[0, :5]))
    grads = {
        "classifier.weight": flat(tcw.grad),
        "classifier.bias": flat(tcb.grad),
        PREFIX + "encoder.layer.1.attention.self.query.weight": flat(W[PREFIX + "encoder.layer.1.attention.self.query.weight"].grad),
        PREFIX + "encoder.layer.0.intermediate.dense.bias": flat(W[PREFIX + "encoder.layer.0.intermediate.dense.bias"].grad),
        PREFIX + "embeddings.LayerNorm.weight": flat(W[PREFIX + "embeddings.LayerNorm.weight"].grad),
        PREFIX + "embeddings.token_type_embeddings.weight": flat(W[PREFIX + "embeddings.token_type_embeddings.weight"].grad),
        PREFIX + "pooler.dense.weight": flat(W[PREFIX + "pooler.dense.weight"].grad),
    }
    word_grad_rows = {str(r): flat(W[PREFIX + "embeddings.word_embeddings.weight"].grad[r]) for r in grad_rows}

    # LoRA (B != 0): forward equals the merged weights' forward; loss and adapter gradients.
    Wf = tensors64(False)
    tab = {m: (torch.tensor(a, dtype=torch.float64, requires_grad=True), torch.tensor(b, dtype=torch.float64, requires_grad=True))
           for m, (a, b) in ab.items()}
    tcw2 = torch.tensor(cw, dtype=torch.float64, requires_grad=True)
    tcb2 = torch.tensor(cb, dtype=torch.float64, requires_grad=True)
    lhidden, lpooled = forward(Wf, tids, ttypes, tmask, lora=tab)
    llogits = head(lpooled, tcw2, tcb2)
    lloss = torch.nn.functional.binary_cross_entropy_with_logits(llogits, tlabels)
    lloss.backward()
    merged = dict(Wf)
    for m, (a, b) in tab.items():
        merged[m + ".weight"] = Wf[m + ".weight"] + LORA_SCALE * (b.detach() @ a.detach())
    mhidden, mpooled = forward(merged, tids, ttypes, tmask)
    assert torch.max(torch.abs(mhidden - lhidden)).item() < 1e-10, "merged forward differs from LoRA forward"
    assert torch.max(torch.abs(mpooled - lpooled)).item() < 1e-10
    q0 = PREFIX + "encoder.layer.0.attention.self.query"
    o1 = PREFIX + "encoder.layer.1.output.dense"
    pl = PREFIX + "pooler.dense"
    lora_grads = {
        "classifier.weight": flat(tcw2.grad),
        q0 + ".lora_A.weight": flat(tab[q0][0].grad),
        q0 + ".lora_B.weight": flat(tab[q0][1].grad),
        o1 + ".lora_A.weight": flat(tab[o1][0].grad),
        o1 + ".lora_B.weight": flat(tab[o1][1].grad),
        pl + ".lora_B.weight": flat(tab[pl][1].grad),
    }

    golden = {
        "comment": "Generated by tools/hfparity/bert.py (reference forward from modeling_bert.py, float64 torch); do not edit.",
        "torch": torch.__version__,
        "ids": ids.tolist(),
        "token_types": types.tolist(),
        "mask": mask.astype(int).tolist(),
        "labels": labels.tolist(),
        "classifier_weight": flat(torch.tensor(cw)),
        "classifier_bias": flat(torch.tensor(cb)),
        "hidden": flat(hidden),
        "pooled": flat(pooled),
        "logits": flat(logits),
        "loss": float(f"{loss.item():.12g}"),
        "grads": grads,
        "word_embedding_grad_rows": word_grad_rows,
        "lora": {
            "rank": LORA_R, "alpha": LORA_ALPHA, "rslora": True, "targets": LORA_TARGETS,
            "modules": sorted(ab),
            "hidden": flat(lhidden),
            "pooled": flat(lpooled),
            "logits": flat(llogits),
            "loss": float(f"{lloss.item():.12g}"),
            "grads": lora_grads,
        },
    }

    st.write(os.path.join(OUT, "model.safetensors"), weights)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    tok, tok_cfg = tokenizer_files()
    with open(os.path.join(OUT, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1)
        f.write("\n")
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    adapter = {}
    for m, (a, b) in ab.items():
        adapter["base_model.model." + m + ".lora_A.weight"] = a
        adapter["base_model.model." + m + ".lora_B.weight"] = b
    st.write(os.path.join(OUT, "lora", "adapter_model.safetensors"), adapter)
    with open(os.path.join(OUT, "lora", "adapter_config.json"), "w") as f:
        json.dump({
            "base_model_name_or_path": "hf/encoder/testdata/bert",
            "bias": "none",
            "fan_in_fan_out": False,
            "inference_mode": True,
            "init_lora_weights": True,
            "lora_alpha": LORA_ALPHA,
            "lora_dropout": 0.0,
            "modules_to_save": None,
            "peft_type": "LORA",
            "r": LORA_R,
            "target_modules": LORA_TARGETS,
            "task_type": "SEQ_CLS",
            "use_rslora": True,
        }, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: loss {loss.item():.6f}, lora loss {lloss.item():.6f}, {len(ab)} adapted modules")


if __name__ == "__main__":
    main()

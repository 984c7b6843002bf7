#!/usr/bin/python3
"""Generates hf/encoder/testdata/roberta/: a tiny random RobertaForSequenceClassification (NLI
labels) in Hugging Face's layout and golden outputs of a reference forward written from
transformers' modeling_roberta.py.

transformers is not installable here, so the reference is the math of modeling_roberta.py in
float64 with Debian's torch 1.13:
  - RobertaEmbeddings: position ids from create_position_ids_from_input_ids (cumsum of the
    non-padding ids, times the non-padding mask, plus padding_idx = pad_token_id: real tokens get
    padding_idx+1, padding_idx+2, ..., padding tokens padding_idx), token type ids all 0 (the
    registered buffer; type_vocab_size 1), word + token type + position, LayerNorm(eps 1e-5);
  - the encoder layers are BERT's (RobertaSelfAttention etc. are copies of Bert*), with the
    extended attention mask (1 - mask) * finfo.min;
  - RobertaForSequenceClassification: RobertaModel(add_pooling_layer=False), then
    RobertaClassificationHead on features[:, 0, :] (the <s> token): dropout, dense, tanh, dropout,
    out_proj (dropout off in eval mode).
The Go test (hf/encoder) compares its float32 forward with these values to 1e-4.

Files written (all small): config.json (id2label of roberta-large-mnli: CONTRADICTION, NEUTRAL,
ENTAILMENT), model.safetensors (keys "roberta.*" and "classifier.*", plus
roberta.embeddings.position_ids and token_type_ids buffers as real checkpoints may carry),
tokenizer.json (a byte-level BPE tokenizer of ours with RoBERTa's pre-tokenizer and
RobertaProcessing post-processor), tokenizer_config.json, golden.json.

Run: /usr/bin/python3 tools/hfparity/roberta.py   (deterministic: the same files every run)
"""

import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st as st  # noqa: E402  (shared with decoder.py and bert.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "hf", "encoder", "testdata", "roberta")

H, L, NH, I, MAXPOS, TYPES = 32, 2, 4, 64, 40, 1
PAD = 1
EPS = 1e-5
PREFIX = "roberta."
LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}

rng = np.random.default_rng(20261127)


def byte_symbols():
    """GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256 + n."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# Merges of our own, each joining two symbols already in the vocabulary ("Ġ" is the byte-level
# symbol of a space): enough that clinical words merge partly and the BPE ranks matter.
MERGES = [
    "Ġ t", "h e", "Ġt he", "i n", "Ġ p", "a t", "e n", "Ġ a", "e d", "Ġ o", "o n", "r e", "Ġ s", "Ġ d",
    "Ġ r", "Ġ m", "Ġp at", "i e", "Ġpat ie", "Ġpatie n", "Ġpatien t", "Ġpatient s", "Ġ w", "e r", "Ġw er",
    "Ġwer e", "Ġ 1", "Ġa n", "Ġan d", "Ġo f", "Ġ in", "o s", "Ġd os", "Ġdos e", "Ġm g", "p l", "Ġ pl",
    "a c", "Ġpl ac", "Ġplac e", "Ġplace b", "Ġplaceb o", "a n", "Ġr an", "d o", "Ġran do", "Ġrando m", "i z",
    "Ġrandom iz", "Ġrandomiz ed", "Ġ (", "Ġ 2", "Ġ 5", "Ġ P", "Ġ C", "Ġ I", "1 0",
]


def tokenizer_files():
    sym = byte_symbols()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[sym[b]] = len(vocab)
    for m in MERGES:
        a, b = m.split(" ")
        assert a in vocab and b in vocab, m
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    vocab["<mask>"] = len(vocab)
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": False, "special": True} for t in specials + ["<mask>"]]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", vocab["</s>"]], "cls": ["<s>", vocab["<s>"]],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": MERGES},
    }
    tok_cfg = {
        "add_prefix_space": False,
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": True,
        "cls_token": "<s>",
        "eos_token": "</s>",
        "errors": "replace",
        "mask_token": "<mask>",
        "model_max_length": MAXPOS - PAD - 1,
        "pad_token": "<pad>",
        "sep_token": "</s>",
        "tokenizer_class": "RobertaTokenizer",
        "trim_offsets": True,
        "unk_token": "<unk>",
    }
    return tok, tok_cfg, len(vocab)


def randn(*shape, std):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def make_weights(V):
    """Random weights scaled so activations stay O(1) (as bert.py: the init's std 0.02 would make
    the parity test weak)."""
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
    linear("classifier.dense", H, H)
    linear("classifier.out_proj", len(LABELS), H)
    return w


def create_position_ids_from_input_ids(ids, padding_idx):
    """modeling_roberta.py's function, as written there."""
    mask = ids.ne(padding_idx).int()
    incremental = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental.long() + padding_idx


def forward(W, ids, mask):
    """modeling_roberta.py in eval mode. Returns (last_hidden_state, logits)."""

    def lin(x, mod):
        return x @ W[mod + ".weight"].T + W[mod + ".bias"]

    def ln(x, mod):
        return torch.nn.functional.layer_norm(x, (H,), W[mod + ".weight"], W[mod + ".bias"], EPS)

    B, T = ids.shape
    e = PREFIX + "embeddings."
    pos = create_position_ids_from_input_ids(ids, PAD)
    types = torch.zeros_like(ids)
    x = W[e + "word_embeddings.weight"][ids] + W[e + "token_type_embeddings.weight"][types] + W[e + "position_embeddings.weight"][pos]
    x = ln(x, e + "LayerNorm")
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
        inter = torch.nn.functional.gelu(lin(a, p + "intermediate.dense"))
        x = ln(lin(inter, p + "output.dense") + a, p + "output.LayerNorm")
    # RobertaClassificationHead.
    h = torch.tanh(lin(x[:, 0, :], "classifier.dense"))
    logits = lin(h, "classifier.out_proj")
    return x, logits


def flat(t):
    return [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, tok_cfg, V = tokenizer_files()
    config = {
        "architectures": ["RobertaForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "classifier_dropout": None,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": H,
        "id2label": {str(k): v for k, v in LABELS.items()},
        "initializer_range": 0.02,
        "intermediate_size": I,
        "label2id": {v: k for k, v in LABELS.items()},
        "layer_norm_eps": EPS,
        "max_position_embeddings": MAXPOS,
        "model_type": "roberta",
        "num_attention_heads": NH,
        "num_hidden_layers": L,
        "pad_token_id": PAD,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": "4.46.0",
        "type_vocab_size": TYPES,
        "use_cache": True,
        "vocab_size": V,
    }
    weights = make_weights(V)

    # Three rows: <s> A </s></s> B </s>, then padding (id 1, mask 0) in rows 1 and 2, as a
    # tokenizer pads a batch; the longest row uses every position the model has.
    T = MAXPOS - PAD - 1
    ids = np.full((3, T), PAD, dtype=np.int64)
    mask = np.zeros((3, T), dtype=np.float64)
    for row, (na, nb) in enumerate([(T - 4 - 11, 11), (5, 3), (1, 2)]):
        seq = [0] + list(rng.integers(4, V - 1, size=na)) + [2, 2] + list(rng.integers(4, V - 1, size=nb)) + [2]
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1

    W = {k: torch.tensor(a, dtype=torch.float64) for k, a in weights.items() if a.dtype == np.float32}
    hidden, logits = forward(W, torch.tensor(ids), torch.tensor(mask))
    golden = {
        "comment": "Generated by tools/hfparity/roberta.py (reference forward from modeling_roberta.py, float64 torch); do not edit.",
        "torch": torch.__version__,
        "ids": ids.tolist(),
        "mask": mask.astype(int).tolist(),
        "hidden": flat(hidden),
        "logits": flat(logits),
        "probs": flat(torch.softmax(logits, dim=-1)),
    }
    weights[PREFIX + "embeddings.token_type_ids"] = np.zeros((1, MAXPOS), dtype=np.int64)
    st.write(os.path.join(OUT, "model.safetensors"), weights)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(OUT, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: vocab {V}, logits {golden['logits']}")


if __name__ == "__main__":
    main()

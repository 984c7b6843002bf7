#!/usr/bin/python3
"""Generates hf/encoder/testdata/deberta_v2/ and hf/encoder/testdata/deberta_v2_legacy/: tiny random
DebertaV2ForSequenceClassification checkpoints (NLI labels) in Hugging Face's layout and golden
outputs of a reference forward written from transformers' modeling_deberta_v2.py.

transformers is not installable here, so the reference is the math of modeling_deberta_v2.py in
float64 with Debian's torch 1.13:
  - DebertaV2Embeddings: word embeddings (embedding_size wide), + absolute positions only with
    position_biased_input, + token types only with type_vocab_size > 0, embed_proj (no bias) when
    embedding_size != hidden_size, LayerNorm, then multiplied by the attention mask;
  - DebertaV2Encoder: relative positions build_relative_position(T, T, position_buckets,
    max_relative_positions) with make_log_bucket_position (computed in float32, as torch does
    there), rel_embeddings.weight through the encoder's LayerNorm when norm_rel_ebd has
    "layer_norm"; the mask [B, 1, T, T] = mask_q * mask_k;
  - DisentangledSelfAttention: scale sqrt(head_dim * (1 + len(pos_att_type))), c2p
    (query . pos_key at clamp(rel + span)), p2c (key . pos_query at clamp(-rel(k, q) + span),
    transposed), pos_key / pos_query from key_proj / query_proj (share_att_key) or pos_key_proj /
    pos_query_proj, XSoftmax (masked positions to finfo.min, softmax, masked positions to 0);
  - output layers as BERT's (post-LN), ContextPooler (dense on token 0, pooler_hidden_act) and the
    classifier (dropout off in eval mode).
The Go test (hf/encoder) compares its float32 forward with these values to 1e-4, every position
included (padded ones too: XSoftmax zeroes their attention, the embedding mask their input).

deberta_v2/ is a DeBERTa-v3-shaped model: relative attention, position_buckets 8 with
max_relative_positions 16 (the 24-token rows reach buckets past the span, so the clamps are
exercised), pos_att_type p2c|c2p, share_att_key, norm_rel_ebd layer_norm, position_biased_input
false, type_vocab_size 0, plus a SentencePiece-style Unigram tokenizer.json of ours (Strip and
" {2,}" normalizers, Metaspace with prepend_scheme always, TemplateProcessing [CLS] $A [SEP] $B
[SEP] with type ids 0/1). deberta_v2_legacy/ covers the other branches: no buckets, separate
pos_key_proj / pos_query_proj, norm_rel_ebd none, absolute positions, two token types, an
embedding_size narrower than hidden_size and DeBERTa-v2-xlarge's ConvLayer (conv_kernel_size 3,
the default tanh, after the first layer) (the same tokenizer files: a snapshot needs them).

golden.json also holds the bucketed relative positions of a real DeBERTa-v3 configuration
(position_buckets 256, max_relative_positions 512) for every distance a 512-token input has.

Run: /usr/bin/python3 tools/hfparity/deberta.py   (deterministic: the same files every run)
Then: node tools/hfparity/deberta_tokens.mjs (tokens.json, from @huggingface/tokenizers).
"""

import json
import math
import os
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _st as st  # noqa: E402  (shared with decoder.py, bert.py and roberta.py)

# The reference keeps modeling_deberta_v2.py's torch.tensor(tensor) scale conversions as written.
warnings.filterwarnings("ignore", message="To copy construct")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "deberta."
# cross-encoder/nli-deberta-v3-base's label order.
LABELS = {0: "contradiction", 1: "entailment", 2: "neutral"}

V3 = dict(
    name="deberta_v2", H=32, E=32, L=2, NH=4, I=64, MAXPOS=64, TYPES=0, EPS=1e-7, PAD=0,
    relative_attention=True, max_relative_positions=16, position_buckets=8, pos_att_type="p2c|c2p",
    share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False, T=24, seed=20261127,
)
LEGACY = dict(
    name="deberta_v2_legacy", H=32, E=24, L=2, NH=4, I=64, MAXPOS=40, TYPES=2, EPS=1e-7, PAD=0,
    relative_attention=True, max_relative_positions=12, position_buckets=-1, pos_att_type=["c2p", "p2c"],
    share_att_key=False, norm_rel_ebd="none", position_biased_input=True, T=20, seed=20261128,
    conv_kernel_size=3,
)

SPECIALS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
# Pieces of our own with made-up log-probabilities: whole words with and without "▁", subwords,
# single characters (so most text segments), digits. Characters absent here (e.g. "≥", emoji,
# "%" is present) become [UNK].
WORDS = [
    "the", "patients", "patient", "were", "was", "randomized", "random", "ized", "to", "placebo", "place",
    "bo", "dose", "of", "and", "in", "mg", "received", "receiv", "ed", "trial", "a", "long", "premise",
    "with", "runs", "spaces", "hypothesis", "drug", "weeks", "results", "it", "s", "they", "ll", "see",
]
CHARS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:()-/%='?!") + ["é", "µ"]


def tokenizer_files(maxlen):
    vocab = [[s, 0.0] for s in SPECIALS]
    seen = set(SPECIALS)

    def add(piece, score):
        if piece not in seen:
            seen.add(piece)
            vocab.append([piece, score])

    add("▁", -3.0)
    for i, w in enumerate(WORDS):
        add("▁" + w, -4.0 - 0.1 * i)
        add(w, -6.0 - 0.1 * i)
    for i, c in enumerate(CHARS):
        add(c, -8.0 - 0.01 * i)
        add("▁" + c, -8.5 - 0.01 * i)
    for n in ("10", "15", "25", "151"):
        add(n, -7.0)
        add("▁" + n, -6.5)
    vocab.append(["[MASK]", 0.0])
    ids = {p: i for i, (p, _) in enumerate(vocab)}
    added = [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in SPECIALS + ["[MASK]"]]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        # transformers' DebertaV2Converter writes Sequence[Strip, Precompiled(the SentencePiece
        # model's charsmap), Replace(" {2,}" -> " ")]; we have no charsmap of our own to write.
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        ]},
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
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": ids["[UNK]"], "vocab": vocab, "byte_fallback": False},
    }
    tok_cfg = {
        "bos_token": "[CLS]",
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "do_lower_case": False,
        "eos_token": "[SEP]",
        "mask_token": "[MASK]",
        "model_max_length": maxlen,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "split_by_punct": False,
        "tokenizer_class": "DebertaV2Tokenizer",
        "unk_token": "[UNK]",
        "vocab_type": "spm",
    }
    return tok, tok_cfg, len(vocab)


def make_log_bucket_position(relative_pos, bucket_size, max_position):
    """modeling_deberta_v2.py's function, as written there (its divisions and logs are float32)."""
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where(
        (relative_pos < mid) & (relative_pos > -mid),
        torch.tensor(mid - 1).type_as(relative_pos),
        torch.abs(relative_pos),
    )
    log_pos = (
        torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    )
    bucket_pos = torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)
    return bucket_pos


def build_relative_position(query_size, key_size, bucket_size=-1, max_position=-1):
    """modeling_deberta_v2.py's function: [1, query_size, key_size] of q - k, bucketed."""
    q_ids = torch.arange(0, query_size)
    k_ids = torch.arange(0, key_size)
    rel_pos_ids = q_ids[:, None] - k_ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel_pos_ids = make_log_bucket_position(rel_pos_ids, bucket_size, max_position)
    rel_pos_ids = rel_pos_ids.to(torch.long)
    rel_pos_ids = rel_pos_ids[:query_size, :]
    return rel_pos_ids.unsqueeze(0)


def pos_att_types(c):
    p = c["pos_att_type"]
    if isinstance(p, str):
        p = [x.strip() for x in p.lower().split("|")]
    return p


def span_of(c):
    mrp = c["max_relative_positions"] if c["max_relative_positions"] >= 1 else c["MAXPOS"]
    return (c["position_buckets"] if c["position_buckets"] > 0 else mrp), mrp


def make_weights(c, V, rng):
    """Random weights scaled so activations stay O(1) (as bert.py: the init's std 0.02 would make
    the parity test weak)."""
    H, E, I = c["H"], c["E"], c["I"]

    def randn(*shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {}

    def linear(name, out, inp, bias=True):
        w[name + ".weight"] = randn(out, inp, std=1 / math.sqrt(inp))
        if bias:
            w[name + ".bias"] = randn(out, std=0.1)

    def ln(name):
        w[name + ".weight"] = 1 + randn(H, std=0.2)
        w[name + ".bias"] = randn(H, std=0.2)

    p = PREFIX + "embeddings."
    w[p + "word_embeddings.weight"] = randn(V, E, std=0.5)
    if c["position_biased_input"]:
        w[p + "position_embeddings.weight"] = randn(c["MAXPOS"], E, std=0.5)
    if c["TYPES"] > 0:
        w[p + "token_type_embeddings.weight"] = randn(c["TYPES"], E, std=0.5)
    if E != H:
        linear(p + "embed_proj", H, E, bias=False)
    ln(p + "LayerNorm")
    w[p + "position_ids"] = np.arange(c["MAXPOS"], dtype=np.int64).reshape(1, c["MAXPOS"])
    span, _ = span_of(c)
    w[PREFIX + "encoder.rel_embeddings.weight"] = randn(2 * span, H, std=0.5)
    if "layer_norm" in c["norm_rel_ebd"]:
        ln(PREFIX + "encoder.LayerNorm")
    if c.get("conv_kernel_size", 0) > 0:
        k = c["conv_kernel_size"]
        w[PREFIX + "encoder.conv.conv.weight"] = randn(H, H, k, std=1 / math.sqrt(H * k))
        w[PREFIX + "encoder.conv.conv.bias"] = randn(H, std=0.1)
        ln(PREFIX + "encoder.conv.LayerNorm")
    for l in range(c["L"]):
        p = f"{PREFIX}encoder.layer.{l}."
        for m in ("query_proj", "key_proj", "value_proj"):
            linear(p + "attention.self." + m, H, H)
        if not c["share_att_key"]:
            if "c2p" in pos_att_types(c):
                linear(p + "attention.self.pos_key_proj", H, H)
            if "p2c" in pos_att_types(c):
                linear(p + "attention.self.pos_query_proj", H, H)
        linear(p + "attention.output.dense", H, H)
        ln(p + "attention.output.LayerNorm")
        linear(p + "intermediate.dense", I, H)
        linear(p + "output.dense", H, I)
        ln(p + "output.LayerNorm")
    linear("pooler.dense", H, H)
    linear("classifier", len(LABELS), H)
    return w


def forward(c, W, ids, types, mask):
    """modeling_deberta_v2.py in eval mode. Returns (last_hidden_state, pooled, logits)."""
    H, E, NH, EPS = c["H"], c["E"], c["NH"], c["EPS"]

    def lin(x, mod, bias=True):
        y = x @ W[mod + ".weight"].T
        return y + W[mod + ".bias"] if bias else y

    def ln(x, mod):
        return torch.nn.functional.layer_norm(x, (H,), W[mod + ".weight"], W[mod + ".bias"], EPS)

    B, T = ids.shape
    e = PREFIX + "embeddings."
    x = W[e + "word_embeddings.weight"][ids]
    if c["position_biased_input"]:
        x = x + W[e + "position_embeddings.weight"][torch.arange(T)][None]
    if c["TYPES"] > 0:
        x = x + W[e + "token_type_embeddings.weight"][types]
    if E != H:
        x = lin(x, e + "embed_proj", bias=False)
    x = ln(x, e + "LayerNorm")
    x = x * mask[:, :, None]
    embedded = x

    # DebertaV2Encoder.get_attention_mask: [B, 1, T, T] = mask_q * mask_k.
    ext = mask[:, None, None, :]
    att_mask = (ext * ext.squeeze(-2).unsqueeze(-1)).byte()
    span, mrp = span_of(c)
    rel = build_relative_position(T, T, bucket_size=c["position_buckets"], max_position=mrp)
    rel_emb = W[PREFIX + "encoder.rel_embeddings.weight"]
    if "layer_norm" in c["norm_rel_ebd"]:
        rel_emb = ln(rel_emb, PREFIX + "encoder.LayerNorm")
    types_att = pos_att_types(c)
    scale_factor = 1 + ("c2p" in types_att) + ("p2c" in types_att)
    hd = H // NH

    def heads(t):
        # transpose_for_scores: [B, T, H] -> [B * NH, T, hd]
        n = t.size(0)
        return t.view(n, -1, NH, hd).permute(0, 2, 1, 3).contiguous().view(-1, t.size(1), hd)

    for l in range(c["L"]):
        p = f"{PREFIX}encoder.layer.{l}."
        a = p + "attention.self."
        q = heads(lin(x, a + "query_proj"))
        k = heads(lin(x, a + "key_proj"))
        v = heads(lin(x, a + "value_proj"))
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * scale_factor)
        scores = torch.bmm(q, k.transpose(-1, -2)) / torch.tensor(scale, dtype=q.dtype)
        # disentangled_attention_bias
        r = rel.unsqueeze(1)
        re = rel_emb[0: span * 2, :].unsqueeze(0)
        if c["share_att_key"]:
            pos_q = heads(lin(re, a + "query_proj")).repeat(q.size(0) // NH, 1, 1)
            pos_k = heads(lin(re, a + "key_proj")).repeat(q.size(0) // NH, 1, 1)
        else:
            if "c2p" in types_att:
                pos_k = heads(lin(re, a + "pos_key_proj")).repeat(q.size(0) // NH, 1, 1)
            if "p2c" in types_att:
                pos_q = heads(lin(re, a + "pos_query_proj")).repeat(q.size(0) // NH, 1, 1)
        score = 0
        if "c2p" in types_att:
            s = torch.sqrt(torch.tensor(pos_k.size(-1), dtype=torch.float) * scale_factor)
            c2p = torch.bmm(q, pos_k.transpose(-1, -2))
            c2p_pos = torch.clamp(r + span, 0, span * 2 - 1)
            c2p = torch.gather(c2p, dim=-1, index=c2p_pos.squeeze(0).expand([q.size(0), q.size(1), r.size(-1)]))
            score += c2p / torch.tensor(s, dtype=c2p.dtype)
        if "p2c" in types_att:
            s = torch.sqrt(torch.tensor(pos_q.size(-1), dtype=torch.float) * scale_factor)
            p2c_pos = torch.clamp(-r + span, 0, span * 2 - 1)
            p2c = torch.bmm(k, pos_q.transpose(-1, -2))
            p2c = torch.gather(p2c, dim=-1, index=p2c_pos.squeeze(0).expand([q.size(0), k.size(-2), k.size(-2)])).transpose(-1, -2)
            score += p2c / torch.tensor(s, dtype=p2c.dtype)
        scores = (scores + score).view(-1, NH, T, T)
        # XSoftmax
        rmask = ~(att_mask.to(torch.bool))
        probs = scores.masked_fill(rmask, torch.tensor(torch.finfo(scores.dtype).min))
        probs = torch.softmax(probs, -1)
        probs = probs.masked_fill(rmask, 0)
        ctx = torch.bmm(probs.view(-1, T, T), v).view(-1, NH, T, hd).permute(0, 2, 1, 3).contiguous().view(B, T, H)
        att = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inter = torch.nn.functional.gelu(lin(att, p + "intermediate.dense"))
        x = ln(lin(inter, p + "output.dense") + att, p + "output.LayerNorm")
        if l == 0 and c.get("conv_kernel_size", 0) > 0:
            # ConvLayer (conv_groups 1, conv_act tanh: the defaults) on the embeddings, with the
            # first layer's output as the residual.
            k = c["conv_kernel_size"]
            cv = PREFIX + "encoder.conv."
            out = torch.nn.functional.conv1d(embedded.permute(0, 2, 1), W[cv + "conv.weight"], W[cv + "conv.bias"],
                                             padding=(k - 1) // 2).permute(0, 2, 1)
            out = out.masked_fill((1 - mask).bool().unsqueeze(-1).expand(out.size()), 0)
            out = torch.tanh(out)
            x = ln(x + out, cv + "LayerNorm") * mask[:, :, None]
    pooled = torch.nn.functional.gelu(lin(x[:, 0], "pooler.dense"))
    logits = lin(pooled, "classifier")
    return x, pooled, logits


def flat(t):
    return [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]


def generate(c):
    out = os.path.join(ROOT, "hf", "encoder", "testdata", c["name"])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(c["seed"])
    H = c["H"]
    tok, tok_cfg, V = tokenizer_files(512)
    config = {
        "architectures": ["DebertaV2ForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": H,
        "id2label": {str(k): v for k, v in LABELS.items()},
        "initializer_range": 0.02,
        "intermediate_size": c["I"],
        "label2id": {v: k for k, v in LABELS.items()},
        "layer_norm_eps": c["EPS"],
        "max_position_embeddings": c["MAXPOS"],
        "max_relative_positions": c["max_relative_positions"],
        "model_type": "deberta-v2",
        "norm_rel_ebd": c["norm_rel_ebd"],
        "num_attention_heads": c["NH"],
        "num_hidden_layers": c["L"],
        "pad_token_id": c["PAD"],
        "pooler_dropout": 0,
        "pooler_hidden_act": "gelu",
        "pooler_hidden_size": H,
        "pos_att_type": c["pos_att_type"],
        "position_biased_input": c["position_biased_input"],
        "position_buckets": c["position_buckets"],
        "relative_attention": c["relative_attention"],
        "share_att_key": c["share_att_key"],
        "torch_dtype": "float32",
        "transformers_version": "4.46.0",
        "type_vocab_size": c["TYPES"],
        "vocab_size": V,
    }
    if c["E"] != H:
        config["embedding_size"] = c["E"]
    if c.get("conv_kernel_size", 0) > 0:
        config["conv_kernel_size"] = c["conv_kernel_size"]
    weights = make_weights(c, V, rng)

    # Three rows of [CLS] A [SEP] B [SEP] then padding (id 0, mask 0), as a tokenizer pads a batch;
    # token types 0 then 1 (read only where type_vocab_size > 0).
    T = c["T"]
    ids = np.full((3, T), c["PAD"], dtype=np.int64)
    types = np.zeros((3, T), dtype=np.int64)
    mask = np.zeros((3, T), dtype=np.float64)
    for row, (na, nb) in enumerate([(T - 3 - 7, 7), (5, 3), (1, 2)]):
        seq = [1] + list(rng.integers(4, V - 1, size=na)) + [2] + list(rng.integers(4, V - 1, size=nb)) + [2]
        ids[row, : len(seq)] = seq
        types[row, na + 2: len(seq)] = 1
        mask[row, : len(seq)] = 1

    W = {k: torch.tensor(a, dtype=torch.float64) for k, a in weights.items() if a.dtype == np.float32}
    hidden, pooled, logits = forward(c, W, torch.tensor(ids), torch.tensor(types), torch.tensor(mask))
    span, mrp = span_of(c)
    golden = {
        "comment": "Generated by tools/hfparity/deberta.py (reference forward from modeling_deberta_v2.py, float64 torch); do not edit.",
        "torch": torch.__version__,
        "ids": ids.tolist(),
        "token_types": types.tolist(),
        "mask": mask.astype(int).tolist(),
        "relative_positions": build_relative_position(T, T, c["position_buckets"], mrp)[0].tolist(),
        "hidden": flat(hidden),
        "pooled": flat(pooled),
        "logits": flat(logits),
        "probs": flat(torch.softmax(logits, dim=-1)),
    }
    if c["name"] == "deberta_v2":
        # A real DeBERTa-v3 configuration's buckets: distance d = q - k for d in -511..511.
        d = torch.arange(-511, 512)
        golden["v3_buckets"] = {"position_buckets": 256, "max_relative_positions": 512, "from": -511,
                                "buckets": make_log_bucket_position(d, 256, 512).to(torch.long).tolist()}
    st.write(os.path.join(out, "model.safetensors"), weights)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: vocab {V}, logits {golden['logits']}")


def main():
    generate(V3)
    generate(LEGACY)


if __name__ == "__main__":
    main()

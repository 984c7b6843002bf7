#!/usr/bin/python3
"""PyTorch CPU reference for the summarizer's training step (model/summarizer BenchmarkTrainStep).

The same network as configs/default.yaml's summarizer, as the benchmark builds it: vocabulary 8000,
d=128, 4 heads, ffn 512, 2 pre-LN encoder layers and 2 pre-LN decoder layers (causal self-attention,
cross-attention, ReLU feed-forward), final layer norms, dropout 0.1, learned token / position /
segment embeddings, an output softmax over a 2000-id generation vocabulary tied to the token
embeddings (plus a bias), and the pointer-generator copy path of model/summarizer/graph.go: a
separate copy attention over the encoder states with the learned "follow" bonus, the gate
sigmoid(s.gs + c.gc + x.gx + follow.gf + gb), p = g * p_vocab + (1 - g) * p_copy, loss = mean
-log(max(p, 1e-9)) over the target tokens; AdamW (lr 1e-4, weight decay 0.01), gradient clipping
at 1.0. Batches as the benchmark's: 16 examples, sources of 150 tokens padded to the 160-token
bucket, summaries of 45 tokens (+[BOS]/[EOS]) padded to the 48-token bucket; no aspect vector (the
benchmark's network has none). Run back to back with the Go benchmark:

    /usr/bin/python3 tools/bench/torch_summarizer_anchor.py THREADS [STEPS]    (Debian python3-torch)
    GOEXPERIMENT=simd go test ./model/summarizer -run '^$' -bench 'TrainStep/gen=2000' -benchtime 3x

Not part of the product (nothing in tracksum runs Python); only for the speed comparison in
docs/summarizer.md.
"""
import math
import os
import sys
import time

# OpenBLAS's threads are not limited by torch.set_num_threads (Debian's torch 1.13 multiplies
# through it): pin them before torch loads, or a "1 thread" run uses every core.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, sys.argv[1] if len(sys.argv) > 1 else "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
torch.manual_seed(0)
V, D, H, FF, LE, LD, DROP = 8000, 128, 4, 512, 2, 2, 0.1
NGEN, MAXPOS, B, SRC, SRC_PAD, TGT, TGT_PAD = 2000, 192, 16, 150, 160, 45, 48
PAD, BOS, EOS = 0, 1, 2


class Summarizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(V, D)
        self.src_pos, self.tgt_pos, self.segment = nn.Embedding(MAXPOS, D), nn.Embedding(MAXPOS, D), nn.Embedding(2, D)
        self.encoder = nn.ModuleList([nn.TransformerEncoderLayer(D, H, FF, DROP, batch_first=True, norm_first=True)
                                      for _ in range(LE)])
        self.decoder = nn.ModuleList([nn.TransformerDecoderLayer(D, H, FF, DROP, batch_first=True, norm_first=True)
                                      for _ in range(LD)])
        self.enc_ln, self.dec_ln = nn.LayerNorm(D), nn.LayerNorm(D)
        self.drop = nn.Dropout(DROP)
        self.out_bias = nn.Parameter(torch.zeros(NGEN))
        self.copy_q, self.copy_k = nn.Linear(D, D), nn.Linear(D, D)
        self.follow_bonus = nn.Parameter(torch.tensor(2.0))
        self.gate_s, self.gate_c, self.gate_x = (nn.Parameter(torch.zeros(D)) for _ in range(3))
        self.gate_b, self.gate_follow = nn.Parameter(torch.tensor(-1.0)), nn.Parameter(torch.tensor(0.0))
        self.register_buffer("gen_ids", torch.arange(NGEN))
        self.register_buffer("causal", torch.triu(torch.full((TGT_PAD, TGT_PAD), float("-inf")), 1))

    def forward(self, src, seg, tgt_in, tgt_out, tgt_gen, in_gen):
        b, s = src.shape
        t = tgt_in.shape[1]
        pad = src == PAD
        x = self.tokens(src) + self.segment(seg) + self.src_pos(torch.arange(s))
        x = self.drop(x)
        for layer in self.encoder:
            x = layer(x, src_key_padding_mask=pad)
        enc = self.enc_ln(x)
        x_emb = self.tokens(tgt_in) + self.tgt_pos(torch.arange(t))
        y = self.drop(x_emb)
        for layer in self.decoder:
            y = layer(y, enc, tgt_mask=self.causal[:t, :t], memory_key_padding_mask=pad)
        st = self.dec_ln(y)
        # Generation distribution (tied embeddings), probability of the target.
        logits = st @ self.tokens(self.gen_ids).T + self.out_bias
        p_vocab = F.softmax(logits, -1).gather(-1, tgt_gen.unsqueeze(-1)).squeeze(-1) * in_gen
        # Copy attention with the follow bonus.
        prev = torch.cat([torch.full((b, 1), PAD), src[:, :-1]], 1)
        follow = ((tgt_in.unsqueeze(2) == prev.unsqueeze(1)) & (prev != PAD).unsqueeze(1)).float()  # [B,T,S]
        scores = self.copy_q(st) @ self.copy_k(enc).transpose(1, 2) / math.sqrt(D)
        scores = scores.masked_fill(pad.unsqueeze(1), -1e9) + follow * self.follow_bonus
        attn = F.softmax(scores, -1)
        ctx = attn @ enc
        same = (tgt_out.unsqueeze(2) == src.unsqueeze(1)).float()
        p_copy = (attn * same).sum(-1)
        z = st @ self.gate_s + ctx @ self.gate_c + x_emb @ self.gate_x
        gate = torch.sigmoid(z + follow.amax(-1) * self.gate_follow + self.gate_b)
        p = gate * p_vocab + (1 - gate) * p_copy
        mask = (tgt_out != PAD).float()
        nll = -torch.log(p.clamp_min(1e-9))
        return (nll * mask).sum() / mask.sum().clamp_min(1)


def batch():
    src = torch.full((B, SRC_PAD), PAD)
    src[:, :SRC] = torch.randint(10, V, (B, SRC))
    summary = torch.randint(10, V, (B, TGT))
    tgt_in, tgt_out = torch.full((B, TGT_PAD), PAD), torch.full((B, TGT_PAD), PAD)
    tgt_in[:, 0], tgt_in[:, 1:TGT + 1] = BOS, summary
    tgt_out[:, :TGT], tgt_out[:, TGT] = summary, EOS
    in_gen = (tgt_out < NGEN).float() * (tgt_out != PAD).float()
    tgt_gen = torch.where(in_gen > 0, tgt_out, torch.zeros_like(tgt_out))
    return src, torch.zeros_like(src), tgt_in, tgt_out, tgt_gen, in_gen


model = Summarizer()
model.train()
opt = torch.optim.AdamW(model.parameters(), 1e-4, weight_decay=0.01)
data = batch()


def step():
    opt.zero_grad()
    model(*data).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


step()  # warm-up
t0, cpu0 = time.time(), time.process_time()
for _ in range(STEPS):
    step()
wall, cpu = time.time() - t0, time.process_time() - cpu0
n = STEPS * B
print(f"pytorch {torch.__version__} threads={torch.get_num_threads()}: {n / wall:.1f} examples/s, "
      f"{n / cpu:.1f} examples per CPU-second ({n} examples, batch {B} x source {SRC_PAD} x summary {TGT_PAD})")

#!/usr/bin/python3
"""PyTorch CPU anchor of hf/decoder's BenchmarkProjection: the same products, the same shapes.

x [512, in] times a weight stored [out, in] (x @ w.T, as nn.Linear), in SmolLM2-135M's widths:
q/o 576x576, gate/up 576x1536, down 1536x576, the tied LM head 576x49152. Prints GFLOP per second
(wall) and per CPU-second (process time, all threads) for each.

Usage: /usr/bin/python3 tools/hfparity/bench_matmul_torch.py [--threads N] [--iters N]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _threads  # noqa: E402

_threads.pin_blas_threads(1)

import torch  # noqa: E402

ROWS = 4 * 128
SHAPES = [("q_o_576x576", 576, 576), ("gate_up_576x1536", 576, 1536), ("down_1536x576", 1536, 576),
          ("lm_head_576x49152", 576, 49152)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name, n_in, n_out in SHAPES:
        x, w = torch.randn(ROWS, n_in), torch.randn(n_out, n_in)
        x @ w.T  # warm-up
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.iters):
            x @ w.T
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        flop = 2 * ROWS * n_in * n_out * args.iters
        print(f"torch {torch.__version__} threads={args.threads} {name}: {flop / wall / 1e9:.1f} GFLOP/s, "
              f"{flop / cpu / 1e9:.1f} GFLOP per CPU-second")


if __name__ == "__main__":
    main()

"""Thread pinning for the PyTorch anchors; import it, and call pin_blas_threads, before torch."""

import os
import sys


def pin_blas_threads(default):
    """Sets the BLAS libraries' thread counts to --threads N (or default, when not None).

    Debian's torch 1.13 multiplies through OpenBLAS, whose threads torch.set_num_threads does not
    limit: a run "with 1 thread" used both cores of the machine in every large product (measured
    27 Nov 2026: a 512x576x1536 product took 2.0 CPU-seconds per wall second). The variables are
    read when the library loads, so this must run before `import torch`; a value already in the
    environment wins.
    """
    n = default
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            n = sys.argv[i + 1]
        elif a.startswith("--threads="):
            n = a.split("=", 1)[1]
    if n is not None:
        for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(v, str(n))

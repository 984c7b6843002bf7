#!/usr/bin/python3
"""Regenerates the agreement golden files (run from the repository root with Debian's python3-scipy):

    /usr/bin/python3 eval/testdata/agreement/gen.py eval/testdata/agreement

auto.jsonl mimics instances.jsonl (metrics under "scores"); human.jsonl holds human scores at the
top level (Likert-like values with many ties, one metric missing on some lines, one instance only
in auto.jsonl); golden.json holds scipy's Pearson, Spearman and Kendall tau-b with p-values on
the instances the two files share, sorted by (PMID, Aspect) as tracksum-eval agreement does.
"""
import json
import os
import sys

import numpy as np
from scipy import stats

out = sys.argv[1]
rng = np.random.default_rng(20250101)
metrics = ["claim_recall", "claim_precision", "citation_recall", "citation_precision"]
n = 24
keys = [("%05d" % (1000 + i // 3), "aiopmds"[i % 7]) for i in range(n)]
auto, human = {}, {}
for i, k in enumerate(keys):
    a = {m: float(rng.integers(0, 5)) / 4 for m in metrics}  # quarters: ties
    auto[k] = a
    h = {}
    for m in metrics:
        if m == "citation_precision" and i % 5 == 0:
            continue  # missing for some instances
        noisy = a[m] + rng.normal(0, 0.3)
        h[m] = float(min(5, max(1, round(1 + 4 * noisy))))  # a 1-5 Likert score
    human[k] = h
with open(os.path.join(out, "auto.jsonl"), "w") as f:
    for k in keys + [("99999", "a")]:
        a = auto.get(k, {m: 0.5 for m in metrics})
        f.write(json.dumps({"PMID": k[0], "Aspect": k[1], "scores": a}) + "\n")
with open(os.path.join(out, "human.jsonl"), "w") as f:
    for k in reversed(keys):
        f.write(json.dumps(dict({"PMID": k[0], "Aspect": k[1]}, **human[k])) + "\n")
golden = []
for m in metrics:
    ks = sorted(k for k in keys if m in human[k])
    x = [auto[k][m] for k in ks]
    y = [human[k][m] for k in ks]
    pr = stats.pearsonr(x, y)
    sr = stats.spearmanr(x, y)
    kt = stats.kendalltau(x, y)  # tau-b, scipy's default method
    golden.append({"metric": m, "n": len(ks),
                   "pearson": pr[0], "pearson_p": pr[1],
                   "spearman": sr[0], "spearman_p": sr[1],
                   "kendall_tau_b": kt[0], "kendall_p": kt[1]})
with open(os.path.join(out, "golden.json"), "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")

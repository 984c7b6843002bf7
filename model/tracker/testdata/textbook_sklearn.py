"""Reference for TestTextbookMatchesSklearn: the textbook tracker baseline in scikit-learn.

Reads {"train": [[aspect, text, rel, first, last, label], ...], "test": [...]} on stdin and writes
the test rows' probabilities (one JSON list) on stdout: per aspect, TfidfVectorizer(ngram_range=(1, 2),
sublinear_tf=True) fitted on that aspect's train rows, the three position features stacked after
the tf-idf columns, LogisticRegression(C=10, class_weight="balanced") solved to a tight tolerance.
"""
import json
import sys

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

data = json.load(sys.stdin)
out = [None] * len(data["test"])
for a in sorted({r[0] for r in data["train"]}):
    tr = [r for r in data["train"] if r[0] == a]
    te = [(i, r) for i, r in enumerate(data["test"]) if r[0] == a]
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    X = sp.hstack([vec.fit_transform([r[1] for r in tr]), sp.csr_matrix(np.array([r[2:5] for r in tr], dtype=float))]).tocsr()
    y = np.array([r[5] for r in tr])
    clf = LogisticRegression(C=10, class_weight="balanced", solver="newton-cg", tol=1e-8, max_iter=1000)
    clf.fit(X, y)
    if te:
        Xt = sp.hstack([vec.transform([r[1] for _, r in te]), sp.csr_matrix(np.array([r[2:5] for _, r in te], dtype=float))]).tocsr()
        for (i, _), p in zip(te, clf.predict_proba(Xt)[:, 1]):
            out[i] = float(p)
json.dump(out, sys.stdout)

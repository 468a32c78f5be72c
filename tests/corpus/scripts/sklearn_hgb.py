"""Corpus program sklearn-hgb: a HistGradientBoostingClassifier on seeded synthetic data.

    sklearn_hgb.py [--dump FILE.npz]

Prints on stderr the OpenMP and BLAS objects mapped (scikit-learn's bundled libgomp), and on
stdout one line per result, in full precision: a SHA-256 of predict_proba on the training data
and of the fitted trees' node arrays (thresholds, leaf values, gains, counts), n_iter_ and the
training accuracy. They are the same bits with 1 to 4 threads (docs/corpus.md): each histogram
and each split search belongs to one thread, and no sum is split between threads. --dump also
saves the arrays.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier

from common import print_runtimes, sha


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="also save the result arrays to this .npz file")
    args = ap.parse_args()

    x, y = make_classification(n_samples=60_000, n_features=40, n_informative=20, n_redundant=10,
                               random_state=0)
    # early_stopping off: with it, a seeded validation split decides the number of trees, and
    # the row would test that split rather than the fit.
    clf = HistGradientBoostingClassifier(max_iter=30, early_stopping=False, random_state=0).fit(x, y)
    proba = clf.predict_proba(x)
    nodes = np.concatenate([p.nodes for it in clf._predictors for p in it])  # every tree
    print_runtimes()
    print("predict_proba", proba.shape, sha(proba))
    print("tree_nodes", nodes.shape, sha(nodes))
    print("n_iter", clf.n_iter_)
    print("train_accuracy", repr(clf.score(x, y)))
    if args.dump:
        np.savez(args.dump, predict_proba=proba, tree_nodes=nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Corpus program sklearn-kmeans: KMeans (lloyd, seeded, 3 inits) on seeded blobs.

    sklearn_kmeans.py [--dump FILE.npz]

Prints on stderr the OpenMP and BLAS objects mapped (scikit-learn's bundled libgomp), and on
stdout a SHA-256 of labels_ in full and of cluster_centers_ rounded to 6 decimal places,
inertia_ to 10 significant digits, and n_iter_. Rounded because lloyd's threads each sum their
samples into their own copy of the centres and add the copies under a lock: the result depends
on the team (1 and 2 threads differ by up to 5.9e-14 in the centres, 2.7e-7 in inertia_,
docs/corpus.md), and with 3 or more threads on the order in which they take the lock. --dump
also saves the unrounded arrays.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from common import print_runtimes, sha


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="also save the unrounded result arrays to this .npz file")
    args = ap.parse_args()

    x, _ = make_blobs(n_samples=100_000, n_features=16, centers=12, cluster_std=4.0, random_state=0)
    km = KMeans(n_clusters=12, n_init=3, algorithm="lloyd", random_state=0).fit(x)
    print_runtimes()
    print("labels", km.labels_.shape, sha(km.labels_))
    # The coordinates lie between -10 and 10: 6 decimal places keep 7-8 significant digits, a
    # step over 10 million times the largest difference measured. + 0.0 turns -0.0 into 0.0.
    print("centers", km.cluster_centers_.shape, "rounded to 6 decimal places",
          sha(np.round(km.cluster_centers_, 6) + 0.0))
    print("inertia", f"{km.inertia_:.9e}")
    print("n_iter", km.n_iter_)
    if args.dump:
        np.savez(args.dump, labels=km.labels_, centers=km.cluster_centers_, inertia=np.array([km.inertia_]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One scikit-learn fit on seeded data, for `scaf bench pairs --program` (docs/results.md, "scikit-learn").

    build/venv/bin/python tools/experiments/sklearn_fit.py hgb|kmeans

hgb: HistGradientBoostingClassifier, 60,000 x 40, 60 iterations (every parallel loop a Cython
prange with num_threads = omp_get_max_threads(), many short regions). kmeans: KMeans (lloyd, 8
clusters, 400,000 x 20, n_init 4): fewer, longer regions. Prints a digest of the result, the same
for any team (KMeans's centres and inertia rounded: their reduction order depends on the team), and
the fit's seconds on stderr.
"""

from __future__ import annotations

import hashlib
import sys
import time

import numpy as np


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "hgb":
        from sklearn.datasets import make_classification
        from sklearn.ensemble import HistGradientBoostingClassifier

        x, y = make_classification(n_samples=60_000, n_features=40, n_informative=20, random_state=0)
        t0 = time.perf_counter()
        clf = HistGradientBoostingClassifier(max_iter=60, early_stopping=False, random_state=0).fit(x, y)
        fit = time.perf_counter() - t0
        digest = hashlib.sha256(clf.predict_proba(x).tobytes()).hexdigest()
    elif what == "kmeans":
        from sklearn.cluster import KMeans
        from sklearn.datasets import make_blobs

        x, _ = make_blobs(n_samples=400_000, n_features=20, centers=8, random_state=0)
        t0 = time.perf_counter()
        km = KMeans(n_clusters=8, n_init=4, algorithm="lloyd", random_state=0).fit(x)
        fit = time.perf_counter() - t0
        h = hashlib.sha256(km.labels_.tobytes())
        h.update(np.round(km.cluster_centers_, 6).tobytes())
        h.update(f"{km.inertia_:.10g}".encode())
        digest = h.hexdigest()
    else:
        print("usage: sklearn_fit.py hgb|kmeans", file=sys.stderr)
        return 2
    print(f"{what} {digest[:16]}")
    print(f"fit_s {fit:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

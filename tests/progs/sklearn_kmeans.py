"""A small scikit-learn computation on its OpenMP paths (KMeans lloyd, pairwise argmin).

Prints checksum=<sha256 of every result array>. Run by tests/thirdparty/test_thirdparty.py
with and without the layer; scikit-learn calls its own bundled, renamed libgomp.
"""

from __future__ import annotations

import hashlib
import sys


def main() -> int:
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances_argmin_min

    n, iters = int(sys.argv[1]), int(sys.argv[2])
    x = np.random.RandomState(0).standard_normal((n, 16))
    km = KMeans(n_clusters=8, n_init=1, max_iter=iters, tol=0, random_state=0, algorithm="lloyd").fit(x)
    idx, dist = pairwise_distances_argmin_min(x, km.cluster_centers_)
    h = hashlib.sha256()
    for a in (km.cluster_centers_, km.labels_, idx, dist):
        h.update(a.tobytes())
    print(f"checksum={h.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

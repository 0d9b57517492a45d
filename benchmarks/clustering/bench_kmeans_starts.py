"""AMI of the default k-means with more starts in the small-pool regime, against scikit-learn's, on one real
pool.

For each ``n_init`` in the list, :func:`ucs.clustering.partition.lloyd_settings`'s small-pool regime (``m ·
k`` up to ``LLOYD_MULTI_START_WORK``) runs that many starts instead of its own (the large regime is
untouched); each seed clusters the pool with ``LatentClusterer(method="kmeans", random_state=seed,
kmeans_impl="lloyd")``, then with ``kmeans_impl="sklearn"`` (the anchor). Prints AMI against the gold intents
(mean ± sd over seeds) and the seconds per fit. Pools as in ``bench_kmeans_quality.py`` (MiniLM embeddings of
the training pool, cached).

    PYTHONPATH=src python benchmarks/clustering/bench_kmeans_starts.py hwu64 3,10 10
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score as ami

sys.path.insert(0, str(Path(__file__).parent))
from bench_kmeans_quality import real_pool  # noqa: E402

import ucs.clustering.partition as P  # noqa: E402
from ucs.clustering import LatentClusterer  # noqa: E402


def main() -> None:
    name, n_inits, n_seeds = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], int(sys.argv[3])
    data = Path(sys.argv[4]) if len(sys.argv) > 4 else Path("../shared/data")
    E, y = real_pool(name, data)
    seeds = range(n_seeds)
    own = P.lloyd_settings
    for n_init in n_inits:
        P.lloyd_settings = lambda m, k, n=n_init: (
            {**own(m, k), "n_init": n} if m * k <= P.LLOYD_MULTI_START_WORK else own(m, k)
        )
        t = time.perf_counter()
        a = [
            ami(y, LatentClusterer(method="kmeans", random_state=s, kmeans_impl="lloyd").fit(E).labels_)
            for s in seeds
        ]
        print(
            f"{name} lloyd n_init {n_init} AMI {np.mean(a):.4f} ± {np.std(a, ddof=1):.4f} "
            f"s/fit {(time.perf_counter() - t) / len(a):.2f}",
            flush=True,
        )
    P.lloyd_settings = own
    t = time.perf_counter()
    a = [
        ami(y, LatentClusterer(method="kmeans", random_state=s, kmeans_impl="sklearn").fit(E).labels_)
        for s in seeds
    ]
    print(
        f"{name} sklearn AMI {np.mean(a):.4f} ± {np.std(a, ddof=1):.4f} s/fit "
        f"{(time.perf_counter() - t) / len(a):.2f}"
    )


if __name__ == "__main__":
    main()

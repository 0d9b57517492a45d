"""AMI of the default k-means (``kmeans_impl="lloyd"``) against scikit-learn's (``"sklearn"``, the anchor),
side by side.

Usage (benchmarks/clustering/RESULTS_default_scale.md quotes its output)::

    PYTHONPATH=src python benchmarks/clustering/bench_kmeans_quality.py --data ../shared/data --seeds 0 1 2

Pools: planted synthetic clusters (:func:`ucs.clustering.synthetic.make_planted_embeddings`, 10,000 rows, 100
clusters) and the training pools of BANKING77, CLINC150 and HWU64 in the retrieval embedder's space (the
default preset's ``cluster_space="retrieval"``; all-MiniLM-L6-v2, the ``cpu`` preset's retrieval embedder and
the one a package ships, embedded once through :class:`ucs.embedding.EmbeddingCache`, so later runs read the
cache). Each pool is clustered with ``LatentClusterer(method="kmeans", random_state=seed)`` — ⌈√N⌉ clusters —
by both implementations, alternating per seed so machine load hits both; AMI is against the planted clusters
or the gold intents.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score

from ucs.clustering import LatentClusterer
from ucs.clustering.synthetic import make_planted_embeddings

IMPLS = ("sklearn", "lloyd")


def real_pool(name: str, data: Path) -> Tuple[np.ndarray, np.ndarray]:
    """(ℓ2-normalised MiniLM embeddings of the training pool, gold label ids)."""
    from ucs.data.registry import load_dataset
    from ucs.embedding import EmbeddingCache, load_retrieval_embedder
    from ucs.utils.arrays import l2_normalize

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ds = load_dataset(name, data)
    E = EmbeddingCache().embed(load_retrieval_embedder("all-minilm-l6-v2"), list(ds.pool.texts))
    return l2_normalize(E), np.asarray(ds.pool.labels)


def pools(data: Path, names: List[str]) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    out = {}
    for n, c in ((10_000, 100),):
        out[f"planted {n:,} × 128 ({c} clusters)"] = make_planted_embeddings(
            n_samples=n, n_features=128, n_clusters=c, latent_dim=48, random_state=0
        )
    for name in names:
        t = time.perf_counter()
        out[f"{name} (MiniLM)"] = real_pool(name, data)
        print(f"{name}: {out[f'{name} (MiniLM)'][0].shape} in {time.perf_counter() - t:.1f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("UCS_DATA_DIR", "../shared/data")),
        help="Folder of the public data files (default $UCS_DATA_DIR, else ../shared/data).",
    )
    ap.add_argument("--datasets", nargs="*", default=["banking77", "clinc150", "hwu64"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    a = ap.parse_args()
    load = open("/proc/loadavg").read().split()[0]
    lines = [
        f"- 1-minute load at start {load}; seeds {a.seeds}",
        "",
        "| pool | n | k | AMI sklearn (mean ± sd) | AMI lloyd (mean ± sd) | Δ [95 % interval] | s sklearn | "
        "s lloyd |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (E, y) in pools(a.data, a.datasets).items():
        ami: Dict[str, List[float]] = {i: [] for i in IMPLS}
        sec: Dict[str, List[float]] = {i: [] for i in IMPLS}
        for seed in a.seeds:
            for impl in IMPLS if seed % 2 == 0 else IMPLS[::-1]:
                t = time.perf_counter()
                c = LatentClusterer(method="kmeans", random_state=seed, kmeans_impl=impl).fit(E)
                sec[impl].append(time.perf_counter() - t)
                ami[impl].append(adjusted_mutual_info_score(y, c.labels_))
        k = c.n_clusters_
        s, f = np.array(ami["sklearn"]), np.array(ami["lloyd"])
        # the seeds give unrelated clusterings of the two implementations: an unpaired (Welch) normal interval
        half = (
            1.96 * float(np.sqrt(s.var(ddof=1) / s.size + f.var(ddof=1) / f.size))
            if s.size > 1
            else float("nan")
        )
        d = f.mean() - s.mean()
        lines.append(
            f"| {name} | {E.shape[0]:,} | {k} | {s.mean():.4f} ± {s.std(ddof=1):.4f} | {f.mean():.4f} ± "
            f"{f.std(ddof=1):.4f} | {d:+.4f} [{d - half:+.4f}, {d + half:+.4f}] | "
            f"{np.mean(sec['sklearn']):.1f} "
            f"| {np.mean(sec['lloyd']):.2f} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

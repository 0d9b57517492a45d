"""Scale of the default preset's clustering: a 1M × 128 synthetic pool on this machine.

Usage (benchmarks/clustering/RESULTS_default_scale.md was produced with it)::

    PYTHONPATH=src python benchmarks/clustering/bench_default_scale.py --n 1000000 \
        --out RESULTS_default_scale.md

Draws ``n × d`` float32 embeddings with planted clusters
(:func:`ucs.clustering.synthetic.make_planted_embeddings`), clusters them with the ``default`` preset's
clustering settings (``DEFAULT_COVERAGE``: spherical k-means with ⌈√N⌉ clusters), and records wall time per
stage, peak resident memory, the 1-minute load average at the start, the health of the result and its AMI
against the planted clusters. With ``--paper`` the paper's ``dict_dbscan`` runs on the same input, side by
side, for the ratio. With ``--ray`` the executor path of the default clustering runs too
(:func:`ucs.distributed.kmeans_pool` on a private local Ray cluster with the machine's cores: centres on the
driver, assignment shard by shard on the workers), and whether its labels equal the local ones is recorded.
With ``--anchor`` scikit-learn's ``KMeans`` (``kmeans_impl="sklearn"``: the implementation before 2026-11,
best of 3 k-means++ starts, up to 100 iterations, on the same 100,000-row sample) runs in the same process,
alternating with the default (default, anchor, default), and the page gives the ratio.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score

from ucs.clustering import LatentClusterer, cluster_health
from ucs.clustering.synthetic import make_planted_embeddings
from ucs.pipeline import PipelineConfig


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def default_params() -> dict:
    """LatentClusterer parameters of the default preset's clustering (``PipelineConfig().clusterer``; one
    definition: ``DEFAULT_COVERAGE``)."""
    c = PipelineConfig().clusterer
    p = {"method": c["method"], "random_state": 0}
    if c["n_clusters"] is not None:
        p["n_clusters"] = c["n_clusters"]
    return p


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run(E: np.ndarray, params: dict) -> dict:
    t = time.perf_counter()
    c = LatentClusterer(**params).fit(E)
    return {"est": c, "seconds": time.perf_counter() - t}


def run_ray(E: np.ndarray, params: dict, shard_size: int) -> dict:
    """The executor path on a private local Ray cluster (started, warmed up and stopped here; only the
    clustering is timed)."""
    import ray

    from ucs.distributed import RayExecutor, kmeans_pool

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, address="local", log_to_driver=False)
    try:
        ex = RayExecutor()
        from ucs.distributed.cluster import _n_rows_task

        # start every worker and import ucs there first: worker start-up is Ray's fixed cost, not the
        # clustering's
        ex.get([ex.submit(_n_rows_task, np.zeros((1, 1))) for _ in range(4 * (os.cpu_count() or 1))])
        t = time.perf_counter()
        c = kmeans_pool(E, params, ex, shard_size=shard_size)
        return {"est": c, "seconds": time.perf_counter() - t}
    finally:
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--clusters", type=int, default=2000, help="planted clusters")
    ap.add_argument("--paper", action="store_true", help="also run the paper's dict_dbscan on the same input")
    ap.add_argument("--ray", action="store_true", help="also run the executor path on a local Ray cluster")
    ap.add_argument(
        "--anchor",
        action="store_true",
        help="also run scikit-learn's KMeans (kmeans_impl='sklearn'), alternating with the default",
    )
    ap.add_argument("--shard-size", type=int, default=100_000, help="rows per shard of the Ray run")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    E, y = make_planted_embeddings(
        n_samples=a.n, n_features=a.d, n_clusters=a.clusters, latent_dim=min(48, a.d), random_state=0
    )
    rows = []
    plan = [("default", default_params())]
    if a.anchor:
        anchor = {**default_params(), "kmeans_impl": "sklearn"}
        plan = [
            ("default (1st)", default_params()),
            ("anchor: scikit-learn KMeans", anchor),
            ("default (2nd)", default_params()),
        ]
    plan += [("paper dict_dbscan", {"random_state": 0})] if a.paper else []
    for name, params in plan:
        print(name, "load", open("/proc/loadavg").read().split()[0], flush=True)
        r = run(E, params)
        c = r["est"]
        h = cluster_health(c.labels_)
        rows.append(
            (
                name,
                params,
                r["seconds"],
                c.timings_,
                h,
                adjusted_mutual_info_score(y, c.labels_),
                peak_rss_gib(),
            )
        )
        print(name, f"{r['seconds']:.1f}s", h.line(), flush=True)
        if name.startswith("default"):
            local_labels = c.labels_
    if a.ray:
        r = run_ray(E, default_params(), a.shard_size)
        c = r["est"]
        h = cluster_health(c.labels_)
        same = bool(np.array_equal(c.labels_, local_labels))
        rows.append(
            (
                f"default on Ray ({a.shard_size:,}-row shards; labels equal local: "
                f"{'yes' if same else 'NO'})",
                default_params(),
                r["seconds"],
                c.timings_,
                h,
                adjusted_mutual_info_score(y, c.labels_),
                peak_rss_gib(),
            )
        )
        print("ray", f"{r['seconds']:.1f}s", "labels equal local:", same, flush=True)
    lines = [
        f"# Default clustering at scale: {a.n:,} × {a.d} synthetic float32 ({a.clusters} planted clusters)",
        "",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores; 1-minute load at start "
        f"{load:.2f}; Python {sys.version.split()[0]}",
        f"- command: `PYTHONPATH=src python benchmarks/clustering/bench_default_scale.py --n {a.n} --d {a.d} "
        f"--clusters {a.clusters}{' --anchor' if a.anchor else ''}{' --paper' if a.paper else ''}"
        f"{' --ray' if a.ray else ''}`",
        "",
        "- peak RSS is the driver process's (Ray workers hold one shard and the centres each)",
        "",
        "| clustering | parameters | wall s | stages (s) | clusters | largest | singletons | AMI vs planted "
        "| peak RSS GiB |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, params, sec, tim, h, ami, rss in rows:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in tim.items() if v >= 0.05)
        lines.append(
            f"| {name} | `{params}` | {sec:.1f} | {stages} | {h.n_clusters} | {h.largest_fraction:.4f} | "
            f"{h.singleton_fraction:.3f} | {ami:.3f} | {rss:.2f} |"
        )
    if a.anchor:
        fast = [sec for name, _, sec, *_ in rows if name.startswith("default")]
        slow = [sec for name, _, sec, *_ in rows if name.startswith("anchor")][0]
        lines += [
            "",
            f"- default vs anchor (same run, alternating): {np.mean(fast):.1f} s vs {slow:.1f} s, "
            f"**{slow / np.mean(fast):.1f}× faster**",
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

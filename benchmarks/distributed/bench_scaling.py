"""Scaling benchmark: embed → cluster → select on a local Ray cluster, for growing synthetic pools.

Each pool size runs in a fresh Ray cluster (``--num-cpus`` CPUs, loopback only):

1. **embed** — :func:`ucs.distributed.embed_pool` with :class:`ucs.distributed.synthetic.PlantedEmbedder`
   (hash-based vectors around Zipf-sized planted topics; it costs little, so this stage measures
   sharding, actor start-up, hashing and verified atomic writes rather than a model);
2. **cluster** — :func:`ucs.distributed.cluster_pool` (``dict_dbscan``, paper defaults: PCA 128,
   64 atoms, ridge codes, k = 20, q = 0.01) with the representation fitted on a 100k sample and
   HNSW k-NN per index partition;
3. **select** — :func:`ucs.distributed.select_queries` with DPP+UCS (paper estimator, λ = 0.1) over
   query batches.

Time and peak resident memory are recorded per stage: the driver alone, and the driver plus every
Ray process it started (object-store pages mapped by several processes are counted once per
process, so that figure is an upper bound).

Usage (one size per invocation, results appended to a JSON file, then a markdown report)::

    PYTHONPATH=src python benchmarks/distributed/bench_scaling.py --n 100000 --json results.json
    PYTHONPATH=src python benchmarks/distributed/bench_scaling.py --report results.json --out RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np


class PeakMemory:
    """Sample RSS of this process and its descendants every ``interval`` seconds."""

    def __init__(self, interval: float = 0.2) -> None:
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.me = psutil.Process()
        self._stop = threading.Event()
        self.driver_peak = 0
        self.tree_peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        rss = self.me.memory_info().rss
        total = rss
        for c in self.me.children(recursive=True):
            try:
                total += c.memory_info().rss
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied):
                pass
        self.driver_peak = max(self.driver_peak, rss)
        self.tree_peak = max(self.tree_peak, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import functools

    import ray

    from ucs.distributed import RayExecutor, cluster_pool, embed_pool, select_queries
    from ucs.distributed.synthetic import PlantedEmbedder, make_planted_texts
    from ucs.selectors import DPPSelector, UCSPrior

    n = args.n
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="ucs-bench-"))
    stages: Dict[str, Dict[str, Any]] = {}
    texts, topics = make_planted_texts(n, n_clusters=args.topics, random_state=0)
    fac = functools.partial(PlantedEmbedder, dim=args.dim, seed=0)

    ray.init(num_cpus=args.num_cpus, include_dashboard=False, address="local", log_to_driver=False)
    ex = RayExecutor()
    try:
        t0 = time.perf_counter()
        with PeakMemory() as mem:
            pool = embed_pool(fac, texts, ex, shard_size=args.embed_shard, out_dir=work / "cache")
        stages["embed"] = {
            "seconds": time.perf_counter() - t0,
            "driver_rss": mem.driver_peak,
            "tree_rss": mem.tree_peak,
            "detail": {"shards": pool.n_shards},
        }

        t0 = time.perf_counter()
        with PeakMemory() as mem:
            res = cluster_pool(
                pool,
                None,
                ex,
                fit_sample_size=args.fit_sample,
                knn=args.knn,
                random_state=0,
                index_shards=args.index_shards,
            )
        stages["cluster"] = {
            "seconds": time.perf_counter() - t0,
            "driver_rss": mem.driver_peak,
            "tree_rss": mem.tree_peak,
            "detail": {
                **{k: round(v, 2) for k, v in res.timings_.items()},
                "n_clusters": res.n_clusters_,
                "eps": res.eps_,
                "dense_rows": res.graph_.n_dense,
                "cross_pairs": res.graph_.n_cross_edges,
            },
        }
        from sklearn.metrics import adjusted_rand_score

        stages["cluster"]["detail"]["ari_vs_planted"] = round(
            float(adjusted_rand_score(topics, res.labels_)), 4
        )

        t0 = time.perf_counter()
        with PeakMemory() as mem:
            E = pool.load()
            qtexts, _ = make_planted_texts(args.queries, n_clusters=args.topics, random_state=1)
            Q = PlantedEmbedder(dim=args.dim, seed=0).embed([f"{t}|query" for t in qtexts])
            sel = DPPSelector(prior=UCSPrior(res.labels_, estimator="paper", lam=0.1)).fit(
                E, cluster_ids=res.labels_
            )
            t_fit = time.perf_counter() - t0
            out = select_queries(sel, Q, ex, batch_size=args.query_batch, budget=10)
        stages["select"] = {
            "seconds": time.perf_counter() - t0,
            "driver_rss": mem.driver_peak,
            "tree_rss": mem.tree_peak,
            "detail": {
                "fit_on_driver": round(t_fit, 2),
                "queries": args.queries,
                "mean_clusters_covered": round(float(out.clusters_covered.mean()), 3),
            },
        }
        if args.check_local:
            m = min(args.check_local, args.queries)
            ref = sel.select(Q[:m], 10)
            stages["select"]["detail"][f"identical_to_local_first_{m}"] = bool(
                np.array_equal(ref.indices, out.indices[:m])
            )
        if args.check_exact:
            exact = cluster_pool(
                pool,
                None,
                ex,
                fit_sample_size=args.fit_sample,
                knn="exact",
                random_state=0,
                index_shards=args.index_shards,
            )
            stages["cluster"]["detail"]["ari_vs_exact_knn"] = round(
                float(adjusted_rand_score(exact.labels_, res.labels_)), 4
            )
            stages["cluster"]["detail"]["exact_knn_seconds"] = round(exact.timings_["knn"], 1)
    finally:
        ray.shutdown()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "n": n,
        "dim": args.dim,
        "topics": args.topics,
        "knn": args.knn,
        "num_cpus": args.num_cpus,
        "queries": args.queries,
        "fit_sample": args.fit_sample,
        "stages": stages,
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "loadavg_after": os.getloadavg(),
        },
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f}"


def report(results: List[Dict[str, Any]]) -> str:
    results = sorted(results, key=lambda r: r["n"])
    lines = [
        "| pool size | stage | time (s) | growth vs previous size | driver peak RSS (GiB) | "
        "driver + Ray peak RSS (GiB) | details |",
        "|---|---|---|---|---|---|---|",
    ]
    prev: Dict[str, float] = {}
    prev_n = None
    for r in results:
        for stage in ("embed", "cluster", "select"):
            s = r["stages"][stage]
            growth = ""
            if stage in prev and prev_n:
                growth = f"×{s['seconds'] / prev[stage]:.2f} (size ×{r['n'] / prev_n:.2f})"
            detail = ", ".join(f"{k}={v}" for k, v in s["detail"].items())
            lines.append(
                f"| {r['n']:,} | {stage} | {s['seconds']:.1f} | {growth} | {_gib(s['driver_rss'])} | "
                f"{_gib(s['tree_rss'])} | {detail} |"
            )
            prev[stage] = s["seconds"]
        prev_n = r["n"]
        total = sum(r["stages"][k]["seconds"] for k in ("embed", "cluster", "select"))
        lines.append(
            f"| {r['n']:,} | **total** | **{total:.1f}** | | | | load average after run: "
            f"{', '.join(f'{x:.1f}' for x in r['machine']['loadavg_after'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, help="pool size")
    ap.add_argument("--json", type=Path, help="append the result to this JSON list")
    ap.add_argument("--report", type=Path, help="print a markdown table of a results JSON")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--embed-shard", type=int, default=50_000)
    ap.add_argument("--fit-sample", type=int, default=100_000)
    ap.add_argument("--knn", default="hnsw", choices=["exact", "hnsw", "ivf"])
    ap.add_argument("--index-shards", type=int, default=None)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--query-batch", type=int, default=250)
    ap.add_argument(
        "--check-local", type=int, default=200, help="compare the first N queries with one local call"
    )
    ap.add_argument(
        "--check-exact", action="store_true", help="also cluster with exact k-NN and report the ARI"
    )
    ap.add_argument("--work-dir", type=str, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if args.report:
        print(report(json.loads(args.report.read_text())), end="")
        return
    if not args.n:
        ap.error("give --n (or --report)")
    result = run(args)
    print(json.dumps(result, indent=1))
    if args.json:
        prev = json.loads(args.json.read_text()) if args.json.exists() else []
        prev = [r for r in prev if r["n"] != result["n"]]
        args.json.write_text(json.dumps(prev + [result], indent=1) + "\n")


if __name__ == "__main__":
    main()

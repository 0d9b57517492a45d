"""End-to-end cost of the default pipeline: embed → cluster (default k-means) → select, per stage, in one
process.

Usage (benchmarks/distributed/RESULTS_default_pipeline.md was produced with it)::

    PYTHONPATH=src python benchmarks/distributed/bench_default_pipeline.py --n 100000 1000000 \
        --out RESULTS_default_pipeline.md

For each pool size ``n``:

1. **texts** — :func:`ucs.distributed.synthetic.make_planted_texts` (``n`` texts, 2,000 Zipf-sized topics);
2. **embed** — :class:`ucs.distributed.synthetic.PlantedEmbedder` (128 dims; hash-based, so this measures the
   pipeline, not a model), shard by shard into one float32 matrix, then ℓ2-normalised (the retrieval space the
   default clusters in, ``DEFAULT_COVERAGE["cluster_space"] == "retrieval"``);
3. **cluster** — ``LatentClusterer`` with the default coverage settings
   (``DEFAULT_COVERAGE["clusterer"]["method"]``: spherical k-means, ⌈√N⌉ clusters, ``kmeans_impl="lloyd"``);
4. **select** — 2,000 queries (their own planted texts), budget 10, with the default selector
   ``ucs.defaults.METHOD`` (TopK) and, for comparison, DPP+UCS with the default estimator
   (``DEFAULT_COVERAGE["prior"]["estimator"]``) and λ = ``ucs.defaults.LAM``; each fitted on the pool, then
   one call.

With ``--sharded DIR`` the pool never exists in memory as one array: **texts** draws only the topics
(:func:`~ucs.distributed.synthetic.planted_topics`), **embed** builds each ``--shard`` of rows' strings and
embeddings and writes them to ``DIR/shard_*.npy``, **cluster** is :func:`ucs.distributed.kmeans_pool` over
those files (the same fitting sample and centres as the local path; each shard memory-mapped for the
assignment), and **select** runs the default selector on each memory-mapped shard and keeps every query's best
``budget`` over the shards (similarity descending, then pool index: the ranking of one scan over the whole
pool; only DPP+UCS, which needs the whole pool's candidates and clusters at once, is left out). This is how
the 10⁷-row size is run.

Time is wall-clock; memory is this process's resident set sampled every 20 ms during each stage (peak; pages
of a memory-mapped shard count while they are mapped) and the process's high-water mark so far. The 1-minute
load average is read at the start of every size.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from ucs import defaults as D
from ucs.clustering import LatentClusterer
from ucs.distributed.synthetic import PlantedEmbedder, make_planted_texts, planted_texts, planted_topics
from ucs.selectors import UCSPrior
from ucs.selectors.factory import make_selector
from ucs.utils.arrays import take_rows

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    """Resident bytes of this process now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


def high_water() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def staged(fn: Callable[[], Any]) -> Tuple[Any, Dict[str, float]]:
    """Run ``fn`` while sampling RSS; (result, {seconds, cpu_seconds, peak_gib, high_water_gib}). CPU seconds
    (all threads of this process) do not grow with other processes' load: on an idle 2-core machine a stage
    takes between ``cpu/2`` (both cores busy) and ``cpu`` seconds."""
    peak = [rss()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], rss())

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t, c = time.perf_counter(), time.process_time()
    try:
        out = fn()
    finally:
        sec, cpu = time.perf_counter() - t, time.process_time() - c
        stop.set()
        th.join()
    peak[0] = max(peak[0], rss())
    return out, {
        "seconds": sec,
        "cpu_seconds": cpu,
        "peak_gib": peak[0] / 2**30,
        "high_water_gib": high_water() / 2**30,
    }


def embed(texts: List[str], dim: int, shard: int) -> np.ndarray:
    """Planted embeddings of ``texts`` shard by shard into one (n, dim) float32 matrix, ℓ2-normalised in
    place."""
    emb = PlantedEmbedder(dim=dim, seed=0)
    E = np.empty((len(texts), dim), dtype=np.float32)
    for s in range(0, len(texts), shard):
        block = emb.embed(texts[s : s + shard])
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        E[s : s + shard] = block
    return E


def one_size(n: int, a: argparse.Namespace) -> Dict[str, Any]:
    load = open("/proc/loadavg").read().split()[0]
    stages: Dict[str, Dict[str, float]] = {}
    (texts, topics), stages["texts"] = staged(
        lambda: make_planted_texts(n, n_clusters=a.topics, random_state=0)
    )
    E, stages["embed"] = staged(lambda: embed(texts, a.dim, a.shard))
    texts = []  # free the strings before clustering
    qtexts, _ = make_planted_texts(a.queries, n_clusters=a.topics, random_state=1)
    Q = embed([f"{t}|query" for t in qtexts], a.dim, a.shard)
    params = {"method": D.DEFAULT_COVERAGE["clusterer"]["method"], "random_state": 0}
    est, stages["cluster"] = staged(lambda: LatentClusterer(**params).fit(E))
    labels = est.labels_
    if a.select_max is None or n <= a.select_max:
        _, stages[f"select {D.METHOD}"] = staged(lambda: make_selector(D.METHOD).fit(E).select(Q, a.budget))
        prior = UCSPrior(labels, estimator=D.DEFAULT_COVERAGE["prior"]["estimator"], lam=D.LAM)
        _, stages["select dpp+ucs"] = staged(
            lambda: make_selector("dpp+ucs", prior=prior).fit(E, cluster_ids=labels).select(Q, a.budget)
        )
    from sklearn.metrics import adjusted_mutual_info_score

    return {
        "n": n,
        "load": load,
        "stages": stages,
        "k": int(est.n_clusters_),
        "ami": float(adjusted_mutual_info_score(topics, labels)),
        "cluster_timings": est.timings_,
    }


def one_size_sharded(n: int, a: argparse.Namespace) -> Dict[str, Any]:
    """:func:`one_size` with the pool in ``.npy`` shards under ``a.sharded`` (see the module docstring)."""
    from sklearn.metrics import adjusted_mutual_info_score

    from ucs.distributed import kmeans_pool

    load = open("/proc/loadavg").read().split()[0]
    root = Path(a.sharded) / f"n{n}"
    root.mkdir(parents=True, exist_ok=True)
    stages: Dict[str, Dict[str, float]] = {}
    topics, stages["texts"] = staged(lambda: planted_topics(n, n_clusters=a.topics, random_state=0))
    paths, stages["embed"] = staged(lambda: embed_shards(topics, a.dim, a.shard, root))
    qtexts, _ = make_planted_texts(a.queries, n_clusters=a.topics, random_state=1)
    Q = embed([f"{t}|query" for t in qtexts], a.dim, a.shard)
    params = {"method": D.DEFAULT_COVERAGE["clusterer"]["method"], "random_state": 0}
    est, stages["cluster"] = staged(lambda: kmeans_pool([str(p) for p in paths], params, executor="local"))
    _, stages[f"select {D.METHOD}"] = staged(lambda: select_shards(paths, Q, a.budget))
    return {
        "n": n,
        "load": load,
        "stages": stages,
        "k": int(est.n_clusters_),
        "ami": float(adjusted_mutual_info_score(topics, est.labels_)),
        "cluster_timings": est.timings_,
    }


def embed_shards(topics: np.ndarray, dim: int, shard: int, root: Path) -> List[Path]:
    """Each ``shard`` rows' texts embedded and ℓ2-normalised into ``root/shard_XXXXX.npy``; only one shard's
    strings and embeddings are in memory at a time."""
    emb = PlantedEmbedder(dim=dim, seed=0)
    paths = []
    for s in range(0, len(topics), shard):
        block = emb.embed(planted_texts(topics[s : s + shard], start=s))
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        paths.append(root / f"shard_{s // shard:05d}.npy")
        np.save(paths[-1], block)
    return paths


def select_shards(paths: List[Path], Q: np.ndarray, budget: int) -> Tuple[np.ndarray, np.ndarray]:
    """The default selector's ``budget`` demonstrations of every query over all shards: its choice on each
    memory-mapped shard, merged by similarity descending then pool index. Returns (indices, scores), (Q,
    budget)."""
    best_i = np.empty((Q.shape[0], 0), dtype=np.int64)
    best_s = np.empty((Q.shape[0], 0))
    offset = 0
    for p in paths:
        shard = np.load(p, mmap_mode="r")
        sel = make_selector(D.METHOD).fit(shard).select(Q, budget)
        cand_i = np.concatenate([best_i, sel.indices + offset], axis=1)
        cand_s = np.concatenate([best_s, sel.scores], axis=1)
        order = np.lexsort((cand_i, -cand_s), axis=1)[:, :budget]
        best_i, best_s = take_rows(cand_i, order), take_rows(cand_s, order)
        offset += shard.shape[0]
    return best_i, best_s


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def table(results: List[Dict[str, Any]]) -> List[str]:
    lines = [
        "| n | load at start | stage | wall s | CPU s | peak RSS in stage GiB | process high-water GiB | "
        "notes |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        for name, s in r["stages"].items():
            note = f"k = {r['k']}, AMI vs planted topics {r['ami']:.3f}" if name == "cluster" else ""
            lines.append(
                f"| {r['n']:,} | {r['load']} | {name} | {s['seconds']:.1f} | {s['cpu_seconds']:.1f} | "
                f"{s['peak_gib']:.2f} | "
                f"{s['high_water_gib']:.2f} | {note} |"
            )
        if f"select {D.METHOD}" not in r["stages"]:
            continue
        topk = [
            sum(s[f] for k, s in r["stages"].items() if k != "select dpp+ucs")
            for f in ("seconds", "cpu_seconds")
        ]
        dpp = [
            sum(s[f] for k, s in r["stages"].items() if k != f"select {D.METHOD}")
            for f in ("seconds", "cpu_seconds")
        ]
        note = (
            f"with DPP+UCS instead: {dpp[0]:.1f} s wall, {dpp[1]:.1f} s CPU"
            if "select dpp+ucs" in r["stages"]
            else ""
        )
        lines.append(
            f"| {r['n']:,} | | **end to end, {D.METHOD}** | **{topk[0]:.1f}** | **{topk[1]:.1f}** | | | "
            f"{note} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--shard", type=int, default=D.ROW_SHARD_SIZE, help="rows embedded per call")
    ap.add_argument(
        "--select-max",
        type=int,
        default=None,
        help="skip the selection stages for pools larger than this (time them at smaller sizes)",
    )
    ap.add_argument(
        "--sharded",
        type=Path,
        default=None,
        help="keep the pool in .npy shards under this folder (the 10^7 path; see the module docstring)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    a = ap.parse_args()
    results = []
    for n in a.n:
        results.append(one_size_sharded(n, a) if a.sharded else one_size(n, a))
        print("\n".join(table(results[-1:])), flush=True)
    head = [
        f"- machine: {cpu_model()}, nproc {os.cpu_count()}; Python {sys.version.split()[0]}",
        f"- command: `PYTHONPATH=src python benchmarks/distributed/bench_default_pipeline.py --n "
        f"{' '.join(map(str, a.n))} --queries {a.queries} --budget {a.budget}"
        f"{' --sharded DIR' if a.sharded else ''}`",
        f"- sizes: n × {a.dim} float32 planted embeddings ({a.topics} topics), {a.queries} queries, budget "
        f"{a.budget}",
        "",
    ]
    text = "\n".join(head + table(results)) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

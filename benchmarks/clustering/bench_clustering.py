"""Speed and agreement of the latent clusterer: fast default path vs the scikit-learn reference.

Usage (results in benchmarks/clustering/RESULTS.md were produced with these)::

    PYTHONPATH=src python benchmarks/clustering/bench_clustering.py --suite 15k \
        --out .cache/bench/clustering/bench_15k.json
    PYTHONPATH=src python benchmarks/clustering/bench_clustering.py --suite banking77 \
        --out .cache/bench/clustering/bench_b77.json
    PYTHONPATH=src python benchmarks/clustering/bench_clustering.py --suite 1m \
        --out .cache/bench/clustering/bench_1m.json

Suites
- ``15k``: 15,000 × 3,584 float32 synthetic embeddings with planted clusters (the shape of a 7B model's
  hidden states on a CLINC150-sized pool). Both paths side by side in one process on the same input:
  the scikit-learn path with seeds 0 and 1, the fast path with seeds 0 and 1; per-stage times, ARI of
  fast vs scikit-learn and the seed-to-seed ARI of each path; re-cut times and exactness against a fresh
  scikit-learn DBSCAN.
- ``banking77``: the same comparison on real all-MiniLM-L6-v2 embeddings of the BANKING77 train pool
  (cached by ``embed_banking77.py``), plus the cluster spectrum and purity.
- ``1m``: 1,000,000 × 128 synthetic float32, fast path end to end (HNSW neighbours), time per stage,
  peak RSS, HNSW recall against exact search and eps-pair recall against exact radius search on a sample.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Dict

import numpy as np
from sklearn.metrics import adjusted_rand_score as ari

from ucs.clustering import LatentClusterer, cluster_report
from ucs.clustering.neighbors import knn_recall, pair_distances, unit_rows
from ucs.clustering.synthetic import make_planted_embeddings


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(E: np.ndarray, backend: str, seed: int, **kw: Any):
    t = time.perf_counter()
    c = LatentClusterer(backend=backend, random_state=seed, **kw).fit(E)
    total = time.perf_counter() - t
    return c, total


def compare(E: np.ndarray, name: str, y=None, **kw: Any) -> Dict[str, Any]:
    res: Dict[str, Any] = {"input": name, "shape": list(E.shape), "dtype": str(E.dtype)}
    fits = {}
    for backend in ("sklearn", "fast"):
        for seed in (0, 1):
            c, total = run(E, backend, seed, **kw)
            fits[backend, seed] = c
            res[f"{backend}_seed{seed}"] = {
                "total_s": total,
                "stages_s": c.timings_,
                "n_clusters": c.n_clusters_,
                "eps": c.eps_,
                "dict_steps": c.dict_n_steps_,
            }
            print(
                f"{name} {backend} seed {seed}: {total:.2f} s, {c.n_clusters_} clusters, stages {c.timings_}",
                flush=True,
            )
    # a second timing of the fast path (seed 0) to show run-to-run noise on a shared machine
    _, again = run(E, "fast", 0, **kw)
    res["fast_seed0_repeat_total_s"] = again
    res["ari"] = {
        "fast0_vs_sklearn0": ari(fits["fast", 0].labels_, fits["sklearn", 0].labels_),
        "fast0_vs_sklearn1": ari(fits["fast", 0].labels_, fits["sklearn", 1].labels_),
        "fast1_vs_sklearn0": ari(fits["fast", 1].labels_, fits["sklearn", 0].labels_),
        "sklearn0_vs_sklearn1": ari(fits["sklearn", 0].labels_, fits["sklearn", 1].labels_),
        "fast0_vs_fast1": ari(fits["fast", 0].labels_, fits["fast", 1].labels_),
    }
    if y is not None:
        res["ari_vs_gold"] = {f"{b}{s}": ari(c.labels_, y) for (b, s), c in fits.items()}
    sk = [res["sklearn_seed0"]["total_s"], res["sklearn_seed1"]["total_s"]]
    fa = [res["fast_seed0"]["total_s"], res["fast_seed1"]["total_s"], again]
    res["speedup_median"] = float(np.median(sk) / np.median(fa))
    # re-cut: time and exactness against a fresh scikit-learn DBSCAN at the same eps
    from sklearn.cluster import DBSCAN

    c = fits["fast", 0]
    U = unit_rows(c.codes_ if c.codes_ is not None else E)
    recut = {}
    for q in (0.01, 0.05, 0.1, 0.2, 0.5):
        c.recut(q)  # first call may extend the forest
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            lab = c.recut(q)
            ts.append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = DBSCAN(eps=c.eps_for(q), min_samples=1, metric="cosine").fit_predict(U)
        fresh = time.perf_counter() - t
        recut[str(q)] = {
            "recut_ms_median": 1000 * float(np.median(ts)),
            "fresh_dbscan_s": fresh,
            "ari_vs_fresh_dbscan": ari(lab, ref),
            "n_clusters": int(lab.max() + 1),
        }
        print(f"recut q={q}: {recut[str(q)]}", flush=True)
    res["recut"] = recut
    return res


def suite_15k(args) -> Dict[str, Any]:
    E, y = make_planted_embeddings(15000, 3584, n_clusters=400, latent_dim=96, random_state=0)
    return compare(E, "synthetic 15000x3584", y=y)


def suite_banking77(args) -> Dict[str, Any]:
    cache = Path(args.cache)
    E = np.load(cache / "banking77_train_minilm.npy")
    meta = json.loads((cache / "banking77_train_labels.json").read_text())
    y = np.asarray(meta["labels"])
    res = compare(E, "BANKING77 train, all-MiniLM-L6-v2", y=y)
    spectra = {}
    for q in (0.01, 0.1, 0.3, 0.5):
        c = LatentClusterer(random_state=0, dbscan_q=q).fit(E)
        r = cluster_report(c.labels_, y=y, texts=meta["texts"], top=8)
        spectra[str(q)] = r.to_dict()
        spectra[str(q)]["markdown"] = r.to_markdown()
    res["spectra"] = spectra
    return res


def suite_1m(args) -> Dict[str, Any]:
    t = time.perf_counter()
    E, y = make_planted_embeddings(
        1_000_000, 128, n_clusters=20000, latent_dim=64, zipf_a=1.05, random_state=0
    )
    gen = time.perf_counter() - t
    print(f"generated in {gen:.1f} s, rss {peak_rss_gib():.2f} GiB", flush=True)
    rss_before = peak_rss_gib()
    t = time.perf_counter()
    c = LatentClusterer(random_state=0).fit(E)
    total = time.perf_counter() - t
    print(f"fit {total:.1f} s {c.timings_}", flush=True)
    res: Dict[str, Any] = {
        "input": "synthetic 1,000,000 x 128 float32",
        "generate_s": gen,
        "total_s": total,
        "stages_s": c.timings_,
        "n_clusters": c.n_clusters_,
        "eps": c.eps_,
        "knn_exact": c.knn_exact_,
        "dict_steps": c.dict_n_steps_,
        "peak_rss_gib_after_generation": rss_before,
        "peak_rss_gib": peak_rss_gib(),
        "ari_vs_planted": ari(c.labels_, y),
    }
    g = c._graph
    res["dense_rows_completed"] = int((g.radius <= c.eps_ + 1e-5).sum())
    t = time.perf_counter()
    res["hnsw_recall_at_k"] = knn_recall(g.U, g.nbr_idx[:, : c.dbscan_k], sample=2000, random_state=0)
    # eps-pair recall: every exact eps-neighbour of a sampled row must share its cluster
    rng = np.random.default_rng(1)
    rows = rng.choice(E.shape[0], 2000, replace=False)
    pairs = same = 0
    for s in range(0, rows.size, 250):
        r = rows[s : s + 250]
        S = g.U[r] @ g.U.T
        rr, cc = np.nonzero(S >= 1.0 - c.eps_ - 1e-5)
        d = pair_distances(g.U, r[rr], cc)
        ok = (d <= c.eps_) & (r[rr] != cc)
        pairs += int(ok.sum())
        same += int((c.labels_[r[rr][ok]] == c.labels_[cc[ok]]).sum())
    res["eps_pairs_sampled"] = pairs
    res["eps_pair_recall"] = same / pairs if pairs else 1.0
    res["check_s"] = time.perf_counter() - t
    ts = []
    for q in (0.01, 0.02, 0.05):
        t0 = time.perf_counter()
        lab = c.recut(q)
        ts.append({"q": q, "first_recut_s": time.perf_counter() - t0, "n_clusters": int(lab.max() + 1)})
    res["recut"] = ts
    res["peak_rss_gib_end"] = peak_rss_gib()
    print(json.dumps(res, indent=1, default=float), flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", choices=["15k", "banking77", "1m"], required=True)
    ap.add_argument("--cache", default=".cache/bench/clustering")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    res = {"15k": suite_15k, "banking77": suite_banking77, "1m": suite_1m}[args.suite](args)
    res["machine"] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    res["peak_rss_gib_process"] = peak_rss_gib()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()

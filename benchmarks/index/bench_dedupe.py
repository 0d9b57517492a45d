"""Near-duplicate demonstrations in TopK selections, before and after ``SelectorIndex.select(..., dedupe=t)``.

Usage (benchmarks/index/RESULTS_dedupe.md was produced with this)::

    PYTHONPATH=src python benchmarks/index/bench_dedupe.py --data-dir ../shared/data \
        --json benchmarks/index/results_dedupe.json

For BANKING77 and CLINC150: the whole training split is the index (all-MiniLM-L6-v2 embeddings, method
``topk``, exact search), 500 seeded test utterances are the queries (embedded once, given as
``query_embeddings``), k = 8. Per setting (``dedupe`` off, 0.95, 0.90) it reports, accuracy-free (no language
model):

* ``share_dup``: the share of selections holding at least one pair with cosine >= 0.95 (retrieval space);
* ``pairs``: near-duplicate pairs (cosine >= 0.95) per selection, mean;
* ``changed``: demonstrations per selection that differ from the plain TopK selection, mean;
* ``sim_to_query``: the chosen demonstrations' mean cosine with the query (what suppression costs in
  relevance);
* ``n_returned``: the mean number returned (8 unless the pool ran out of distinct examples);
* ``ms_median`` / ``ms_p95``: time per ``select`` call (one query, 1 BLAS / OpenMP thread).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import os
import platform
import time
from typing import Any, Dict, List, Optional

import numpy as np

DUP = 0.95


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-300)


def near_pairs(unit_rows: np.ndarray, threshold: float = DUP) -> int:
    """Pairs of rows with cosine >= threshold."""
    g = unit_rows @ unit_rows.T
    return int(np.count_nonzero(np.triu(g >= threshold, 1)))


def run_dataset(name: str, args: argparse.Namespace, emb: Any) -> Dict[str, Any]:
    from threadpoolctl import threadpool_limits

    from ucs.data import load_dataset
    from ucs.index import SelectorIndex

    ds = load_dataset(name, args.data_dir)
    names = ds.label_names
    examples = [{"text": t, "label": names[int(y)]} for t, y in zip(ds.pool.texts, ds.pool.labels)]
    rng = np.random.default_rng(0)
    qi = rng.choice(len(ds.test), args.queries, replace=False).tolist()
    t0 = time.perf_counter()
    index = SelectorIndex(
        emb, "topk", input_keys=["text"], output_key="label", cache_dir=args.cache_dir, random_state=0
    ).fit(examples)
    fit_s = time.perf_counter() - t0
    Q = np.ascontiguousarray(emb.embed([ds.test.texts[i] for i in qi]), dtype=np.float32)
    U = _unit(index.embeddings_)
    out: Dict[str, Any] = {"pool": len(examples), "queries": len(qi), "k": args.k, "fit_s": round(fit_s, 1)}
    base: Optional[List[np.ndarray]] = None
    with threadpool_limits(1):
        for dedupe in (None, 0.95, 0.90):
            index.select(query_embeddings=Q[0], k=args.k, dedupe=dedupe)  # warm
            times, chosen = [], []
            for q in Q:
                t = time.perf_counter()
                s = index.select(query_embeddings=q, k=args.k, dedupe=dedupe, order="selected")
                times.append(time.perf_counter() - t)
                chosen.append(np.asarray(s.indices))
            if dedupe is None:
                base = chosen
            qu = _unit(Q)
            pairs = [near_pairs(U[c]) for c in chosen]
            out["off" if dedupe is None else f"dedupe={dedupe}"] = {
                "share_dup": float(np.mean([p > 0 for p in pairs])),
                "pairs": float(np.mean(pairs)),
                "changed": float(
                    np.mean([len(set(c.tolist()) - set(b.tolist())) for c, b in zip(chosen, base)])
                ),
                "sim_to_query": float(np.mean([float(np.mean(U[c] @ qu[r])) for r, c in enumerate(chosen)])),
                "n_returned": float(np.mean([c.size for c in chosen])),
                "ms_median": round(1e3 * float(np.median(times)), 3),
                "ms_p95": round(1e3 * float(np.percentile(times, 95)), 3),
            }
            print(name, dedupe, out["off" if dedupe is None else f"dedupe={dedupe}"], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    ap.add_argument("--datasets", nargs="+", default=["banking77", "clinc150"])
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--cache-dir", default=".cache/bench/index")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import faiss

    from ucs.embedding.sbert import load_retrieval_embedder

    faiss.omp_set_num_threads(1)
    emb = load_retrieval_embedder("all-minilm-l6-v2")
    res: Dict[str, Any] = {
        "machine": f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"Python {platform.python_version()}, faiss {faiss.__version__}",
        "embedder": "all-MiniLM-L6-v2",
        "method": "topk",
        "k": args.k,
    }
    if args.json and os.path.exists(args.json):  # other datasets' results of an earlier run are kept
        with open(args.json, encoding="utf-8") as f:
            res = {**json.load(f), **res}
    for name in args.datasets:
        res[name] = run_dataset(name, args, emb)
        if args.json:  # written after each dataset, so a stopped run keeps what it measured
            with open(args.json + ".tmp", "w", encoding="utf-8") as f:
                json.dump(res, f, indent=2)
                f.write("\n")
            os.replace(args.json + ".tmp", args.json)


if __name__ == "__main__":
    main()

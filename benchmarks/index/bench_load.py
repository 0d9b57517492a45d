"""How long ``SelectorIndex.load`` takes per method at 10,000 examples, and whether float16 Set-BSR tokens
select the same demonstrations as float32 ones.

Usage (benchmarks/index/RESULTS_load.md was produced with this)::

    PYTHONPATH=src python benchmarks/index/bench_load.py --data-dir ../shared/data \
        --out benchmarks/index/results_load.json --markdown benchmarks/index/RESULTS_load.md

Pool: BANKING77 train's first ``--n`` rows (``ucs.data.load_dataset("banking77", data_dir)``), embedded with
all-MiniLM-L6-v2 through the embedding cache. For each method an index is fitted and saved once, then loaded
``--repeat`` times with ``warmup=False`` (files hashed, arrays memory-mapped, the selector fitted on them):
the median and the largest time are reported. The embedding model's own load
(``load_retrieval_embedder(...).load()``) and MDL's scorer load (the embedded SmolLM2 backbone) are timed
apart: a service pays them once, whatever the index. Set-BSR check: the fitted index (float32 token vectors
from the model) against the loaded one (tokens stored as :data:`ucs.index.storage.TOKEN_DTYPE`) on
``--queries`` BANKING77 test queries, ``k`` 8.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

METHODS = [
    "topk",
    "topk+ucs",
    "dpp",
    "dpp+ucs",
    "mmr",
    "labelaware",
    "votek",
    "votek+ucs",
    "bsr",
    "mdl",
    "mdl+ucs",
]


def _timed(fn: Any) -> "tuple[Any, float]":
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _folder_mb(d: Path) -> float:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) / 2**20


def _bsr_check(idx: Any, root: Path, emb: Any, queries: List[str], k: int) -> Dict[str, Any]:
    from ucs.index import SelectorIndex
    from ucs.index.storage import TOKEN_DTYPE

    loaded = SelectorIndex.load(root, embedder=emb, warmup=False)
    a = idx.select(queries, k)
    b = loaded.select(queries, k)
    same_order = sum(x.indices.tolist() == y.indices.tolist() for x, y in zip(a, b))
    same_set = sum(sorted(x.indices.tolist()) == sorted(y.indices.tolist()) for x, y in zip(a, b))
    return {
        "stored_dtype": np.dtype(TOKEN_DTYPE).name,
        "queries": len(queries),
        "k": k,
        "identical_order": same_order,
        "identical_set": same_set,
        "token_rows": int(idx.selector_.pool_tokens_.rows.shape[0]),
    }


def run(args: argparse.Namespace) -> Dict[str, Any]:
    from ucs.data import load_dataset
    from ucs.embedding.sbert import load_retrieval_embedder
    from ucs.index import SelectorIndex

    ds = load_dataset("banking77", args.data_dir)
    names = ds.label_names
    n = min(args.n, len(ds.pool))
    examples = [{"text": ds.pool.texts[i], "label": names[int(ds.pool.labels[i])]} for i in range(n)]
    queries = list(ds.test.texts[: args.queries])
    emb, model_s = _timed(lambda: load_retrieval_embedder("all-minilm-l6-v2").load())
    out: Dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_start": os.getloadavg(),
        },
        "n_examples": n,
        "model_load_s": model_s,
        "methods": {},
    }
    lm = None
    work = Path(args.work or tempfile.mkdtemp(prefix="ucs-bench-load-"))
    for method in args.methods:
        if method.startswith("mdl") and lm is None:
            from ucs.models import load_backbone

            lm, out["mdl_scorer_load_s"] = _timed(load_backbone)
        idx, build_s = _timed(
            lambda: SelectorIndex(
                emb,
                method,
                input_keys=["text"],
                output_key="label",
                lm=lm if method.startswith("mdl") else None,
                cache_dir=args.cache_dir,
            ).fit(examples)
        )
        root = work / method.replace("+", "_")
        _, save_s = _timed(lambda: idx.save(root))
        times = [
            _timed(
                lambda: SelectorIndex.load(
                    root, embedder=emb, lm=lm if method.startswith("mdl") else None, warmup=False
                )
            )[1]
            for _ in range(args.repeat)
        ]
        row = {
            "build_s": build_s,
            "save_s": save_s,
            "load_median_s": statistics.median(times),
            "load_max_s": max(times),
            "folder_mb": _folder_mb(root / "versions" / "1"),
        }
        if method == "bsr":
            row["token_check"] = _bsr_check(idx, root, emb, queries, args.k)
        out["methods"][method] = row
        print(method, json.dumps(row), flush=True)
    out["load_avg_end"] = os.getloadavg()
    return out


def markdown(r: Dict[str, Any], command: str) -> str:
    m = r["machine"]
    lines = [
        "# Loading a saved SelectorIndex: seconds per method at 10,000 examples",
        "",
        f"Machine: {m['platform']}, Python {m['python']}, {m['affinity']} usable CPU cores (shared with "
        "other "
        f"work; 1-minute load average {m['load_avg_start'][0]:.1f} at the start). Page cache warm (the index "
        "was just written). Command:",
        "",
        "```",
        command,
        "```",
        "",
        f"Pool: BANKING77 train's first {r['n_examples']:,} rows, all-MiniLM-L6-v2 embeddings. `load` is "
        "`SelectorIndex.load(dir, embedder=emb, warmup=False)`: every file hashed (SHA-256), arrays "
        "memory-mapped, "
        "the selector fitted on them; no model call.",
        "",
        f"**The embedding model's own load** (`load_retrieval_embedder('all-minilm-l6-v2').load()`): "
        f"{r['model_load_s']:.2f} s, paid once per process whatever the index."
        + (
            f" MDL's scorer (the embedded SmolLM2 backbone, `load_backbone()`): {r['mdl_scorer_load_s']:.2f} "
            "s."
            if "mdl_scorer_load_s" in r
            else ""
        ),
        "",
        "| method | load median (s) | load max (s) | fit (s) | save (s) | version folder (MiB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for method, row in r["methods"].items():
        lines.append(
            f"| {method} | {row['load_median_s']:.3f} | {row['load_max_s']:.3f} | {row['build_s']:.1f} | "
            f"{row['save_s']:.2f} | {row['folder_mb']:.1f} |"
        )
    tc = r["methods"].get("bsr", {}).get("token_check")
    if tc:
        lines += [
            "",
            f"**Set-BSR token vectors stored as {tc['stored_dtype']}** ({tc['token_rows']:,} token rows): "
            f"on {tc['queries']} BANKING77 test queries (k = {tc['k']}) the loaded index chose the same "
            "demonstrations in the same order as the fitted one (float32 vectors straight from the model) "
            "for "
            f"{tc['identical_order']} of {tc['queries']} queries, the same set for {tc['identical_set']}.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default="benchmarks/index/results_load.json")
    ap.add_argument("--markdown", default="benchmarks/index/RESULTS_load.md")
    args = ap.parse_args()
    r = run(args)
    Path(args.out).write_text(json.dumps(r, indent=2) + "\n")
    command = "PYTHONPATH=src python benchmarks/index/bench_load.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}"
        for k, v in vars(args).items()
        if v is not None and k not in ("work",)
    )
    Path(args.markdown).write_text(markdown(r, command))


if __name__ == "__main__":
    main()

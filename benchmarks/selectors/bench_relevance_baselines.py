"""What the relevance-keeping selectors cost per query, beside TopK and DPP, on one synthetic pool.

Usage::

    PYTHONPATH=src python benchmarks/selectors/bench_relevance_baselines.py [--n-pool 15000] [--dim 384]
        [--n-queries 500] [--budget 8] [--repeats 5]
        [--out benchmarks/selectors/RESULTS_relevance_baselines.md]

The pool is :func:`bench_selectors.synthetic`'s (150 intents, CLINC150-sized). Every selector is fitted once
and its ``select`` timed over ``--repeats`` alternating rounds (process CPU time, fastest round; BLAS limited
to ``--threads`` threads), so machine load hits all alike. None of them calls a model.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_selectors import synthetic  # noqa: E402

from ucs.selectors import BSRSelector, DPPSelector, LabelAwareSelector, MMRSelector, TopKSelector  # noqa: E402
from ucs.testing.doubles import DummyTokenEmbedder  # noqa: E402
from ucs.utils.cpu import machine_signature  # noqa: E402
from ucs.utils.io import atomic_write_text  # noqa: E402

CASES = {
    "TopK": lambda: TopKSelector(),
    "MMR (λ 0.5, fetch_k 20: LangChain's defaults)": lambda: MMRSelector(),
    "MMR (λ 0.5, fetch_k 50)": lambda: MMRSelector(fetch_k=50),
    "label-aware, at most 2 per label (50 candidates)": lambda: LabelAwareSelector(max_per_label=2),
    "label-aware, round robin (50 candidates)": lambda: LabelAwareSelector(mode="round_robin"),
    "DPP (50 candidates)": lambda: DPPSelector(candidate_num=50),
    "BSR (whole pool)": lambda: BSRSelector(token_embedder=DummyTokenEmbedder(dim=384), coverage=False),
    "Set-BSR (whole pool, the authors' setting)": lambda: BSRSelector(
        token_embedder=DummyTokenEmbedder(dim=384)
    ),
    "Set-BSR (50 nearest candidates)": lambda: BSRSelector(
        token_embedder=DummyTokenEmbedder(dim=384), candidate_num=50
    ),
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-pool", type=int, default=15000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--n-queries", type=int, default=500)
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS_relevance_baselines.md"))
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    pool, queries, _, labels, texts, qtexts = synthetic(args.n_pool, args.dim, args.n_queries)
    qtexts = [f"utterance of intent {i % 150} query {i}" for i in range(args.n_queries)]
    fitted = {name: make().fit(pool, labels=labels, texts=texts) for name, make in CASES.items()}
    best = {name: np.inf for name in CASES}
    with threadpool_limits(args.threads):
        for _ in range(args.repeats):
            for name, sel in fitted.items():
                t0 = time.process_time()
                sel.select(queries, args.budget, query_texts=qtexts)
                best[name] = min(best[name], time.process_time() - t0)
    base = best["TopK"]
    lines = [
        "# Relevance-keeping selectors: cost per query",
        "",
        "Command: `PYTHONPATH=src python benchmarks/selectors/bench_relevance_baselines.py --n-pool "
        f"{args.n_pool} "
        f"--dim {args.dim} --n-queries {args.n_queries} --budget {args.budget} --repeats {args.repeats}`",
        "",
        f"Machine: {machine_signature()}; CPython {platform.python_version()}, numpy {np.__version__}; BLAS "
        f"limited to {args.threads} thread(s); {time.strftime('%Y-%m-%d')}. Synthetic pool {args.n_pool} × "
        f"{args.dim} "
        f"(150 intents), {args.n_queries} queries selected in one call, B = {args.budget}. Process CPU time, "
        "fastest "
        f"of {args.repeats} alternating rounds. Model calls: none for any of them. BSR's token vectors "
        "(384-d, "
        "about 6 per text) come from a weight-free double, so its rows count the selection alone; a real "
        "token "
        "embedder adds one forward pass per query text (as TopK's sentence embedding does).",
        "",
        "| selector | ms per query | × TopK |",
        "|---|---:|---:|",
    ]
    for name in CASES:
        lines.append(f"| {name} | {1000 * best[name] / args.n_queries:.3f} | {best[name] / base:.2f} |")
    lines += [
        "",
        "All but BSR share one batched similarity product (TopK's cost); MMR adds a c × c Gram matrix per "
        "query, label-aware similarity a pass over its candidates' labels. BSR compares every query token "
        "with "
        "every token of its candidates: over the whole pool that is the cost to watch.",
    ]
    atomic_write_text(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

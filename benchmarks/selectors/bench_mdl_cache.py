"""MDL and MDL+UCS with the real backbone: what the shared score store saves.

Usage::

    PYTHONPATH=src python benchmarks/selectors/bench_mdl_cache.py [--dataset banking77]
        [--data-dir ../shared/data] [--queries 10] [--dtype bfloat16] [--threads 1]
        [--out benchmarks/selectors/RESULTS_mdl_cache.md]

One :class:`~ucs.pipeline.Pipeline` (the ``cpu`` preset, SmolLM2 on the transformers engine; pool embeddings
and clusters from ``--cache-dir``) selects for the first ``--queries`` test queries of run seed 42: MDL+UCS
alone with an empty score cache (it scores its own candidate subsets), then MDL with another empty one, then
MDL+UCS after MDL (the cache answers every subset MDL scored). It checks that MDL+UCS selects the
same demonstrations with and without the store, and writes wall times, LM calls and the speed-up.
"""

from __future__ import annotations

import argparse
import time
import numpy as np

from ucs.evaluation.runner import platform_info
from ucs.lm.cache import CachedScorer
from ucs.pipeline import Pipeline, PipelineConfig
from ucs.utils.io import atomic_write_text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="banking77")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--cache-dir", default="runs/cache", help="embedding and cluster cache (its score store is not used)"
    )
    ap.add_argument("--out", default="benchmarks/selectors/RESULTS_mdl_cache.md")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    cfg = PipelineConfig.resolve(
        "cpu",
        overrides={
            "dataset": args.dataset,
            "data_dir": args.data_dir,
            "engine": "transformers",
            "dtype": args.dtype,
        },
    )
    pipe = Pipeline(cfg, cache_dir=args.cache_dir, progress=False)
    queries = list(cfg.protocol().apply(pipe.dataset).test.texts[: args.queries])
    pipe.cluster_ids(42)
    pipe.retrieval_queries(queries)

    def fresh_scorer() -> CachedScorer:
        # an empty, in-memory score cache: nothing scored by an earlier measurement is reused
        for k in [k for k in pipe._memo if k[0] in ("selection", "mdl_scorer")]:
            del pipe._memo[k]
        scorer = CachedScorer(pipe.backbone)
        pipe._memo[("mdl_scorer",)] = scorer
        return scorer

    scorer = fresh_scorer()
    t0 = time.perf_counter()
    sel_alone = pipe.select("mdl+ucs", 42, queries)
    t_alone, calls_alone = time.perf_counter() - t0, scorer.misses
    scorer = fresh_scorer()
    t0 = time.perf_counter()
    pipe.select("mdl", 42, queries)
    t_mdl, calls_mdl = time.perf_counter() - t0, scorer.misses
    t0 = time.perf_counter()
    sel_after = pipe.select("mdl+ucs", 42, queries)
    t_after, calls_after = time.perf_counter() - t0, scorer.misses - calls_mdl
    same = bool(np.array_equal(sel_alone, sel_after))
    rows = [
        ("MDL+UCS alone", t_alone, calls_alone),
        ("MDL", t_mdl, calls_mdl),
        ("MDL+UCS after MDL (score store)", t_after, calls_after),
    ]
    plat = platform_info()
    lines = [
        "# MDL+UCS after MDL: the shared score store",
        "",
        f"`PYTHONPATH=src python benchmarks/selectors/bench_mdl_cache.py --dataset {args.dataset} --queries "
        f"{args.queries} --dtype {args.dtype} --threads {args.threads}`",
        "",
        f"SmolLM2-135M-Instruct (transformers, {args.dtype}, {args.threads} torch thread(s)), `cpu` preset: "
        f"{cfg.selector['params']['mdl']['select_time']} candidate subsets of {cfg.budget} per query, all "
        f"{args.dataset} labels scored per "
        f"subset; {args.queries} test queries, run seed 42. Machine: {plat['cpu']} ({plat['cpu_count']} "
        "CPUs).",
        "",
        "| selection | wall s | LM scorings |",
        "|---|---|---|",
        *[f"| {n} | {t:.2f} | {c} |" for n, t, c in rows],
        "",
        f"MDL+UCS after MDL: **{t_alone / max(t_after, 1e-9):.0f}× faster** than alone; same demonstrations "
        "as "
        f"alone: **{same}**.",
        "",
    ]
    atomic_write_text(args.out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

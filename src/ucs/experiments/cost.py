"""What an evaluation will cost before it runs: prompts, model calls, and minutes measured on this machine.

:func:`evaluation_cost` counts what ``ucs evaluate`` would ask the model (every ICL prompt of every method,
run and query — an upper bound, since a deterministic mode answers a repeated prompt once — plus MDL's subset
scorings) and times two real model calls on prompts built like the evaluation's (``budget`` demonstrations
drawn from the pool, every label scored in likelihood mode, a short generation otherwise). Minutes = calls ×
measured seconds per call; the pool embedding and selection are not in it. Cost: loading the model and two
calls.
"""

from __future__ import annotations

import random
import time
from typing import Any, Dict, List, Optional, Sequence

from ucs.evaluation.prompts import format_for_task
from ucs.pipeline import Pipeline
from ucs.selectors.method import MethodSpec

__all__ = ["evaluation_cost", "cost_lines"]


def _probe_seconds(backbone: Any, dataset: Any, budget: int, mode: str, n: int = 2) -> float:
    """Mean seconds of one model call on ``n`` prompts built from the pool (after one untimed warm-up
    call)."""
    fmt = format_for_task(dataset.task)
    names = list(dataset.label_names)
    rng = random.Random(0)
    pool = dataset.pool

    def one(q: int) -> None:
        demos = [
            (pool.texts[i], names[int(pool.labels[i])])
            for i in rng.sample(range(len(pool)), min(budget, len(pool)))
        ]
        prompt = fmt.render(demos, dataset.test.texts[q % len(dataset.test)], names)
        if mode == "likelihood":
            backbone.score_continuations(prompt, [fmt.continuation(y) for y in names])
        else:
            backbone.generate([prompt], max_new_tokens=16, temperature=0.0)

    one(0)
    t0 = time.perf_counter()
    for q in range(1, n + 1):
        one(q)
    return (time.perf_counter() - t0) / n


def evaluation_cost(
    config: Any,
    *,
    limit: Optional[int] = None,
    cache_dir: Any = None,
    methods: Optional[Sequence[MethodSpec]] = None,
) -> Dict[str, Any]:
    """``{"queries", "methods", "runs", "icl_prompts", "mdl_scorings", "seconds_per_call", "minutes"}`` for
    ``config`` (a :class:`~ucs.pipeline.PipelineConfig`) and its ``methods`` (default
    ``config.method_specs``), with two model calls timed here."""
    pipe = Pipeline(config, cache_dir=cache_dir, progress=False)
    ds = pipe.dataset
    n_test = len(config.protocol().apply(ds).test)
    nq = n_test if limit is None else min(n_test, int(limit))
    specs = list(methods or config.method_specs)
    prompts = len(specs) * config.n_runs * nq
    n_mdl = min(1, sum(m.needs_scorer for m in specs))
    mdl = (
        0
        if config.budget == 0
        else n_mdl * config.n_runs * nq * config.selector["params"]["mdl"]["select_time"]
    )
    seconds = _probe_seconds(pipe.backbone, ds, config.budget, config.mode)
    return {
        "queries": nq,
        "methods": [m.name for m in specs],
        "runs": config.n_runs,
        "labels": len(ds.label_names),
        "icl_prompts": prompts,
        "mdl_scorings": mdl,
        "seconds_per_call": seconds,
        "minutes": (prompts + mdl) * seconds / 60.0,
        "mode": config.mode,
        "pool": len(ds.pool),
    }


def cost_lines(cost: Dict[str, Any]) -> List[str]:
    """The estimate as the command prints it."""
    what = (
        f"{cost['labels']} labels scored in each"
        if cost["mode"] == "likelihood"
        else "a short generation each"
    )
    lines = [
        f"cost: {cost['queries']} queries × {len(cost['methods'])} methods × {cost['runs']} run(s) = "
        f"{cost['icl_prompts']} ICL prompts ({what}; at most: a repeated prompt is answered once)"
    ]
    if cost["mdl_scorings"]:
        lines.append(f"      + {cost['mdl_scorings']} MDL subset scorings (MDL+UCS reuses MDL's)")
    lines.append(
        f"      {cost['seconds_per_call']:.2f} s per model call, measured here on 2 prompts → about "
        f"{cost['minutes']:.1f} minutes of model time (pool embedding and selection not included; "
        "answers already stored cost nothing)"
    )
    return lines

"""Every cell on every query, with no race and no split: the table a results page shows.

:func:`~ucs.experiments.compare.compare` chooses (a race on validation queries, a confirmation on test
queries); a results page measures instead: each cell answers all ``Q`` held-out queries, and each row carries
its Δ against the reference cell on the same queries with a paired bootstrap interval (and, for answers scored
with a metric, the copy baseline: the answer of the chosen demonstration nearest the query, with no model).
The answers go to ``out/records.jsonl`` as they come, keyed by (cell, query): a second call continues where
the first stopped, and a folder holding another table's answers (other examples, queries, cells, predictor,
embedder or metric) is refused. Cost: one embedding and clustering of the pool, then ``C × Q`` predictor
calls, side by side when the predictor has ``many``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ucs.experiments.compare import _Answerer, _check_inputs, _embedder, _rows, check_folder, comparison_key
from ucs.experiments.compare_grid import Cell, parse_cell
from ucs.experiments.generate import answer_scoring
from ucs.experiments.predictors import as_predictor
from ucs.utils.io import atomic_write_json

__all__ = ["grid_table"]


def grid_table(
    pool: Sequence[Dict[str, Any]],
    queries: Sequence[Dict[str, Any]],
    predictor: Any,
    cells: Sequence[str],
    *,
    out: "str | Path",
    text_key: str = "text",
    label_key: str = "label",
    metric: Any = None,
    embedder: Any = None,
    seed: int = 0,
    cache_dir: "str | Path | None" = None,
    limit: Optional[int] = None,
) -> List[Dict[str, Any]]:
    """The rows of ``cells`` (``selector:k:order``; the first is the reference of every Δ) on every query.

    Parameters
    ----------
    pool, queries : sequences of dict
        The examples the selectors choose from, and the held-out queries (``text_key`` and ``label_key``).
    predictor, metric, embedder, seed, cache_dir
        As for :func:`~ucs.experiments.compare.compare` (``metric``: a name scores free-form answers in [0, 1]
        beside the copy baseline).
    out : path
        The folder of ``records.jsonl`` and ``table.json`` (resumable).
    limit : int, optional
        Answer only the first ``limit`` queries for now (query by query, every cell on each); a later call
        with a larger limit continues in the same folder. The rows cover the queries every cell has answered.

    Returns
    -------
    list of dict
        One row per cell, best first: ``accuracy`` (the mean score) and its interval, ``delta`` / ``delta_ci``
        against the reference, and the copy baseline's fields (scored answers) or the no-LM vote's (labels).
    """
    _check_inputs(pool, text_key, label_key, "pool")
    _check_inputs(queries, text_key, label_key, "queries")
    grid: List[Cell] = [parse_cell(c) for c in cells]
    if not grid:
        raise ValueError("cells is empty; give at least the reference cell, such as topk:8:selected")
    labels = sorted({str(e[label_key]) for e in list(pool) + list(queries)})
    scoring = answer_scoring(metric, label_key)
    predict = as_predictor(
        predictor, text_key=text_key, label_key=label_key, metric=None if scoring is not None else metric
    )
    emb = _embedder(embedder)
    key = {
        **comparison_key(
            pool,
            queries,
            k=sorted({c.k for c in grid}),
            seed=seed,
            predictor=predictor,
            embedder=emb,
            text_key=text_key,
            label_key=label_key,
            metric=None if scoring is None else scoring.name,
            selectors=sorted({c.selector for c in grid}),
            orders=sorted({c.order for c in grid}),
            reference=grid[0].id,
            test_share=0.5,
        ),
        "cells": [c.id for c in grid],
        "table": True,
    }
    folder = Path(out)
    records = check_folder(folder, key)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / "compare.json", {"key": key})
    label_ids = {y: i for i, y in enumerate(labels)}
    answer = _Answerer(
        list(pool),
        list(queries),
        emb,
        predict,
        folder,
        text_key,
        label_key,
        label_ids,
        seed,
        cache_dir,
        scoring,
    )
    answer.part = {q: "table" for q in range(len(queries))}
    known = {(r["method"], int(r["query"])) for r in records}
    n = len(queries) if limit is None else max(0, min(int(limit), len(queries)))
    try:
        answer.many([(c, q) for q in range(n) for c in grid if (c.id, q) not in known])
    finally:
        answer.close()
    every = records + answer.records
    have: Dict[str, set] = {c.id: set() for c in grid}
    for r in every:
        have.setdefault(r["method"], set()).add(int(r["query"]))
    common = set.intersection(*(have[c.id] for c in grid))
    rows = _rows(
        [r for r in every if int(r["query"]) in common],
        grid,
        grid[0],
        {},
        np.asarray([label_ids[str(e[label_key])] for e in pool]),
        scoring is not None,
    )
    atomic_write_json(
        folder / "table.json",
        {"key": key, "rows": rows, "n_queries": len(common), "planned_queries": len(queries)},
    )
    return json.loads(json.dumps(rows))

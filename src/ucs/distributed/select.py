"""Demonstration selection for many queries: query batches mapped over workers holding the fitted selector.

Each worker holds one copy of a fitted selector — the pool index, the cluster ids and the
estimator's coefficients — and answers contiguous batches of queries; the per-batch
:class:`~ucs.selectors.Selection` objects are concatenated in query order. Selectors whose
output for a query does not depend on which other queries share its call (TopK, DPP, VoteK,
shared-draw Random, and their UCS variants) give the demonstrations of one local
``selector.select(queries, budget)`` call; their scores agree to floating-point rounding (a
threaded BLAS may round a query's similarity row differently when fewer queries share the
product, which could flip only an exact tie). Selectors that draw random numbers for all queries of
a call from one generator (MDL's random candidate subsets, per-query Random) are batch-dependent;
:func:`select_queries` warns for them.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ucs import defaults as D
from ucs.distributed.executor import Executor
from ucs.distributed.executors import get_executor
from ucs.distributed.sharding import check_shard_size, shard_ranges

__all__ = ["select_queries", "concat_selections", "is_batch_invariant"]


def is_batch_invariant(selector: Any) -> bool:
    """Whether a selector's output for a query is independent of the other queries in its call.

    A selector may declare it with a ``batch_invariant`` attribute; otherwise MDL and
    ``RandomSelector(per_query=True)`` (random draws shared across a call's queries) are not,
    everything else is assumed to be.
    """
    declared = getattr(selector, "batch_invariant", None)
    if declared is not None:
        return bool(declared)
    name = type(selector).__name__
    if name == "MDLSelector":
        return False
    if name == "RandomSelector" and getattr(selector, "per_query", False):
        return False
    return True


def concat_selections(parts: Sequence[Any]) -> Any:
    """Concatenate the selections of consecutive query batches into one, in order.

    Query-dependent: per-query arrays (indices, scores, diagnostics, ``extras``) are stacked
    along the first axis and ``n_queries`` added up. Query-independent: the shared row must be
    the same in every part (it is kept once) and ``n_queries`` is added up.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("no selections to concatenate")
    first = parts[0]
    n_queries = int(sum(p.n_queries for p in parts))
    if len({p.query_dependent for p in parts}) != 1 or len({p.method for p in parts}) != 1:
        raise ValueError("cannot concatenate selections of different selectors")
    if not first.query_dependent:
        for p in parts[1:]:
            if not np.array_equal(p.indices, first.indices):
                raise ValueError("a query-independent selector returned different rows for different batches")
        return dataclasses.replace(first, n_queries=n_queries)
    changes: Dict[str, Any] = {"n_queries": n_queries}
    for f in dataclasses.fields(first):
        v = getattr(first, f.name)
        if isinstance(v, np.ndarray):
            changes[f.name] = np.concatenate([getattr(p, f.name) for p in parts], axis=0)
        elif isinstance(v, dict) and f.name == "extras":
            changes[f.name] = {k: np.concatenate([np.asarray(p.extras[k]) for p in parts], axis=0) for k in v}
    return dataclasses.replace(first, **changes)


def _batch_ranges(n: int, batch_size: int) -> np.ndarray:
    """Contiguous query batches; a trailing one-query batch joins the previous one (see batch_size)."""
    if n == 0:
        return np.array([[0, 0]], dtype=np.int64)
    ranges = shard_ranges(n, batch_size)
    if len(ranges) > 1 and ranges[-1, 1] - ranges[-1, 0] == 1:
        ranges = np.concatenate([ranges[:-2], [[ranges[-2, 0], ranges[-1, 1]]]])
    return ranges


class _SelectWorker:
    """Per-worker state: a fitted selector (built once) answering query batches."""

    def __init__(
        self, selector: Any, budget: int, exclude_query_texts: bool = False, order: str = D.ORDER
    ) -> None:
        self.selector = selector() if not hasattr(selector, "select") else selector
        self.budget = budget
        self.exclude_query_texts = exclude_query_texts
        self.order = order

    def __call__(self, item: Dict[str, Any]) -> Any:
        return self.selector.select(
            item["queries"],
            self.budget,
            query_texts=item["texts"],
            exclude_query_texts=self.exclude_query_texts,
            order=self.order,
        )


def select_queries(
    selector: Union[Any, Callable[[], Any]],
    queries: Optional[Any],
    executor: Union[None, str, Executor] = None,
    batch_size: int = 1024,
    *,
    budget: int = 10,
    query_texts: Optional[Sequence[str]] = None,
    exclude_query_texts: bool = False,
    order: str = D.ORDER,
    num_actors: Optional[int] = None,
    num_cpus: float = 1,
) -> Any:
    """Select ``budget`` demonstrations for every query, batches of queries in parallel.

    Parameters
    ----------
    selector : fitted Selector, or a zero-argument picklable callable returning one
        A fitted selector is shipped once to each worker; a factory (for example a
        ``functools.partial`` that loads the pool and fits) is called once per worker instead.
    queries : array-like of shape (Q, d), or None
        Query embeddings (the retrieval embedder's). ``None`` is for query-independent selectors
        (VoteK, Random): their one shared row is computed on the driver.
    executor : {"local", "ray"} or Executor, optional
    batch_size : int, default=1024
        Queries per task, at least 2 (a trailing batch of one query joins the previous batch), so
        every call takes BLAS's matrix-matrix path, as the single local call does.
    budget : int, default=10
    query_texts : sequence of str, optional
        Needed by selectors that score text (MDL).
    exclude_query_texts : bool, default=False
        Never offer a query a pool item with its own text (``Selector.select``'s, for evaluations).
    order : {"selected", "similar_first", "similar_last", "vote_last"}
        The demonstrations' order in each prompt (``Selector.select``'s).
    num_actors : int, optional
        Workers holding a selector copy (default one per CPU).

    Returns
    -------
    Selection
        The same object type and content as ``selector.select(queries, budget, query_texts=...)``
        for batch-invariant selectors (see :func:`is_batch_invariant`).

    Notes
    -----
    Time: the selector's own per-query cost divided across workers. Memory: one fitted selector
    per worker (the pool matrix, ``O(N d)``) plus one batch of queries.
    """
    if queries is None:
        # query-independent selectors: one shared row, nothing to split
        sel = selector if hasattr(selector, "select") else selector()
        return sel.select(None, budget, query_texts=None if query_texts is None else list(query_texts))
    batch_size = check_shard_size(batch_size, "batch_size")
    if batch_size < 2:
        raise ValueError(
            "batch_size must be >= 2: BLAS computes a one-row product by a matrix-vector path that rounds "
            "differently from the matrix-matrix path of a larger call, which would change scores in the last "
            "bit"
        )
    q = np.asarray(queries)
    if q.ndim != 2:
        raise ValueError(f"queries must be a 2-D array of shape (Q, d); got shape {q.shape}")
    if query_texts is not None and len(query_texts) != q.shape[0]:
        raise ValueError(f"query_texts has {len(query_texts)} entries but queries has {q.shape[0]} rows")
    if hasattr(selector, "select"):
        if not is_batch_invariant(selector):
            warnings.warn(
                f"{type(selector).__name__} draws random numbers for all queries of one call, so its output "
                "depends "
                "on batch_size; set batch_size >= the number of queries to reproduce the single-call result",
                UserWarning,
                stacklevel=2,
            )
    elif not callable(selector):
        raise ValueError("selector must be a fitted selector or a zero-argument callable that returns one")
    ex = get_executor(executor)
    ranges = _batch_ranges(q.shape[0], batch_size)
    items: List[Dict[str, Any]] = [
        {"queries": q[a:b], "texts": None if query_texts is None else list(query_texts[a:b])}
        for a, b in ranges
    ]
    parts = ex.map_actors(
        functools.partial(_SelectWorker, selector, budget, exclude_query_texts, order),
        items,
        num_actors=num_actors,
        num_cpus=num_cpus,
    )
    return concat_selections(parts)

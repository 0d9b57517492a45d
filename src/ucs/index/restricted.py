"""Selections under a metadata filter (``where=``) and with near-duplicate suppression (``dedupe=``).

A filter fits a copy of the index's selector on the matching rows only (cached per filter), so every method —
query-dependent or not, set-based or not — chooses among those rows with its own rule; query-dependent methods
find their candidates with the index's search restricted to the rows
(:class:`ucs.index.search.RestrictedSearch`: a masked exact scan, or a filtered faiss HNSW search).
Near-duplicates are dropped from the method's own choice order (each item whose cosine with an earlier kept
one is ``>= dedupe``) and the next choices take their place.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.embedding.threads import limit_threads
from ucs.index.filters import Where, check_dedupe, describe, greedy_distinct, matching_rows, normalize_where
from ucs.index.search import RestrictedSearch
from ucs.index.selection import IndexSelection
from ucs.selectors.base import check_budget
from ucs.selectors.factory import make_selector

__all__ = ["select_restricted"]

#: Filters whose fitted selectors an index keeps (least recently used dropped first).
CACHE_SIZE = 16


def select_restricted(
    index: Any,
    texts: List[str],
    qe: Optional[np.ndarray],
    k: int,
    single: bool,
    *,
    where: Any,
    dedupe: Any,
    example_keys: Optional[Sequence[str]],
    order: Optional[str],
) -> Any:
    """:meth:`SelectorIndex.select` with ``where`` and / or ``dedupe`` (see that method)."""
    cond = normalize_where(where, index.examples_)
    threshold = check_dedupe(dedupe)
    k = check_budget(k)
    rows, sub = (None, index.selector_) if cond is None else _subset(index, cond)
    n_queries = max(len(texts), 0 if qe is None else qe.shape[0], 1)
    if sub is None or not sub.query_dependent:
        key = ("shared", cond, threshold, k, None if example_keys is None else tuple(example_keys))
        out = _cache(index).get(key)
        if out is None:
            picks = [] if sub is None else _choose(index, sub, rows, None, [""], k, "selected", threshold)
            out = _wrap(index, rows, picks[0] if picks else None, None, example_keys, cond, threshold, k)
            _remember(index, key, out)
        return out if single else [out] * n_queries
    if qe is None:
        if not texts:
            raise ValueError(f"method={index.method_!r} is query-dependent; pass queries or query_embeddings")
        qe = index._embed_query_texts(texts)
    if index.selector_.needs_token_embedder and not texts:
        raise ValueError(
            f"method {index.base_!r} covers the query's tokens: pass the queries' texts, not only embeddings"
        )
    if order is None:
        order = getattr(index, "order", None) or D.application_order(sub.labels_ is not None)
    with limit_threads(index._serving_threads() if qe.shape[0] == 1 else None):
        picks = _choose(index, sub, rows, qe, texts, k, order, threshold)
    out = [
        _wrap(index, rows, p, texts[r] if texts else None, example_keys, cond, threshold, k)
        for r, p in enumerate(picks)
    ]
    return out[0] if single else out


# ------------------------------------------------------------------ the subset's selector
def _cache(index: Any) -> "OrderedDict[Any, Any]":
    """The index's cache of filtered selectors and shared selections; emptied whenever the selector is
    refit."""
    held = index.__dict__.get("_restricted_")
    if held is None or held[0] is not index.selector_:
        held = index._restricted_ = (index.selector_, OrderedDict())
    return held[1]


def _remember(index: Any, key: Any, value: Any) -> None:
    cache = _cache(index)
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def _subset(index: Any, cond: Where) -> Tuple[np.ndarray, Any]:
    """The rows matching ``cond`` and a selector fitted on them (``None`` when nothing matches)."""
    cache = _cache(index)
    hit = cache.get(("subset", cond))
    if hit is None:
        rows = matching_rows(cond, index.examples_)
        hit = (rows, _fit_subset(index, rows) if rows.size else None)
        _remember(index, ("subset", cond), hit)
    else:
        cache.move_to_end(("subset", cond))
    return hit


def _fit_subset(index: Any, rows: np.ndarray) -> Any:
    """The index's selector (same method and parameters) fitted on ``rows``: their embeddings, labels, texts
    and clusters (renumbered), with a coverage prior over those clusters for ``+ucs`` methods. O(M·d) plus the
    method's fit on M rows (VoteK: its vote graph)."""
    params = dict(index.selector_params or {})
    params.setdefault("random_state", int(index.random_state))
    if index.selector_.needs_scorer:
        params["scorer"] = index.lm
        params.setdefault("label_set", list(index.selector_.label_set_))  # the whole index's labels
    if index.selector_.needs_token_embedder:
        params["token_embedder"] = _PoolTokens(index.get_embedder(), index.selector_.pool_tokens_, rows)
    index.selector_.params_for_pool(params, int(rows.size))  # e.g. VoteK: k below the subset's size
    _, cids = np.unique(index.cluster_ids_[rows], return_inverse=True)
    cids = cids.astype(np.int64)
    prior = index.coverage_prior_.clone(cluster_ids=cids) if index.ucs_ else None  # the index's settings
    labels = None if index.output_key_ is None else [str(index.examples_[i][index.output_key_]) for i in rows]
    texts = [index.selector_.texts_[i] for i in rows] if index.selector_.texts_ is not None else None
    sel = make_selector(index.spec_, prior=prior, **params)
    sel.fit(index.embeddings_[rows], labels=labels, texts=texts, cluster_ids=cids)
    if sel.query_dependent:
        sel.set_candidate_search(RestrictedSearch(index.search_, rows))
    return sel


class _PoolTokens:
    """Set-BSR's token embedder for a subset: the subset's pool tokens come from the index's fitted selector
    (no model pass); queries go to the embedder."""

    def __init__(self, embedder: Any, packed: Any, rows: np.ndarray) -> None:
        self.embedder = embedder
        self.vectors = [packed.rows[packed.offsets[i] : packed.offsets[i + 1]] for i in rows.tolist()]
        self.first = True

    def embed_tokens(self, texts: Sequence[str]) -> "tuple[list, list]":
        if self.first:  # the subset selector's fit asks for its pool's tokens once
            self.first = False
            return list(self.vectors), [None] * len(self.vectors)
        return self.embedder.embed_tokens(texts)


# ------------------------------------------------------------------ choosing
def _choose(
    index: Any,
    sub: Any,
    rows: Optional[np.ndarray],
    qe: Optional[np.ndarray],
    texts: List[str],
    k: int,
    order: str,
    threshold: Optional[float],
) -> List[Tuple[np.ndarray, np.ndarray]]:
    """Per query, the chosen positions in ``sub``'s pool and their scores, near-duplicates dropped."""
    n = sub.n_pool_
    b = min(k, n)
    query_texts = (texts or None) if sub.needs_query_texts or qe is None else None
    if threshold is None:
        res = sub.select(qe, b, query_texts=query_texts, order=order)
        return [(res.indices[r], res.scores[r]) for r in range(res.indices.shape[0])]
    width = min(n, 2 * b)
    while True:
        res = sub.select(qe, width, query_texts=query_texts, order="selected")
        picks = []
        for r in range(res.indices.shape[0]):
            local = res.indices[r]
            glob = local if rows is None else rows[local]
            keep = greedy_distinct(_unit64(index.embeddings_[glob]), threshold, b)
            picks.append((local[keep], res.scores[r][keep]))
        if width == n or all(p[0].size == b for p in picks):
            break
        width = min(n, 2 * width)
    if order == "selected" or qe is None or not sub.query_dependent:
        return picks
    unit = _unit64(qe)
    return [
        tuple(a[0] for a in sub._reorder(i[None], s[None], unit[r : r + 1], order))  # type: ignore[misc]
        for r, (i, s) in enumerate(picks)
    ]


def _unit64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)


def _wrap(
    index: Any,
    rows: Optional[np.ndarray],
    pick: Optional[Tuple[np.ndarray, np.ndarray]],
    text: Optional[str],
    example_keys: Optional[Sequence[str]],
    cond: Optional[Where],
    threshold: Optional[float],
    k: int,
) -> Any:
    """The :class:`IndexSelection` of one query: positions mapped back to the index, Φ under the index's
    prior."""
    local, scores = pick if pick is not None else (np.empty(0, np.int64), np.empty(0))
    idx = np.ascontiguousarray(local if rows is None else rows[local], dtype=np.int64)
    phi = float(index.coverage_prior_.batched().phi_subsets(idx[None, :])[0]) if idx.size else 0.0
    cids = index.cluster_ids_[idx]
    if example_keys is None:
        exs = [dict(index.examples_[i]) for i in idx]
    else:
        exs = [{f: index.examples_[i][f] for f in example_keys if f in index.examples_[i]} for i in idx]
    n_matched = None if cond is None else int(rows.size)
    return IndexSelection(
        examples=exs,
        indices=idx,
        scores=np.ascontiguousarray(scores, dtype=np.float64),
        cluster_ids=cids,
        phi=phi,
        clusters_covered=int(np.unique(cids).size),
        method=index.method_,
        query=text,
        n_matched=n_matched,
        note=_note(idx.size, k, n_matched, cond, threshold, index.n_examples_),
    )


def _note(
    got: int,
    k: int,
    n_matched: Optional[int],
    cond: Optional[Where],
    threshold: Optional[float],
    n_examples: int,
) -> Optional[str]:
    """Why fewer than ``k`` came back, or ``None``."""
    if got >= k:
        return None
    if n_matched is not None and n_matched < k:
        return f"the filter {describe(cond)} matched {n_matched} example(s), fewer than k={k}; {got} returned"
    if threshold is not None and got < min(k, n_examples if n_matched is None else n_matched):
        pool = "filtered pool" if n_matched is not None else "index"
        return (
            f"near-duplicates (cosine >= {threshold}) were dropped and the {pool} holds no other distinct "
            f"example to replace them; {got} of k={k} returned"
        )
    return None

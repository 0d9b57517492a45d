"""A generic battery of checks every selector must pass (in the spirit of scikit-learn's
``check_estimator``): valid output, determinism, ``λ = 0`` ≡ base selector, invariance to
relabelling cluster ids, pickling and config round-trips, and clear errors on bad input.

Use :func:`check_selector` in tests::

    check_selector(DPPSelector(prior=UCSPrior(ids)), pool=E, queries=Q)

Each check raises ``AssertionError`` with a message naming the selector and the check.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ucs.selectors.base import Selector
from ucs.selectors.prior import UCSPrior
from ucs.selectors.selection import Selection
from ucs.testing._battery import run_battery

__all__ = ["check_selector", "assert_same_selection", "CHECKS"]


class _Ctx:
    def __init__(
        self,
        selector: Selector,
        pool: np.ndarray,
        queries: np.ndarray,
        cluster_ids: Optional[np.ndarray],
        labels: Optional[Sequence[Any]],
        texts: Optional[Sequence[str]],
        query_texts: Optional[Sequence[str]],
        budget: int,
        seed: int,
    ) -> None:
        self.selector = selector
        self.pool = pool
        self.queries = queries
        self.cluster_ids = cluster_ids
        self.labels = labels
        self.texts = texts
        self.query_texts = query_texts
        self.budget = budget
        self.seed = seed

    def fit(self, sel: Selector, pool: Optional[np.ndarray] = None, **kw: Any) -> Selector:
        kw.setdefault("cluster_ids", self.cluster_ids)
        return sel.fit(self.pool if pool is None else pool, labels=self.labels, texts=self.texts, **kw)

    def select(
        self, sel: Selector, budget: Optional[int] = None, queries: Optional[np.ndarray] = None
    ) -> Selection:
        return sel.select(
            self.queries if queries is None else queries,
            self.budget if budget is None else budget,
            query_texts=self.query_texts,
        )

    @property
    def name(self) -> str:
        return type(self.selector).__name__


def assert_same_selection(a: Selection, b: Selection, what: str, scores: bool = True) -> None:
    """Indices identical (same order); scores identical (``nan`` equal to ``nan``) when ``scores``."""
    if a.indices.shape != b.indices.shape or not np.array_equal(a.indices, b.indices):
        diff = np.argwhere(a.indices != b.indices) if a.indices.shape == b.indices.shape else "shape"
        raise AssertionError(
            f"{what}: indices differ (first differences: {diff[:3] if not isinstance(diff, str) else diff})"
        )
    if scores and not np.array_equal(a.scores, b.scores, equal_nan=True):
        raise AssertionError(f"{what}: scores differ")


def _prior_of(sel: Selector) -> Optional[UCSPrior]:
    return sel.get_params().get("prior") if "prior" in sel.get_params() else None


# ---------------------------------------------------------------------- checks
def check_output_valid(ctx: _Ctx) -> None:
    n = ctx.pool.shape[0]
    q = ctx.queries.shape[0]
    for budget in sorted({0, 1, ctx.budget, n, n + 3}):
        sel = ctx.fit(ctx.selector.clone())
        s = ctx.select(sel, budget)
        b = min(budget, n)
        rows = q if sel.query_dependent else 1
        assert s.indices.shape == (rows, b), (
            f"{ctx.name}: budget {budget} gave shape {s.indices.shape}, want {(rows, b)}"
        )
        assert s.indices.dtype == np.int64, f"{ctx.name}: indices dtype {s.indices.dtype}"
        assert s.scores.shape == s.indices.shape, f"{ctx.name}: scores shape {s.scores.shape}"
        if b:
            assert s.indices.min() >= 0 and s.indices.max() < n, f"{ctx.name}: index out of range"
            srt = np.sort(s.indices, axis=1)
            assert np.all(np.diff(srt, axis=1) > 0), f"{ctx.name}: repeated index in a row (budget {budget})"
        assert s.n_queries == q, f"{ctx.name}: n_queries {s.n_queries} != {q}"
        assert s.per_query().shape == (q, b)
        if ctx.cluster_ids is not None:
            assert s.clusters_covered is not None and s.clusters_covered.shape == (rows,)


def check_deterministic(ctx: _Ctx) -> None:
    a = ctx.select(ctx.fit(ctx.selector.clone()))
    fitted = ctx.fit(ctx.selector.clone())
    b = ctx.select(fitted)
    c = ctx.select(fitted)
    assert_same_selection(a, b, f"{ctx.name}: two fits with the same parameters")
    assert_same_selection(b, c, f"{ctx.name}: two select calls on one fitted selector")


def check_lambda_zero(ctx: _Ctx) -> None:
    prior = _prior_of(ctx.selector)
    if prior is None:
        return
    base = ctx.select(ctx.fit(ctx.selector.clone(prior=None)))
    zero = ctx.select(ctx.fit(ctx.selector.clone(prior=prior.clone(lam=0.0))))
    assert_same_selection(base, zero, f"{ctx.name}: lam=0 must equal the base selector", scores=False)


def check_relabel_invariance(ctx: _Ctx) -> None:
    prior = _prior_of(ctx.selector)
    ids = ctx.cluster_ids if prior is None else prior.cluster_ids_array()
    if ids is None:
        return
    rng = np.random.default_rng(ctx.seed)
    uniq = np.unique(ids)
    new_names = rng.permutation(uniq.size) * 7 + 3  # a bijection onto other ids
    relabelled = new_names[np.searchsorted(uniq, ids)]
    sel = (
        ctx.selector.clone()
        if prior is None
        else ctx.selector.clone(prior=prior.clone(cluster_ids=relabelled))
    )
    a = ctx.select(ctx.fit(ctx.selector.clone()))
    b = ctx.select(ctx.fit(sel, cluster_ids=None if ctx.cluster_ids is None else relabelled))
    # Indices must match exactly. Scores may differ in the last bit: corpus weights are normalised by a
    # mean over clusters, and the summation order follows the cluster ids.
    assert_same_selection(a, b, f"{ctx.name}: relabelling cluster ids", scores=False)
    assert np.allclose(a.scores, b.scores, rtol=1e-12, atol=1e-12, equal_nan=True), (
        f"{ctx.name}: scores changed"
    )
    if a.phi is not None:
        assert np.array_equal(a.phi, b.phi), f"{ctx.name}: Φ changed under relabelling"
    if a.clusters_covered is not None:
        assert np.array_equal(a.clusters_covered, b.clusters_covered)


def check_pickle_roundtrip(ctx: _Ctx) -> None:
    fitted = ctx.fit(ctx.selector.clone())
    a = ctx.select(fitted)
    b = ctx.select(pickle.loads(pickle.dumps(fitted)))
    assert_same_selection(a, b, f"{ctx.name}: pickled fitted selector")
    unfitted = pickle.loads(pickle.dumps(ctx.selector.clone()))
    assert_same_selection(a, ctx.select(ctx.fit(unfitted)), f"{ctx.name}: pickled unfitted selector")


def check_config_roundtrip(ctx: _Ctx) -> None:
    cfg = ctx.selector.config()
    assert cfg["selector"] == type(ctx.selector).__name__
    import json

    json.dumps(cfg)  # must be JSON-serialisable
    objects = {
        k: v
        for k, v in ctx.selector.get_params().items()
        if isinstance(cfg["params"].get(k), str) and str(cfg["params"][k]).startswith("<")
    }
    rebuilt = Selector.from_config(json.loads(json.dumps(cfg)), **objects)
    assert type(rebuilt) is type(ctx.selector)
    a = ctx.select(ctx.fit(ctx.selector.clone()))
    b = ctx.select(ctx.fit(rebuilt))
    assert_same_selection(a, b, f"{ctx.name}: selector rebuilt from its JSON config")
    s = a
    back = Selection.from_dict(json.loads(s.to_json()))
    assert np.array_equal(back.indices, s.indices) and np.array_equal(back.scores, s.scores, equal_nan=True)


def _raises(fn: Callable[[], Any], what: str) -> None:
    try:
        fn()
    except ValueError:
        return
    raise AssertionError(f"{what}: expected ValueError")


def check_bad_input(ctx: _Ctx) -> None:
    name = ctx.name
    d = ctx.pool.shape[1]
    _raises(lambda: ctx.select(ctx.selector.clone()), f"{name}: select before fit")
    fitted = ctx.fit(ctx.selector.clone())
    _raises(lambda: ctx.select(fitted, -1), f"{name}: negative budget")
    _raises(lambda: ctx.select(fitted, 2.5), f"{name}: non-integer budget")  # type: ignore[arg-type]
    _raises(lambda: fitted.select(np.zeros((2, d + 1)), 1), f"{name}: queries of the wrong dimension")
    bad_q = ctx.queries.copy()
    bad_q[0, 0] = np.nan
    _raises(lambda: fitted.select(bad_q, 1, query_texts=ctx.query_texts), f"{name}: NaN query")
    bad_p = ctx.pool.copy()
    bad_p[-1, -1] = np.nan
    _raises(lambda: ctx.fit(ctx.selector.clone(), pool=bad_p), f"{name}: NaN pool embedding")
    _raises(lambda: ctx.selector.clone().fit(np.zeros((0, d))), f"{name}: empty pool")
    if ctx.cluster_ids is not None:
        _raises(
            lambda: ctx.fit(ctx.selector.clone(), cluster_ids=ctx.cluster_ids[:-1]),
            f"{name}: cluster ids of the wrong length",
        )
    prior = _prior_of(ctx.selector)
    if prior is not None:
        short = prior.clone(cluster_ids=prior.cluster_ids_array()[:-1])
        _raises(
            lambda: ctx.fit(ctx.selector.clone(prior=short)), f"{name}: prior cluster ids of the wrong length"
        )
        _raises(lambda: ctx.fit(ctx.selector.clone(prior=prior.clone(lam=-0.1))), f"{name}: lam < 0")
        _raises(lambda: ctx.fit(ctx.selector.clone(prior=prior.clone(design="nope"))), f"{name}: bad design")
    _raises(lambda: ctx.selector.clone().set_params(not_a_parameter=1), f"{name}: unknown parameter")


CHECKS: Dict[str, Callable[[_Ctx], None]] = {
    "output_valid": check_output_valid,
    "deterministic": check_deterministic,
    "lambda_zero": check_lambda_zero,
    "relabel_invariance": check_relabel_invariance,
    "pickle_roundtrip": check_pickle_roundtrip,
    "config_roundtrip": check_config_roundtrip,
    "bad_input": check_bad_input,
}


def check_selector(
    selector: Selector,
    *,
    pool: np.ndarray,
    queries: np.ndarray,
    cluster_ids: Optional[np.ndarray] = None,
    labels: Optional[Sequence[Any]] = None,
    texts: Optional[Sequence[str]] = None,
    query_texts: Optional[Sequence[str]] = None,
    budget: int = 5,
    seed: int = 0,
    checks: Optional[Sequence[str]] = None,
) -> List[str]:
    """Run the generic battery on an (unfitted) selector; returns the names of the checks run.

    Parameters
    ----------
    selector : Selector
        Configured, unfitted; a prior (if any) must hold cluster ids of the pool.
    pool, queries : ndarray (N, d), (Q, d)
    cluster_ids : ndarray (N,), optional
        Passed to ``fit`` for diagnostics (defaults to the prior's ids for the relabelling check).
    labels, texts, query_texts : optional
        For selectors that build prompts (MDL).
    budget : int
        The main budget; the validity check also tries 0, 1, N and N + 3.
    checks : sequence of str, optional
        Subset of :data:`CHECKS` to run (all by default).
    """
    ctx = _Ctx(
        selector,
        np.asarray(pool, dtype=np.float64),
        np.asarray(queries, dtype=np.float64),
        None if cluster_ids is None else np.asarray(cluster_ids),
        labels,
        texts,
        query_texts,
        budget,
        seed,
    )
    return run_battery(CHECKS, ctx, checks)


def selector_check_pairs(cases: Sequence[str], checks: Optional[Sequence[str]] = None) -> List[tuple]:
    """Every ``(case, check)`` pair of named selector cases and the battery's checks (all by default), in a
    stable order: parametrise a test over it so that each pair passes or fails on its own and a check added
    to :data:`CHECKS` becomes a test of every case."""
    names = list(CHECKS) if checks is None else list(checks)
    return [(case, check) for case in sorted(cases) for check in names]

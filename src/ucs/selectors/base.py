"""The selector contract shared by every demonstration selector."""

from __future__ import annotations

import functools
import inspect
import numbers
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.estimators.spectrum import validate_cluster_ids
from ucs.selectors._retrieval import DEFAULT_BLOCK, l2_normalize, topk_cosine
from ucs.selectors.prior import UCSPrior
from ucs.selectors.selection import Selection
from ucs.utils.arrays import take_rows

__all__ = ["Selector", "check_embeddings", "check_budget", "check_random_state", "vote_last_order"]


def check_embeddings(x: Any, name: str, dim: Optional[int] = None, allow_empty: bool = False) -> np.ndarray:
    """Validate an embedding matrix: 2-D, numeric, finite, and of width ``dim`` when given."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of shape (n, d)") from exc
    if arr.ndim == 1 and dim is not None and arr.shape[0] == dim:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {arr.shape}")
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} is empty; give at least one row")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(
            f"{name} has dimension {arr.shape[1]} but the pool embeddings have dimension {dim}; "
            "embed queries with the same model as the pool"
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.all(np.isfinite(arr), axis=1)))
        raise ValueError(f"{name} contains NaN or inf in {bad} row(s); fix or drop those embeddings")
    return arr


def check_budget(budget: Any) -> int:
    """Validate a demonstration budget (a non-negative integer; ``0`` is zero-shot)."""
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise ValueError(f"budget must be a non-negative integer; got {budget!r}")
    if budget < 0:
        raise ValueError(f"budget must be >= 0 (0 means zero-shot); got {budget}")
    return int(budget)


def check_random_state(random_state: Any) -> int:
    """Validate a seed: a non-negative integer (global RNG state is never used)."""
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise ValueError(f"random_state must be a non-negative integer seed; got {random_state!r}")
    return int(random_state)


def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def _check_positive_float(value: Any, name: str, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    if value < 0 or (strict and value == 0):
        raise ValueError(f"{name} must be {'> 0' if strict else '>= 0'}; got {value!r}")
    return float(value)


_REGISTRY: Dict[str, type] = {}

#: Orders of a prompt's demonstrations that :meth:`Selector.select` can return.
ORDERS = ("selected", "similar_first", "similar_last", "vote_last")
#: The orders that put the most relevant demonstration last, next to the query: a prompt cut to fit a context
#: drops demonstrations from their start (``ucs.evaluation.prompts.PromptBuilder.build``).
LAST_ORDERS = ("similar_last", "vote_last")


def vote_last_order(labels: Sequence[Any], sims: np.ndarray) -> np.ndarray:
    """The ``vote_last`` order of one prompt's demonstrations: grouped by label, the groups in ascending order
    of their vote — how many demonstrations carry the label, ties by their summed similarity to the query — so
    the label the demonstrations vote for most comes last, next to the query; inside a group, most similar
    last.

    Why: small models copy the label distribution they are shown and favour the labels nearest the query (the
    majority-label and recency biases of Zhao et al., 2021, "Calibrate Before Use"); on our own pages the
    majority label of TopK's neighbours is right more often than the model reading them, and the most similar
    demonstration last helps (docs/results/beyond_topk.md). This order puts the neighbours' own vote where the
    model looks last.

    Parameters
    ----------
    labels : sequence of length B
        Each demonstration's label (hashable).
    sims : ndarray (B,)
        Each demonstration's cosine similarity to the query.

    Returns
    -------
    ndarray (B,) of int64
        The permutation (positions into ``labels``). O(B log B).
    """
    sims = np.asarray(sims, dtype=np.float64)
    groups: Dict[Any, int] = {}
    gid = np.array([groups.setdefault(lab, len(groups)) for lab in labels], dtype=np.int64)
    count = np.bincount(gid, minlength=len(groups))[gid]
    total = np.bincount(gid, weights=sims, minlength=len(groups))[gid]
    # lexsort: the last key is the primary one; the group id keeps a group contiguous when two tie exactly
    return np.lexsort((np.arange(len(gid)), sims, gid, total, count)).astype(np.int64)


@functools.lru_cache(maxsize=None)
def _init_param_names(cls: type) -> Tuple[str, ...]:
    """Constructor parameter names of ``cls``, computed once per class: ``inspect.signature`` costs tens
    of microseconds and every :meth:`Selector.select` records the parameters."""
    return tuple(p for p in inspect.signature(cls.__init__).parameters if p != "self")


def registered_selectors() -> Tuple[type, ...]:
    """Every :class:`Selector` subclass defined so far, in definition order (the selector registry)."""
    return tuple(_REGISTRY.values())


class Selector:
    """Base class: ``fit(pool) -> self``, then ``select(queries, budget) -> Selection``.

    Subclasses implement ``_validate_params``, optionally ``_fit`` (pool-level precomputation) and
    ``_select(queries, budget, query_texts)`` returning ``(indices (R, B), scores (R, B), extras)``.
    ``__init__`` only stores parameters (scikit-learn convention); fitted attributes end in ``_``.

    Fitted attributes
    -----------------
    pool_ : ndarray (N, d)      ℓ2-normalised pool embeddings (cosine similarity = dot product).
    n_pool_ : int
    cluster_ids_ : ndarray (N,) or None   cluster ids used for diagnostics (the prior's when it has them).
    labels_, texts_ : list or None        pool labels / texts when given.
    """

    #: Whether selections differ per query.
    query_dependent: ClassVar[bool] = True
    #: Short name used in :class:`Selection` and exports.
    name: ClassVar[str] = "selector"
    #: Whether the selector scores prompts with a language model, given as its ``scorer`` parameter (MDL):
    #: callers pass their model, and a selection costs model calls.
    needs_scorer: ClassVar[bool] = False
    #: Whether :meth:`select` reads the queries' texts, not only their embeddings (MDL, Set-BSR).
    needs_query_texts: ClassVar[bool] = False
    #: Whether the selector embeds texts' tokens with its ``token_embedder`` parameter (Set-BSR): callers pass
    #: their embedder, and a fit runs it over the pool.
    needs_token_embedder: ClassVar[bool] = False
    #: Whether :meth:`fit` needs the pool's ``cluster_ids`` (or a prior that brings them) (Cover).
    needs_cluster_ids: ClassVar[bool] = False
    #: The name under which a saved index stores the selector's costly fit state (:meth:`fit_with_state`),
    #: ``None`` when it has none.
    stored_state: ClassVar[Optional[str]] = None

    # ------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls) -> List[str]:
        return list(_init_param_names(cls))

    def get_params(self) -> Dict[str, Any]:
        """Constructor parameters (scikit-learn style)."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> "Selector":
        names = set(self._param_names())
        for k, v in params.items():
            if k not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {k!r}; valid: {sorted(names)}")
            setattr(self, k, v)
        return self

    def clone(self, **overrides: Any) -> "Selector":
        """An unfitted copy with the same parameters (``overrides`` replace some)."""
        params = self.get_params()
        params.update(overrides)
        return type(self)(**params)

    def __repr__(self) -> str:
        parts = []
        for k, v in self.get_params().items():
            parts.append(
                f"{k}={v!r}" if not callable(v) or isinstance(v, type) else f"{k}={type(v).__name__}"
            )
        return f"{type(self).__name__}({', '.join(parts)})"

    def config(self, summary: bool = False) -> Dict[str, Any]:
        """JSON-friendly description (parameters that are objects are given by their ``config()`` or type).

        With ``summary=True`` a prior's cluster ids are replaced by their count and hash (what a
        :class:`Selection` records); the full form rebuilds the selector with :meth:`from_config`.
        """
        out: Dict[str, Any] = {}
        for k, v in self.get_params().items():
            if summary and hasattr(v, "summary") and callable(v.summary):
                out[k] = v.summary()
            elif hasattr(v, "config") and callable(v.config):
                out[k] = v.config()
            elif v is None or isinstance(v, (bool, int, float, str)):
                out[k] = v
            elif isinstance(v, (list, tuple)) and all(isinstance(e, (bool, int, float, str)) for e in v):
                out[k] = list(v)
            else:
                out[k] = f"<{type(v).__name__}>"
        return {"selector": type(self).__name__, "params": out}

    @staticmethod
    def from_config(config: Dict[str, Any], **objects: Any) -> "Selector":
        """Rebuild an unfitted selector from :meth:`config`; ``objects`` supply parameters that are not
        JSON (a scorer LM, callables), e.g. ``Selector.from_config(cfg, scorer=lm)``."""
        name = config.get("selector")
        if name not in _REGISTRY:
            raise ValueError(f"unknown selector {name!r}; known: {sorted(_REGISTRY)}")
        params = dict(config.get("params", {}))
        params.update(objects)
        for k, v in list(params.items()):
            if isinstance(v, str) and v.startswith("<") and v.endswith(">") and k not in objects:
                raise ValueError(f"parameter {k!r} is an object ({v}); pass it to from_config({k}=...)")
        if isinstance(params.get("prior"), dict):
            params["prior"] = UCSPrior.build(None, params["prior"])
        return _REGISTRY[name](**params)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    def _validate_params(self) -> None:  # pragma: no cover - overridden
        pass

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str = "") -> None:
        """Check parameter values before any fit, with the class's own checks (those :meth:`fit` runs).

        ``params`` is a subset of the constructor's parameters; the objects a caller supplies at fit (a
        scorer, a token embedder) may be left out. ``where`` prefixes the parameter's name in the message
        (``"selector.params.mmr"`` → ``selector.params.mmr.lambda_mult must be …``), so that a
        configuration reports the key the user wrote. O(len(params)).
        """
        try:
            cls(**params)._validate_params()
        except ValueError as exc:
            if not where:
                raise
            raise ValueError(f"{where}.{exc}") from None

    # ------------------------------------------------------------------- fit
    def fit(
        self,
        pool_embeddings: Any,
        *,
        labels: Optional[Sequence[Any]] = None,
        texts: Optional[Sequence[str]] = None,
        cluster_ids: Optional[Any] = None,
    ) -> "Selector":
        """Fit on the pool.

        Parameters
        ----------
        pool_embeddings : array-like of shape (N, d)
            Retrieval embeddings of the pool (any scale; they are ℓ2-normalised here). Must be finite.
        labels, texts : sequence of length N, optional
            Pool labels and input texts (MDL needs both; exports use the texts).
        cluster_ids : array-like of shape (N,), optional
            Cluster ids for diagnostics (``clusters_covered``); the UCS prior brings its own.

        Returns
        -------
        self
        """
        self._validate_params()
        x = check_embeddings(pool_embeddings, "pool_embeddings")
        n = x.shape[0]
        for nm, seq in (("labels", labels), ("texts", texts)):
            if seq is not None and len(seq) != n:
                raise ValueError(f"{nm} has {len(seq)} entries but pool_embeddings has {n} rows")
        prior = getattr(self, "prior", None)
        cids = _pool_cluster_ids(cluster_ids, prior, n, "pool_embeddings has")
        return self._set_pool(l2_normalize(x), cids, labels, texts)

    def fit_with_state(self, pool_embeddings: Any, state: Any, **kwargs: Any) -> "Selector":
        """:meth:`fit` reusing the costly fit state a saved index stored under :attr:`stored_state` (Set-BSR's
        pool tokens, VoteK's vote graph). ``kwargs`` are :meth:`fit`'s. Classes without such state refuse."""
        raise ValueError(f"{type(self).__name__} stores no fit state; call fit()")

    def params_for_pool(self, params: Dict[str, Any], n_pool: int) -> Dict[str, Any]:
        """Constructor ``params`` (a dict, updated in place and returned) for a copy of this selector fitted
        on a pool of ``n_pool`` rows, e.g. a subset of this one's pool. Default: unchanged."""
        return params

    def _set_pool(
        self,
        pool: np.ndarray,
        cids: Optional[np.ndarray],
        labels: Optional[Sequence[Any]],
        texts: Optional[Sequence[str]],
    ) -> "Selector":
        """The fitted state from the checked, normalised pool: the attributes, then the class's
        :meth:`_fit`."""
        self.pool_ = pool
        self.n_pool_ = pool.shape[0]
        self.dim_ = pool.shape[1]
        self.cluster_ids_ = cids
        self.labels_ = None if labels is None else list(labels)
        self.texts_ = None if texts is None else list(texts)
        self.candidate_search_ = None
        self._fit()
        return self

    def extended(
        self,
        new_embeddings: Any,
        *,
        labels: Optional[Sequence[Any]] = None,
        texts: Optional[Sequence[str]] = None,
        cluster_ids: Optional[Any] = None,
        prior: Optional[UCSPrior] = None,
    ) -> "Selector":
        """A new selector fitted on this one's pool with ``new_embeddings`` appended; this one is unchanged.

        It equals ``clone(prior=prior).fit(pool + new, labels=..., texts=..., cluster_ids=...)`` bit for bit
        (rows are normalised one by one, so the old rows are reused as they are), at the cost of the new rows
        and one copy of the pool, plus the class's own pool-level :meth:`_fit` (nothing for TopK and DPP;
        VoteK rebuilds its vote graph, Set-BSR re-encodes the pool's tokens).

        Parameters
        ----------
        new_embeddings : array-like (M, d)
        labels, texts : sequence of length M, optional
            Required when the selector was fitted with labels / texts (and refused when it was not).
        cluster_ids : array-like (N + M,), optional
            The grown pool's cluster ids (all of them: adding rows may change none of the old ones, but the
            caller's clustering says so); default, with ``prior``: the prior's.
        prior : UCSPrior, optional
            The prior over the grown pool, for a selector that has one (its cluster ids cover N + M items).

        Returns
        -------
        Selector
            A fitted selector without a candidate search (set one with :meth:`set_candidate_search`).
        """
        self._check_fitted()
        x = check_embeddings(new_embeddings, "new_embeddings", dim=self.dim_, allow_empty=True)
        m, n = x.shape[0], self.n_pool_ + x.shape[0]
        grown: Dict[str, Any] = {}
        for nm, seq, old in (("labels", labels, self.labels_), ("texts", texts, self.texts_)):
            if (seq is None) != (old is None):
                raise ValueError(f"{nm} must be given exactly when the selector was fitted with {nm}")
            if seq is not None:
                if len(seq) != m:
                    raise ValueError(f"{nm} has {len(seq)} entries but new_embeddings has {m} rows")
                grown[nm] = list(old) + list(seq)
        if prior is not None and getattr(self, "prior", None) is None:
            raise ValueError(
                f"{type(self).__name__} was fitted without a prior; fit a new one to add a prior"
            )
        if prior is None and getattr(self, "prior", None) is not None:
            raise ValueError(
                "the selector has a coverage prior: pass the grown pool's prior= (its cluster ids "
                "cover the new rows too)"
            )
        other = self.clone(**({"prior": prior} if prior is not None else {}))
        other._validate_params()
        if cluster_ids is None and prior is None and self.cluster_ids_ is not None:
            raise ValueError("the selector was fitted with cluster_ids: pass the grown pool's cluster_ids")
        cids = _pool_cluster_ids(cluster_ids, prior, n, "the grown pool has")
        pool = np.concatenate([self.pool_, l2_normalize(x)]) if m else self.pool_
        return other._set_pool(pool, cids, grown.get("labels"), grown.get("texts"))

    def set_candidate_search(self, search: Optional[Any]) -> "Selector":
        """Replace the exact float64 candidate retrieval of the fitted selector (``None`` restores it).

        ``search(queries (Q, d), c) -> (indices (Q, c) int64, similarities (Q, c) float64)`` must return the
        ``c`` pool rows most cosine-similar to each ℓ2-normalised query, most similar first, e.g. a float32
        or approximate nearest-neighbour index over ``pool_`` (:class:`ucs.index.SelectorIndex` uses it).
        ``fit`` resets it.
        """
        self._check_fitted()
        if search is not None and not callable(search):
            raise ValueError(
                f"search must be callable (queries, c) -> (indices, sims) or None; got {search!r}"
            )
        self.candidate_search_ = search
        return self

    def _retrieve(self, queries: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
        """The ``c`` candidates of every query (see :meth:`set_candidate_search`), most similar first.

        While :meth:`select` runs with ``exclude_query_texts``, a pool item whose text is the query's own is
        never among a query's candidates (it moves behind the others, which only matters when the pool has no
        other candidate to offer): ``c + m`` are retrieved, ``m`` the most copies of one query's text in the
        pool.
        """
        exclude = getattr(self, "_exclude", None)
        if exclude is not None and len(exclude) != queries.shape[0]:
            exclude = None
        m = 0 if exclude is None else max(len(e) for e in exclude)
        wide = min(self.n_pool_, c + m)
        search = getattr(self, "candidate_search_", None)
        if search is not None:
            idx, sims = search(queries, wide)
        else:
            idx, sims = topk_cosine(queries, self.pool_, wide, block=getattr(self, "block", DEFAULT_BLOCK))
        if m == 0:
            return idx, sims
        idx, sims = np.array(idx, dtype=np.int64), np.array(sims, dtype=np.float64)
        for r, own in enumerate(exclude):
            bad = np.isin(idx[r], own) if len(own) else None
            if bad is not None and bad.any():
                order = np.argsort(bad, kind="stable")
                idx[r], sims[r] = idx[r, order], sims[r, order]
        # a pool smaller than c + m: fewer candidates, unless that would leave fewer than the budget
        width = c if wide - m < max(getattr(self, "_budget", 0), 1) else min(c, wide - m)
        return np.ascontiguousarray(idx[:, :width]), np.ascontiguousarray(sims[:, :width])

    def _reorder(
        self, idx: np.ndarray, scores: np.ndarray, queries: np.ndarray, order: str
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Each row of ``idx`` (and its ``scores``) reordered by cosine similarity to its query
        (``similar_*``) or grouped by label (``vote_last``, :func:`vote_last_order`). O(Q·B·d)."""
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}; got {order!r}")
        if not self.query_dependent or idx.shape[1] == 0:
            return idx, scores
        sims = np.einsum("qbd,qd->qb", self.pool_[idx], queries)
        if order == "vote_last":
            if self.labels_ is None:
                raise ValueError(
                    "order='vote_last' groups demonstrations by label: fit the selector with "
                    "labels=... (SelectorIndex and the integrations pass the examples' output key)"
                )
            perm = np.stack([vote_last_order([self.labels_[i] for i in row], s) for row, s in zip(idx, sims)])
        else:
            perm = np.argsort(-sims if order == "similar_first" else sims, axis=1, kind="stable")
        return take_rows(idx, perm), take_rows(scores, perm)

    def _choose_among_candidates(
        self,
        queries: np.ndarray,
        budget: int,
        c: int,
        choose: Callable[[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]],
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        """A ``_select`` for re-ranking selectors: retrieve ``min(N, max(c, budget))`` candidates of every
        query, then ``choose(candidates (c,), similarities (c,)) -> (positions (budget,), scores (budget,))``
        per query."""
        q = queries.shape[0]
        idx_out = np.empty((q, budget), dtype=np.int64)
        score_out = np.empty((q, budget))
        if budget == 0 or q == 0:
            return idx_out, score_out, {}
        cand, sims = self._retrieve(queries, min(self.n_pool_, max(int(c), budget)))
        for r in range(q):
            pos, scores = choose(cand[r], sims[r])
            idx_out[r], score_out[r] = cand[r, pos], scores
        return idx_out, score_out, {}

    def _query_duplicates(self, query_texts: Optional[Sequence[str]]) -> Optional[List[np.ndarray]]:
        """Per query, the pool indices whose text equals the query's (``None`` when no query has one).
        O(N + Q)."""
        texts = getattr(self, "texts_", None)
        if query_texts is None or not texts:
            return None
        where: Dict[str, List[int]] = {}
        for i, t in enumerate(texts):
            where.setdefault(t, []).append(i)
        out = [np.asarray(where.get(q, ()), dtype=np.int64) for q in query_texts]
        return out if any(len(o) for o in out) else None

    def _fit(self) -> None:
        """Pool-level precomputation (override)."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "pool_"):
            raise ValueError(f"{type(self).__name__} is not fitted; call fit(pool_embeddings) first")

    # ---------------------------------------------------------------- select
    def select(
        self,
        query_embeddings: Any = None,
        budget: int = 10,
        *,
        query_texts: Optional[Sequence[str]] = None,
        exclude_query_texts: bool = False,
        order: str = D.ORDER,
    ) -> Selection:
        """Choose ``min(budget, N)`` demonstrations per query.

        Parameters
        ----------
        query_embeddings : array-like of shape (Q, d), optional
            Required by query-dependent selectors; query-independent ones use only its row count.
        budget : int
            Demonstrations per query, ``>= 0``. ``0`` gives the zero-shot (empty) selection; a budget larger
            than the pool is clipped to the pool size.
        query_texts : sequence of str, optional
            Needed by selectors that score text (MDL).
        exclude_query_texts : bool, default=False
            Evaluation on a test split: a query-dependent selector never offers a pool item whose text is the
            query's own (needs ``query_texts`` and a fit with ``texts``). Off for applications, where an
            example equal to the query is the best demonstration there is.
        order : {"selected", "similar_first", "similar_last", "vote_last"}
            The order of each prompt's demonstrations: as the selector chose them (default), or by cosine
            similarity to the query, most similar first or most similar last (next to the query, where small
            models read it last), or grouped by label with the most frequent label last
            (:func:`vote_last_order`; needs a fit with ``labels``). Query-dependent selectors only; scores
            follow their demonstrations.

        Returns
        -------
        Selection
        """
        self._check_fitted()
        b = min(check_budget(budget), self.n_pool_)
        if query_embeddings is None:
            if self.query_dependent:
                raise ValueError(
                    f"{type(self).__name__} is query-dependent; pass query_embeddings of shape (Q, d)"
                )
            queries = np.zeros((0, self.dim_))
            n_queries = 0 if query_texts is None else len(query_texts)
        else:
            queries = l2_normalize(
                check_embeddings(query_embeddings, "query_embeddings", dim=self.dim_, allow_empty=True)
            )
            n_queries = queries.shape[0]
        if query_texts is not None and len(query_texts) != n_queries:
            raise ValueError(f"query_texts has {len(query_texts)} entries but there are {n_queries} queries")
        self._exclude = (
            self._query_duplicates(query_texts) if exclude_query_texts and self.query_dependent else None
        )
        self._budget = b
        try:
            idx, scores, extras = self._select(queries, b, query_texts)
        finally:
            self.__dict__.pop("_exclude", None)  # select leaves no state behind
            self.__dict__.pop("_budget", None)
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if order != "selected":
            idx, scores = self._reorder(idx, scores, queries, order)
        return Selection(
            indices=idx,
            scores=scores,
            query_dependent=self.query_dependent,
            n_queries=n_queries,
            method=self.name + ("+ucs" if getattr(self, "prior", None) is not None else ""),
            params=self._summary_params(),
            clusters_covered=self._clusters_covered(idx),
            phi=self._phi(idx),
            extras=extras,
        )

    def _summary_params(self) -> Dict[str, Any]:
        return self.config(summary=True)["params"]

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:  # pragma: no cover - abstract
        raise NotImplementedError

    # ----------------------------------------------------------- diagnostics
    def _clusters_covered(self, idx: np.ndarray) -> Optional[np.ndarray]:
        if self.cluster_ids_ is None:
            return None
        c = np.sort(self.cluster_ids_[idx], axis=1)
        if c.shape[1] == 0:
            return np.zeros(c.shape[0], dtype=np.int64)
        return (1 + np.count_nonzero(np.diff(c, axis=1), axis=1)).astype(np.int64)

    def _phi(self, idx: np.ndarray) -> Optional[np.ndarray]:
        prior = getattr(self, "prior", None)
        if prior is None:
            return None
        return prior.batched().phi_subsets(idx)


def _pool_cluster_ids(cluster_ids: Any, prior: Any, n: int, pool: str) -> Optional[np.ndarray]:
    """The cluster ids of an ``n``-row pool: ``cluster_ids`` checked (``pool``: how a message names the pool),
    else the prior's, else ``None``; the prior's pool size is checked."""
    if prior is not None:
        prior._check_pool_size(n)
    if cluster_ids is not None:
        cids = validate_cluster_ids(cluster_ids, name="cluster_ids")
        if cids.shape[0] != n:
            raise ValueError(f"cluster_ids has {cids.shape[0]} entries but {pool} {n} rows")
        return cids
    return None if prior is None else prior.cluster_ids_array()

"""The UCS coverage prior: cluster ids + an unseen estimator + λ, composable with any selector."""

from __future__ import annotations

import numbers
from typing import Any, Dict, Mapping, Optional

import numpy as np

from ucs import defaults as D
from ucs.estimators import GoodTuringPrior, UnseenCoverage
from ucs.estimators.coverage import DESIGNS
from ucs.estimators.prior import PRIOR_VARIANTS
from ucs.estimators.spectrum import validate_cluster_ids
from ucs.selectors._coverage import BatchedCoverage, candidate_share
from ucs.utils.io import hash_array

__all__ = ["UCSPrior", "SCORE_DESIGNS", "CORPUS_PRIORS", "RELEVANCE", "LAM_MAX", "check_lam"]

#: Subset-level score designs (paper Table 6): Φ = K_seen + Û, K_seen, Û, Û / K_seen.
SCORE_DESIGNS = DESIGNS
#: Corpus-level rarity priors used by VoteK+UCS: Good–Turing (SPEC §4), B2 spectrum rarity, B1 inverse size.
CORPUS_PRIORS = PRIOR_VARIANTS
#: How a query-dependent selector weighs coverage: ``none`` (the paper: every cluster counts the same),
#: ``candidates`` (every change of coverage counts by the share of the query's own candidates the cluster
#: holds) or ``candidates_bonus`` (only increases are weighted; repeating a cluster costs the same
#: everywhere).
RELEVANCE = ("none", "candidates", "candidates_bonus")

#: The largest λ accepted: beyond it λ·Φ leaves the base score no say and large pools can overflow to inf.
LAM_MAX = 1e6


def check_lam(lam: Any, name: str = "lam") -> None:
    """The one check of a prior weight λ: a finite real number in ``[0, LAM_MAX]``.

    ``name`` is the setting's name in the error (``lam``, or a configuration's ``prior.lam``). Raises
    ``ValueError`` naming it and the accepted range. Cost: O(1).
    """
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not np.isfinite(lam):
        raise ValueError(f"{name} must be a finite number >= 0; got {lam!r}")
    if lam < 0:
        raise ValueError(f"{name} must be >= 0 (lam = 0 gives the base selector); got {lam!r}")
    if lam > LAM_MAX:
        raise ValueError(
            f"{name} must be <= {LAM_MAX:g} (beyond it λ·Φ leaves the base score no say and can "
            f"overflow to inf); got {lam!r}"
        )


class UCSPrior:
    """Unseen-coverage prior that a selector adds to its own utility.

    Subset-level selectors (DPP, MDL, TopK) add ``λ · Φ(S)`` (or the greedy gain ``λ · ΔΦ``) where
    ``Φ`` is the coverage functional of :class:`ucs.estimators.UnseenCoverage` (estimator and score
    design given here). Corpus-level selectors (VoteK) add ``λ · log w_{c(i)}`` with the weights of
    :class:`ucs.estimators.GoodTuringPrior` (``corpus_prior``: ``good_turing`` = SPEC §4 VoteK+UCS,
    ``spectrum_rarity`` = rarity control B2, ``inverse_size`` = B1).

    Parameters
    ----------
    cluster_ids : array-like of shape (N,)
        Non-negative cluster id of every pool item (noise already remapped to singletons).
    estimator : str
        Unseen estimator: ``"paper"``, ``"poisson"``, ``"binomial"``, ``"efron_thisted"``, ``"good_toulmin"``,
        ``"chao1"``.
    lam : float
        Weight ``λ >= 0`` of the prior; ``λ = 0`` reproduces the base selector exactly.
    design : str
        Score design, one of :data:`SCORE_DESIGNS`.
    corpus_prior : str
        Corpus-level weights for query-independent selectors, one of :data:`CORPUS_PRIORS`.
    corpus_smoothing : str or None
        Spectrum smoothing of the corpus prior (``"power_law"`` per SPEC §4).
    epsilon : float
        ``ε`` of the corpus weights ``1 / (p + ε)``.
    relevance : {"none", "candidates", "candidates_bonus"}
        ``none`` (the paper): every cluster's coverage counts the same. ``candidates`` (relevance-aware, a
        project extension): coverage is weighted by how much of the *query's own* candidate set a cluster
        holds, ``w_q(u) = n_q(u) / max_v n_q(v)`` with ``n_q(u)`` the query's candidates in cluster ``u``
        (:func:`ucs.selectors._coverage.candidate_share`). Greedy selectors (DPP, TopK) add
        ``λ · w_q(c(j)) · ΔΦ_j``; MDL adds ``λ · w̄_q(S) · Φ(S)`` with ``w̄_q(S)`` the mean weight of the
        clusters ``S`` covers. Query-independent selectors (VoteK) ignore it. It keeps the prior from pulling
        in clusters (often other intents) that only a stray candidate of the query reaches. Because ``ΔΦ_j``
        is negative when ``j`` repeats a cluster, ``candidates`` also shrinks the cost of repeating a stray
        cluster more than that of repeating the query's own. ``candidates_bonus`` weighs only the increases,
        ``λ · (w_q(c(j)) · max(ΔΦ_j, 0) + min(ΔΦ_j, 0))``, so a repeat costs the same in every cluster; for
        MDL (whose ``Φ(S)`` has no such sign change) it equals ``candidates``.
    **estimator_params
        Passed to :class:`~ucs.estimators.UnseenCoverage` (``t``, ``bin_size``, ``alpha``, ``integer``,
        ``smoothing``).

    Notes
    -----
    Like scikit-learn estimators, the constructor only stores its arguments; they are validated when a
    selector is fitted with the prior (or by :meth:`validate`). The fitted estimator objects are built
    lazily and cached, so one prior can be shared by several selectors.
    """

    def __init__(
        self,
        cluster_ids: Any,
        estimator: str = D.PAPER_ESTIMATOR,
        lam: float = D.LAM,
        design: str = D.DESIGN,
        corpus_prior: str = D.CORPUS_PRIOR,
        corpus_smoothing: Optional[str] = "power_law",
        epsilon: float = 1e-6,
        relevance: str = D.RELEVANCE,
        **estimator_params: Any,
    ) -> None:
        self.cluster_ids = cluster_ids
        self.estimator = estimator
        self.lam = lam
        self.design = design
        self.corpus_prior = corpus_prior
        self.corpus_smoothing = corpus_smoothing
        self.epsilon = epsilon
        self.relevance = relevance
        self.estimator_params = dict(estimator_params)

    @classmethod
    def build(
        cls, cluster_ids: Any, params: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> "UCSPrior":
        """The one place the package builds a prior: on ``cluster_ids``, with the keyword arguments ``params``
        (a configuration's ``prior_params``, an index's ``prior`` over its defaults, a saved :meth:`config`),
        then ``options`` whose value is not ``None`` (a command-line option left unset keeps the value
        beneath).

        ``cluster_ids=None`` keeps the ids that ``params`` holds (a saved :meth:`config`). Like the
        constructor it only stores the values; :meth:`validate` checks each once, when a selector is fitted
        with the prior. Cost: O(len(params)); nothing is copied or fitted.

        >>> UCSPrior.build([0, 0, 1], {"lam": 0.5, "estimator": "binomial"}, lam=2.0, design=None)
        UCSPrior(cluster_ids=<3 ids>, estimator='binomial', lam=2.0, design='full',
                 corpus_prior='good_turing')
        """
        kwargs = dict(params or {})
        kwargs.update({k: v for k, v in options.items() if v is not None})
        if cluster_ids is not None:
            kwargs["cluster_ids"] = cluster_ids
        return cls(**kwargs)

    # ------------------------------------------------------------ parameters
    def get_params(self) -> Dict[str, Any]:
        params = {
            "cluster_ids": self.cluster_ids,
            "estimator": self.estimator,
            "lam": self.lam,
            "design": self.design,
            "corpus_prior": self.corpus_prior,
            "corpus_smoothing": self.corpus_smoothing,
            "epsilon": self.epsilon,
        }
        if self.relevance != "none":  # configs written before the setting existed keep their form
            params["relevance"] = self.relevance
        params.update(self.estimator_params)
        return params

    def clone(self, **overrides: Any) -> "UCSPrior":
        """A new prior with the same parameters (``overrides`` replace some), e.g. ``prior.clone(lam=0)``."""
        params = self.get_params()
        params.update(overrides)
        return type(self).build(None, params)

    def config(self) -> Dict[str, Any]:
        """JSON-friendly description (cluster ids as a list); ``UCSPrior.build(None, config)`` rebuilds it."""
        params = self.get_params()
        params["cluster_ids"] = np.asarray(self.cluster_ids).tolist()
        return params

    def summary(self) -> Dict[str, Any]:
        """Like :meth:`config` but with the cluster ids replaced by their count and SHA-256 (cached):
        what a :class:`Selection` records."""
        ids = self.cluster_ids_array()
        cached = self.__dict__.get("_cache_digest")
        if cached is None or cached[0] is not ids:
            cached = (ids, {"n": int(ids.size), "sha256": hash_array(ids)})
            self.__dict__["_cache_digest"] = cached
        params = self.get_params()
        params["cluster_ids"] = dict(cached[1])
        return params

    def __repr__(self) -> str:
        n = np.asarray(self.cluster_ids).shape
        extra = "".join(f", {k}={v!r}" for k, v in self.estimator_params.items())
        return (
            f"UCSPrior(cluster_ids=<{n[0] if n else '?'} ids>, estimator={self.estimator!r}, "
            f"lam={self.lam!r}, design={self.design!r}, corpus_prior={self.corpus_prior!r}"
            + (f", relevance={self.relevance!r}" if self.relevance != "none" else "")
            + f"{extra})"
        )

    def __getstate__(self) -> Dict[str, Any]:
        # Cached fitted objects are rebuilt on demand; keep pickles small and version-independent.
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_cache")}

    # ------------------------------------------------------------ validation
    def validate(self) -> "UCSPrior":
        """Check every parameter; raise ``ValueError`` naming the bad one."""
        check_lam(self.lam)
        if self.design not in SCORE_DESIGNS:
            raise ValueError(f"design must be one of {SCORE_DESIGNS}; got {self.design!r}")
        if self.corpus_prior not in CORPUS_PRIORS:
            raise ValueError(f"corpus_prior must be one of {CORPUS_PRIORS}; got {self.corpus_prior!r}")
        if self.relevance not in RELEVANCE:
            raise ValueError(f"relevance must be one of {RELEVANCE}; got {self.relevance!r}")
        if not isinstance(self.epsilon, numbers.Real) or not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0; got {self.epsilon!r}")
        self.cluster_ids_array()
        return self

    def cluster_ids_array(self) -> np.ndarray:
        """The validated cluster ids as int64 (cached)."""
        cached = self.__dict__.get("_cache_ids")
        if cached is not None and cached[0] is self.cluster_ids:
            return cached[1]

        ids = validate_cluster_ids(self.cluster_ids, name="cluster_ids")
        if ids.size == 0:
            raise ValueError("cluster_ids is empty: the prior needs the cluster id of every pool item")
        ids.setflags(write=False)
        self.__dict__["_cache_ids"] = (self.cluster_ids, ids)
        return ids

    def _check_pool_size(self, n: int) -> None:
        self.validate()
        m = self.cluster_ids_array().shape[0]
        if m != n:
            raise ValueError(
                f"the prior's cluster_ids has {m} entries but the pool has {n} items; "
                "cluster the same pool the selector is fitted on"
            )

    # ---------------------------------------------------------- fitted parts
    def coverage(self) -> Any:
        """The fitted :class:`ucs.estimators.UnseenCoverage` (cached)."""
        key = ("coverage", self.estimator, self.design, tuple(sorted(self.estimator_params.items())))
        cached = self.__dict__.get("_cache_cov")
        if cached is not None and cached[0] == key and cached[1] is self.cluster_ids:
            return cached[2]

        cov = UnseenCoverage(estimator=self.estimator, design=self.design, **self.estimator_params)
        cov.fit(self.cluster_ids_array())
        self.__dict__["_cache_cov"] = (key, self.cluster_ids, cov)
        self.__dict__.pop("_cache_batched", None)
        return cov

    def batched(self) -> Any:
        """A :class:`ucs.selectors._coverage.BatchedCoverage` for many subsets / queries at once (cached)."""
        cov = self.coverage()
        cached = self.__dict__.get("_cache_batched")
        if cached is not None and cached[0] is cov:
            return cached[1]

        bc = BatchedCoverage(cov, self.cluster_ids_array())
        self.__dict__["_cache_batched"] = (cov, bc)
        return bc

    def item_log_weights(self) -> np.ndarray:
        """``log w_{c(i)}`` for every pool item under ``corpus_prior`` (cached), shape (N,)."""
        key = (self.corpus_prior, self.corpus_smoothing, float(self.epsilon))
        cached = self.__dict__.get("_cache_logw")
        if cached is not None and cached[0] == key and cached[1] is self.cluster_ids:
            return cached[2]

        gt = GoodTuringPrior(variant=self.corpus_prior, smoothing=self.corpus_smoothing, epsilon=self.epsilon)
        logw = np.asarray(gt.fit(self.cluster_ids_array()).item_log_weights_, dtype=np.float64)
        self.__dict__["_cache_logw"] = (key, self.cluster_ids, logw)
        return logw

    def candidate_weights(self, candidates: np.ndarray) -> "np.ndarray | None":
        """Per-candidate relevance weights (Q, C) of the relevance-aware forms, ``None`` for ``"none"``."""
        if self.relevance == "none":
            return None

        return candidate_share(self.batched().cluster_of(candidates))

    def greedy(self, candidates: np.ndarray, max_steps: int):
        """The greedy coverage state a query-dependent selector (DPP, TopK) adds one item at a time to.

        ``candidates`` (Q, C) pool indices, each query's own; ``max_steps`` the budget. Its ``gains()``
        (Q, C) are ``ΔΦ`` weighted as ``relevance`` says (:meth:`BatchedCoverage.greedy`).
        """
        weights = self.candidate_weights(candidates)
        return self.batched().greedy(
            candidates, max_steps, weights, weigh_losses=self.relevance != "candidates_bonus"
        )

    def subset_weights(self, candidates: np.ndarray, subsets: np.ndarray) -> "np.ndarray | None":
        """Mean relevance weight of the distinct clusters of each subset, shape ``subsets.shape[:-1]``.

        ``candidates`` (Q, C); ``subsets`` (Q, T, B) pool indices drawn from each query's candidates.
        ``None`` when ``relevance="none"``.
        """
        if self.relevance == "none":
            return None

        bc = self.batched()
        members = bc.cluster_of(subsets)
        w = candidate_share(bc.cluster_of(candidates), members)
        mult = (members[..., :, None] == members[..., None, :]).sum(axis=-1)
        return (w / mult).sum(axis=-1) / (1.0 / mult).sum(axis=-1)

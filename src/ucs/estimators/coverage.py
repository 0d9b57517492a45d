"""The coverage functional Φ(S) and its incremental state for greedy selection.

``Φ(S) = K_seen(S) + Û_t(S)`` (SPEC §3), with the score-design ablations of the paper's
Table 6: ``seen_only`` (Φ = K_seen), ``unseen_only`` (Φ = Û), ``ratio`` (Φ = Û / K_seen).

:class:`UnseenCoverage` is fitted once on the pool's cluster ids; :meth:`UnseenCoverage.phi`
recomputes Φ of a subset from scratch, and :meth:`UnseenCoverage.new_state` returns a
:class:`CoverageState` that tracks a growing subset and gives, for a whole array of
candidates at once, the exact gain ``Φ(S ∪ {i}) − Φ(S)``.

How the gain stays exact and cheap: adding item ``i`` whose cluster has multiplicity ``m`` in
``S`` moves one unit of the spectrum from bin ``m`` to bin ``m + 1``, so the gain depends on
``i`` only through ``m``. The state evaluates Φ once for each *distinct* multiplicity among
the candidates (at most ``|S| + 1`` values, usually two or three) with the very function that
recomputation uses, and gathers the result per candidate. The gain is therefore bit-identical
to recomputation for every estimator — including the non-linear Chao1 and the smoothed
variants — at O(1) per candidate plus O(d · L) per call (``d`` distinct multiplicities,
``L`` the estimator's number of terms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ucs.estimators.spectrum import spectrum_from_multiplicities, validate_cluster_ids, validate_subset
from ucs.estimators.unseen import UnseenEstimator, make_estimator, resolve_estimator_name

__all__ = ["DESIGNS", "UnseenCoverage", "CoverageState", "CoverageReport", "combine_design"]

DESIGNS: tuple[str, ...] = ("full", "seen_only", "unseen_only", "ratio")


def combine_design(
    k_seen: NDArray[np.float64], unseen: NDArray[np.float64], design: str
) -> NDArray[np.float64]:
    """Φ from ``K_seen`` and ``Û`` under a score design (vectorised)."""
    if design == "full":
        return k_seen + unseen
    if design == "seen_only":
        return k_seen.astype(np.float64)
    if design == "unseen_only":
        return unseen
    if design == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(k_seen > 0, unseen / np.maximum(k_seen, 1), 0.0)
    raise ValueError(f"design must be one of {DESIGNS}; got {design!r}")


@dataclass(frozen=True)
class CoverageReport:
    """Coverage of one subset: sizes, spectrum and Φ."""

    estimator: str
    design: str
    n: int
    k_seen: int
    unseen: float
    phi: float
    spectrum: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "design": self.design,
            "n": self.n,
            "k_seen": self.k_seen,
            "unseen": self.unseen,
            "phi": self.phi,
            "spectrum": list(self.spectrum),
        }


class UnseenCoverage:
    """Coverage functional Φ over a pool whose items carry discrete cluster ids.

    Parameters
    ----------
    estimator : str or UnseenEstimator, default="paper"
        ``paper``, ``poisson``, ``binomial``, ``efron_thisted``, ``good_toulmin``, ``chao1``
        (see :mod:`ucs.estimators.unseen`), or an estimator instance.
    design : {"full", "seen_only", "unseen_only", "ratio"}, default="full"
        Score design (paper Table 6).
    **estimator_params
        Passed to the estimator: ``t`` (default 5), and for ``paper`` also ``bin_size`` (M, 20),
        ``alpha`` (1), ``integer`` (False), ``smoothing`` (None).

    Attributes
    ----------
    estimator_ : UnseenEstimator
    cluster_index_ : ndarray of shape (N,)
        Compact cluster index ``0..n_clusters_-1`` of each pool item.
    clusters_ : ndarray of shape (n_clusters_,)
        The original cluster ids, sorted.
    n_clusters_ : int
    n_items_ : int

    Notes
    -----
    ``fit`` is O(N log N); :meth:`phi` is O(|S| log |S| + L).

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.estimators import UnseenCoverage
    >>> clusters = np.array([0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8])  # one cluster id per pool item
    >>> cov = UnseenCoverage(estimator="binomial").fit(clusters)
    >>> round(cov.phi([0, 1]), 2), round(cov.phi([0, 2]), 2)  # one cluster twice; two clusters once each
    (1.0, 6.9)
    >>> state = cov.new_state()  # greedy selection: exact gains Φ(S ∪ {i}) − Φ(S) for many candidates at once
    >>> round(state.add(0), 2)
    2.43
    >>> state.gains(np.array([1, 2])).round(2)  # item 1 repeats item 0's cluster, item 2 is a new one
    array([-1.43,  4.47])
    """

    def __init__(
        self, estimator: "str | UnseenEstimator" = "paper", design: str = "full", **estimator_params: Any
    ) -> None:
        self.estimator = estimator
        self.design = design
        self.estimator_params = estimator_params

    def get_params(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "design": self.design, **self.estimator_params}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"UnseenCoverage({args})"

    def _build_estimator(self) -> UnseenEstimator:
        if self.design not in DESIGNS:
            raise ValueError(f"design must be one of {DESIGNS}; got {self.design!r}")
        if isinstance(self.estimator, UnseenEstimator):
            if self.estimator_params:
                raise ValueError("pass estimator parameters to the estimator instance, not to UnseenCoverage")
            self.estimator._validate()
            return self.estimator
        return make_estimator(resolve_estimator_name(self.estimator), **self.estimator_params)

    def fit(self, cluster_ids: ArrayLike) -> "UnseenCoverage":
        """Index the pool's cluster ids.

        Parameters
        ----------
        cluster_ids : array-like of shape (N,)
            Non-negative integer cluster id of every pool item.
        """
        self.estimator_ = self._build_estimator()
        ids = validate_cluster_ids(cluster_ids)
        if ids.size == 0:
            raise ValueError("cluster_ids is empty: fit needs the cluster id of at least one pool item")
        self.clusters_, inverse = np.unique(ids, return_inverse=True)
        self.cluster_index_ = inverse.astype(np.int64)
        self.n_clusters_ = int(self.clusters_.size)
        self.n_items_ = int(ids.size)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "cluster_index_"):
            raise RuntimeError("UnseenCoverage is not fitted; call fit(cluster_ids) first")

    # -- evaluation ----------------------------------------------------------------------
    def phi_from_spectra(self, F: ArrayLike, n: int) -> NDArray[np.float64]:
        """Φ of a batch of spectra of subsets of size ``n`` (rows of ``F``), shape (r,).

        This is the single function every Φ value goes through (recomputation and
        incremental gains alike), which is what makes gains bit-exact.
        """
        est = getattr(self, "estimator_", None) or self._build_estimator()
        F = np.atleast_2d(np.asarray(F, dtype=np.int64))
        k = F[:, 1:].sum(axis=1).astype(np.float64)
        if self.design == "seen_only":
            return k
        u = est.unseen_batch(F, int(n))
        return combine_design(k, u, self.design)

    def _spectrum_of(self, subset: ArrayLike) -> tuple[NDArray[np.int64], int]:
        self._check_fitted()
        idx = validate_subset(subset, self.n_items_, allow_empty=False)
        counts = np.bincount(self.cluster_index_[idx], minlength=0)
        return spectrum_from_multiplicities(counts), int(idx.size)

    def phi(self, subset: ArrayLike) -> float:
        """Φ(S) of a non-empty subset given as pool indices (repeats count as repeated draws).

        An empty subset raises ``ValueError``; a greedy selection starts from
        :meth:`new_state`, whose ``phi`` is 0 for the empty set.
        """
        f, n = self._spectrum_of(subset)
        return float(self.phi_from_spectra(f[None, :], n)[0])

    def report(self, subset: ArrayLike) -> CoverageReport:
        """K_seen, Û, Φ and the spectrum of a subset."""
        f, n = self._spectrum_of(subset)
        k = int(f[1:].sum())
        u = float(self.estimator_.unseen_batch(f[None, :], n)[0])
        return CoverageReport(
            estimator=self.estimator_.name,
            design=self.design,
            n=n,
            k_seen=k,
            unseen=u,
            phi=float(self.phi_from_spectra(f[None, :], n)[0]),
            spectrum=[int(x) for x in f],
        )

    def new_state(self) -> "CoverageState":
        """A fresh incremental state (empty subset) for greedy selection."""
        self._check_fitted()
        return CoverageState(self)


class CoverageState:
    """A growing subset ``S`` with O(1)-per-candidate exact gains.

    Obtain it from :meth:`UnseenCoverage.new_state`. ``add`` / ``undo`` / ``reset`` are O(L);
    :meth:`gains` is O(|candidates| + d·L) with ``d`` the number of distinct multiplicities of
    the candidates' clusters in ``S``. The state allocates one integer array of the number of
    clusters and reuses it across :meth:`reset` calls (it only clears what it touched), so one
    state can serve every query of a batch.
    """

    def __init__(self, coverage: UnseenCoverage) -> None:
        self.coverage = coverage
        self._cid = coverage.cluster_index_
        self._counts = np.zeros(coverage.n_clusters_, dtype=np.int64)
        self._f = np.zeros(8, dtype=np.int64)
        self._stack: list[int] = []
        self.n = 0
        self.phi = float(coverage.phi_from_spectra(self._f[None, :1], 0)[0])
        self._phi0 = self.phi

    @property
    def items(self) -> list[int]:
        """Pool indices added so far, in order."""
        return list(self._stack)

    @property
    def spectrum(self) -> NDArray[np.int64]:
        """Current spectrum ``f`` (length ``max multiplicity + 1``)."""
        top = int(self._counts[self._cid[self._stack]].max()) if self._stack else 0
        return self._f[: top + 1].copy()

    def multiplicity(self, items: ArrayLike) -> NDArray[np.int64]:
        """Current multiplicity in ``S`` of the clusters of ``items``."""
        return self._counts[self._cid[np.asarray(items, dtype=np.int64)]]

    def _grow(self, need: int) -> None:
        if need >= self._f.size:
            f = np.zeros(max(need + 1, 2 * self._f.size), dtype=np.int64)
            f[: self._f.size] = self._f
            self._f = f

    def _spectra_view(self) -> NDArray[np.int64]:
        # the spectrum of a subset of size n never needs more than n + 2 bins after one more add
        return self._f[: self.n + 2]

    def add(self, item: int) -> float:
        """Add pool item ``item`` to ``S``; returns the new Φ."""
        item = int(item)
        if not 0 <= item < self._cid.size:
            raise ValueError(f"item {item} is outside the pool (0..{self._cid.size - 1})")
        c = self._cid[item]
        m = int(self._counts[c])
        self._grow(self.n + 2)
        if m > 0:
            self._f[m] -= 1
        self._f[m + 1] += 1
        self._counts[c] = m + 1
        self.n += 1
        self._stack.append(item)
        self.phi = float(self.coverage.phi_from_spectra(self._spectra_view()[None, :], self.n)[0])
        return self.phi

    def undo(self) -> int:
        """Remove the most recently added item; returns it."""
        if not self._stack:
            raise IndexError("undo() on an empty CoverageState")
        item = self._stack.pop()
        c = self._cid[item]
        m = int(self._counts[c])
        self._f[m] -= 1
        if m > 1:
            self._f[m - 1] += 1
        self._counts[c] = m - 1
        self.n -= 1
        self.phi = (
            float(self.coverage.phi_from_spectra(self._spectra_view()[None, :], self.n)[0])
            if self.n
            else self._phi0
        )
        return item

    def reset(self) -> None:
        """Empty ``S`` (O(|S|): only touched entries are cleared)."""
        if self._stack:
            self._counts[self._cid[np.asarray(self._stack, dtype=np.int64)]] = 0
        self._f[:] = 0
        self._stack.clear()
        self.n = 0
        self.phi = self._phi0

    def gains(self, candidates: ArrayLike) -> NDArray[np.float64]:
        """Exact ``Φ(S ∪ {i}) − Φ(S)`` for every candidate pool index ``i``.

        Parameters
        ----------
        candidates : array-like of int, shape (c,)
            Pool indices. An index already in ``S`` is treated as a repeated draw.

        Returns
        -------
        ndarray of shape (c,), float64
        """
        cand = np.asarray(candidates, dtype=np.int64)
        if cand.size == 0:
            return np.zeros(0)
        m = self._counts[self._cid[cand]]
        # distinct multiplicities without a sort: they all lie in 0..n
        present = np.zeros(self.n + 1, dtype=bool)
        present[m] = True
        uniq = np.flatnonzero(present)
        slot = np.empty(self.n + 1, dtype=np.int64)
        slot[uniq] = np.arange(uniq.size)
        inv = slot[m]
        self._grow(self.n + 2)
        base = self._spectra_view()
        F = np.repeat(base[None, :], uniq.size, axis=0)
        rows = np.arange(uniq.size)
        nz = uniq > 0
        F[rows[nz], uniq[nz]] -= 1
        F[rows, uniq + 1] += 1
        phi_new = self.coverage.phi_from_spectra(F, self.n + 1)
        return (phi_new - self.phi)[inv]

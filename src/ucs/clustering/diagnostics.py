"""Cluster diagnostics (SPEC §6): size spectrum, top clusters with label purity, and the
coverage-exposure statistics of selected prompts (paper Table 3 and Fig. 3).

:func:`coverage_exposure` is the one home of paper Table 3's statistic (unique clusters, mean cluster size,
mean inverse size and, given a fitted coverage estimator, Φ); the pipeline's coverage log stores its columns
(:func:`ucs.pipeline.diagnostics.coverage_stats`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ClusterSummary",
    "ClusterReport",
    "cluster_report",
    "CoverageExposure",
    "coverage_exposure",
    "row_spectra",
]


def _check_labels(labels: ArrayLike) -> NDArray[np.int64]:
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must be 1-D (one cluster id per pool item); got shape {lab.shape}")
    if lab.size == 0:
        raise ValueError("labels is empty")
    if lab.dtype.kind not in "iu":
        raise ValueError(f"labels must be integer cluster ids; got dtype {lab.dtype}")
    if lab.min() < 0:
        raise ValueError("labels contain negative ids; remap noise first (ucs.clustering.remap_noise)")
    return lab.astype(np.int64, copy=False)


@dataclass
class ClusterSummary:
    """One cluster: id, size, and (with labels) its label composition and purity."""

    cluster: int
    size: int
    purity: Optional[float] = None
    majority_label: Optional[str] = None
    composition: List[List[Any]] = field(default_factory=list)  # [[label, count], ...] by count
    examples: List[str] = field(default_factory=list)


@dataclass
class ClusterReport:
    """Summary of a partition of the pool.

    Attributes
    ----------
    n_items, n_clusters, n_singletons : int
    size_spectrum : dict[int, int]
        ``{size: number of clusters of that size}``.
    items_by_size : dict[int, int]
        Pool items in clusters of size 1..8 (paper Fig. 3); key 0 is "larger than 8".
    largest_sizes : list[int]
        Sizes of the largest clusters, descending.
    top : list[ClusterSummary]
        The largest clusters with purity when labels were given.
    purity : float or None
        Size-weighted purity of the whole partition (fraction of items that carry their
        cluster's majority label).
    """

    n_items: int
    n_clusters: int
    n_singletons: int
    size_spectrum: Dict[int, int]
    items_by_size: Dict[int, int]
    largest_sizes: List[int]
    top: List[ClusterSummary]
    purity: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def to_markdown(self) -> str:
        """A short markdown rendering (headline numbers, Fig.-3 counts and the top clusters)."""
        lines = [
            f"- items: {self.n_items}, clusters: {self.n_clusters}, singletons: {self.n_singletons}"
            + (f", partition purity: {self.purity:.3f}" if self.purity is not None else ""),
            "- items in clusters of size 1..8: "
            + ", ".join(f"{s}: {self.items_by_size.get(s, 0)}" for s in range(1, 9))
            + f"; larger: {self.items_by_size.get(0, 0)}",
            f"- largest cluster sizes: {self.largest_sizes}",
            "",
            "| cluster | size | purity | majority label | composition (top) |",
            "|---:|---:|---:|---|---|",
        ]
        for c in self.top:
            comp = ", ".join(f"{lab} ({cnt})" for lab, cnt in c.composition[:4])
            pur = f"{c.purity:.2f}" if c.purity is not None else "–"
            lines.append(f"| {c.cluster} | {c.size} | {pur} | {c.majority_label or '–'} | {comp} |")
        return "\n".join(lines)


def cluster_report(
    labels: ArrayLike,
    y: Optional[ArrayLike] = None,
    texts: Optional[Sequence[str]] = None,
    top: int = 8,
    n_examples: int = 3,
) -> ClusterReport:
    """Sizes, spectrum and the ``top`` largest clusters of a partition.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Non-negative cluster ids.
    y : array-like of shape (n,), optional
        Gold labels; adds per-cluster composition and purity (the paper's qualitative audit).
    texts : sequence of str, optional
        Member texts; the first ``n_examples`` of each top cluster are attached.

    Notes
    -----
    Time ``O(n log n)``; memory ``O(n)``.
    """
    lab = _check_labels(labels)
    n = lab.size
    sizes = np.bincount(lab)
    present = sizes > 0
    ids = np.flatnonzero(present)
    sz = sizes[present]
    uniq_sizes, counts = np.unique(sz, return_counts=True)
    spectrum = {int(s): int(c) for s, c in zip(uniq_sizes, counts)}
    items_by_size = {s: int(spectrum.get(s, 0) * s) for s in range(1, 9)}
    items_by_size[0] = int(sz[sz > 8].sum())
    order = ids[np.lexsort((ids, -sz))]
    top_ids = order[: max(int(top), 0)]
    purity = None
    y_arr = None
    if y is not None:
        y_arr = np.asarray(y)
        if y_arr.shape != (n,):
            raise ValueError(f"y must have one label per item, shape ({n},); got {y_arr.shape}")
        y_codes_uniq, y_codes = np.unique(y_arr, return_inverse=True)
        y_codes = y_codes.ravel()
        # majority count per cluster via a sorted (cluster, label) pair count
        pair = lab * np.int64(y_codes_uniq.size) + y_codes
        pu, pc = np.unique(pair, return_counts=True)
        pcl = pu // y_codes_uniq.size
        maj = np.zeros(sizes.size, dtype=np.int64)
        np.maximum.at(maj, pcl, pc)
        purity = float(maj.sum() / n)
    if texts is not None and len(texts) != n:
        raise ValueError(f"texts must have one entry per item ({n}); got {len(texts)}")
    summaries = []
    for c in top_ids:
        members = np.flatnonzero(lab == c)
        s = ClusterSummary(cluster=int(c), size=int(members.size))
        if y_arr is not None:
            vals, cnts = np.unique(y_arr[members], return_counts=True)
            o = np.lexsort((vals.astype(str), -cnts))
            s.composition = [[_py(vals[i]), int(cnts[i])] for i in o]
            s.majority_label = str(vals[o[0]])
            s.purity = float(cnts[o[0]] / members.size)
        if texts is not None:
            s.examples = [str(texts[i]) for i in members[:n_examples]]
        summaries.append(s)
    return ClusterReport(
        n_items=int(n),
        n_clusters=int(ids.size),
        n_singletons=int(spectrum.get(1, 0)),
        size_spectrum=spectrum,
        items_by_size=items_by_size,
        largest_sizes=[int(sizes[c]) for c in order[:8]],
        top=summaries,
        purity=purity,
    )


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


@dataclass
class CoverageExposure:
    """Coverage exposure of selected prompts (paper Table 3), one value per prompt.

    Attributes
    ----------
    unique_clusters : ndarray of shape (n_prompts,)
    mean_cluster_size : ndarray of shape (n_prompts,)
        Mean pool size of the clusters the demonstrations belong to.
    mean_inverse_size : ndarray of shape (n_prompts,)
        Mean of ``1 / n_{c(i)}`` over the demonstrations (1.0: all from singleton clusters).
    phi : ndarray of shape (n_prompts,) or None
        Φ of each prompt under the coverage estimator given to :func:`coverage_exposure` (``None`` without
        one).
    """

    unique_clusters: NDArray[np.int64]
    mean_cluster_size: NDArray[np.float64]
    mean_inverse_size: NDArray[np.float64]
    phi: Optional[NDArray[np.float64]] = None

    def columns(self) -> Dict[str, NDArray[np.float64]]:
        """``{statistic: (n_prompts,) float64}``, with ``phi`` when it was computed."""
        out = {
            "unique_clusters": self.unique_clusters.astype(np.float64),
            "mean_cluster_size": self.mean_cluster_size,
            "mean_inverse_size": self.mean_inverse_size,
        }
        if self.phi is not None:
            out["phi"] = self.phi
        return out

    def summary(self) -> Dict[str, float]:
        """Averages over prompts (the paper averages over test queries), with ``phi`` when it was computed."""
        return {k: float(v.mean()) for k, v in self.columns().items()}


def row_spectra(cluster_ids: ArrayLike, subsets: ArrayLike) -> NDArray[np.int64]:
    """Spectrum of every row of ``subsets``: ``F[r, s]`` = clusters seen exactly ``s`` times in row ``r``.

    Parameters
    ----------
    cluster_ids : array-like of shape (N,)
    subsets : array-like of shape (R, B), pool indices

    Returns
    -------
    ndarray of shape (R, B + 1), int64 (column 0 is 0)

    Notes
    -----
    Vectorised: one sort of the (R, B) cluster matrix and two ``bincount`` calls, O(R B log B).
    """
    S = np.asarray(subsets, dtype=np.int64)
    R, B = S.shape
    F = np.zeros((R, B + 1), dtype=np.int64)
    if B == 0 or R == 0:
        return F
    C = np.sort(np.asarray(cluster_ids, dtype=np.int64)[S], axis=1)
    new = np.ones((R, B), dtype=bool)
    new[:, 1:] = C[:, 1:] != C[:, :-1]
    run = np.cumsum(new, axis=1) - 1 + (np.arange(R) * B)[:, None]
    lengths = np.bincount(run.ravel(), minlength=R * B).reshape(R, B)
    flat = (np.arange(R)[:, None] * (B + 1) + lengths).ravel()
    F = np.bincount(flat, minlength=R * (B + 1)).reshape(R, B + 1).astype(np.int64)
    F[:, 0] = 0
    return F


def coverage_exposure(
    labels: ArrayLike, selected_indices: ArrayLike, coverage: Any = None
) -> CoverageExposure:
    """Coverage-exposure statistics of one prompt (1-D indices) or many (2-D, one row each): paper Table 3.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Cluster id of every pool item.
    selected_indices : array-like of shape (B,) or (n_prompts, B)
        Pool indices of the demonstrations.
    coverage : ucs.estimators.UnseenCoverage, optional
        Fitted on ``labels``; adds ``phi``, each prompt's Φ (from its :func:`row_spectra` row, through
        ``coverage.phi_from_spectra``).

    Notes
    -----
    Vectorised over prompts: time ``O(Q B log B)`` (plus the estimator's cost of Φ); memory ``O(Q B)``.
    """
    lab = _check_labels(labels)
    S = np.asarray(selected_indices)
    if S.ndim == 1:
        S = S[None, :]
    if S.ndim != 2 or S.shape[1] == 0:
        raise ValueError(
            "selected_indices must be (B,) or (n_prompts, B) with B >= 1; got shape "
            f"{np.shape(selected_indices)}"
        )
    if S.dtype.kind not in "iu":
        raise ValueError(f"selected_indices must be integer pool indices; got dtype {S.dtype}")
    if S.min() < 0 or S.max() >= lab.size:
        raise ValueError(f"selected_indices must lie in [0, {lab.size - 1}]")
    sizes = np.bincount(lab)
    F = row_spectra(lab, S)
    n_c = sizes[lab[S]].astype(np.float64)
    phi = None if coverage is None else np.asarray(coverage.phi_from_spectra(F, S.shape[1]), dtype=np.float64)
    return CoverageExposure(F[:, 1:].sum(axis=1), n_c.mean(axis=1), (1.0 / n_c).mean(axis=1), phi)

"""Coverage diagnostics of selected prompts (paper Table 3): unique clusters, mean cluster size, Φ."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

__all__ = ["row_spectra", "coverage_stats", "summarize_coverage", "coverage_markdown", "label_agreement_markdown"]


def row_spectra(cluster_ids: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Spectrum of every row of ``subsets``: ``F[r, s]`` = clusters seen exactly ``s`` times in row ``r``.

    Parameters
    ----------
    cluster_ids : ndarray of shape (N,)
    subsets : ndarray of shape (R, B), pool indices

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


def coverage_stats(cluster_ids: np.ndarray, subsets: np.ndarray, coverage: Any = None) -> Dict[str, np.ndarray]:
    """Per-row coverage exposure of selected prompts.

    Parameters
    ----------
    cluster_ids : ndarray of shape (N,)
        Cluster id of every pool item.
    subsets : ndarray of shape (R, B)
        Selected pool indices (one row per prompt).
    coverage : ucs.estimators.UnseenCoverage, optional
        Fitted on ``cluster_ids``; adds ``phi`` (Φ of each row).

    Returns
    -------
    dict with ``unique_clusters`` (R,), ``mean_cluster_size`` (R,) — mean pool size of the demonstrations'
    clusters —, ``mean_inverse_size`` (R,) and, with ``coverage``, ``phi`` (R,).
    """
    ids = np.asarray(cluster_ids, dtype=np.int64)
    S = np.asarray(subsets, dtype=np.int64)
    if S.ndim == 1:
        S = S[None, :]
    out: Dict[str, np.ndarray] = {}
    if S.shape[1] == 0:
        z = np.zeros(S.shape[0])
        return {"unique_clusters": z, "mean_cluster_size": z, "mean_inverse_size": z,
                **({"phi": z} if coverage is not None else {})}
    sizes = np.bincount(ids).astype(np.float64)
    n_c = sizes[ids[S]]
    F = row_spectra(ids, S)
    out["unique_clusters"] = F[:, 1:].sum(axis=1).astype(np.float64)
    out["mean_cluster_size"] = n_c.mean(axis=1)
    out["mean_inverse_size"] = (1.0 / n_c).mean(axis=1)
    if coverage is not None:
        out["phi"] = np.asarray(coverage.phi_from_spectra(F, S.shape[1]), dtype=np.float64)
    return out


def summarize_coverage(stats: Dict[str, np.ndarray]) -> Dict[str, float]:
    """Means over prompts (the paper averages over test queries)."""
    return {k: float(np.mean(v)) if len(v) else float("nan") for k, v in stats.items()}


def _fmt(values: list) -> str:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.3g}"
    m, sd = v.mean(), v.std()
    if sd <= 1e-9 * max(1.0, abs(m)):  # equal up to rounding: the same selections in every run
        sd = 0.0
    return f"{m:.3g} ± {sd:.2g}"


def coverage_markdown(table: Dict[str, Dict[str, Dict[str, float]]]) -> str:
    """Markdown table ``method × (unique clusters, mean cluster size, mean 1/size, Φ)``; cells are the mean over
    runs ± population std of the per-run means. ``table[method][seed] = summarize_coverage(...)``."""
    lines = [
        "| method | unique clusters | mean cluster size | mean 1/size | Φ | runs |",
        "|---|---|---|---|---|---|",
    ]
    for method, by_seed in table.items():
        runs = list(by_seed.values())
        cells = [_fmt([r.get(k) for r in runs]) for k in ("unique_clusters", "mean_cluster_size", "mean_inverse_size", "phi")]
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {len(runs)} |")
    return "\n".join(lines) + "\n"


def label_agreement_markdown(agreement: Dict[str, Dict[str, Any]]) -> str:
    """Markdown table ``method × (share of demonstrations with the query's label, CI, queries)`` from
    :func:`ucs.evaluation.report.label_agreement`; empty when no method has labelled queries."""
    if not agreement:
        return ""
    lines = ["| method | demonstrations with the query's label (%) | 95% CI (queries) | queries |", "|---|---|---|---|"]
    for method, a in agreement.items():
        lo, hi = a["ci"]
        lines.append(f"| {method} | {100 * a['mean']:.1f} | [{100 * lo:.1f}, {100 * hi:.1f}] | {a['n_queries']} |")
    return "\n".join(lines) + "\n"

"""Coverage diagnostics of selected prompts (paper Table 3): unique clusters, mean cluster size, Φ.

The statistic itself is :func:`ucs.clustering.coverage_exposure`'s (and
:func:`~ucs.clustering.diagnostics.row_spectra` is the clustering package's, kept here under its old name);
this module holds the pipeline's form of it and its markdown tables."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from ucs.clustering.diagnostics import coverage_exposure, row_spectra

__all__ = [
    "row_spectra",
    "coverage_stats",
    "summarize_coverage",
    "coverage_markdown",
    "label_agreement_markdown",
]


def coverage_stats(
    cluster_ids: np.ndarray, subsets: np.ndarray, coverage: Any = None
) -> Dict[str, np.ndarray]:
    """Per-row coverage exposure of selected prompts, in the form the coverage log keeps: the columns of
    :func:`ucs.clustering.coverage_exposure` (where the statistic is computed).

    Parameters
    ----------
    cluster_ids : ndarray of shape (N,)
        Cluster id of every pool item.
    subsets : ndarray of shape (R, B) or (B,)
        Selected pool indices (one row per prompt).
    coverage : ucs.estimators.UnseenCoverage, optional
        Fitted on ``cluster_ids``; adds ``phi`` (Φ of each row).

    Returns
    -------
    dict with ``unique_clusters`` (R,), ``mean_cluster_size`` (R,), ``mean_inverse_size`` (R,) and, with
    ``coverage``, ``phi`` (R,), all float64; a zero budget (``B == 0``) gives zeros.
    """
    S = np.asarray(subsets, dtype=np.int64)
    if S.ndim == 1:
        S = S[None, :]
    if S.shape[1] == 0:
        z = np.zeros(S.shape[0])
        return {
            "unique_clusters": z,
            "mean_cluster_size": z,
            "mean_inverse_size": z,
            **({"phi": z} if coverage is not None else {}),
        }
    return coverage_exposure(cluster_ids, S, coverage).columns()


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
    """Markdown table ``method × (unique clusters, mean cluster size, mean 1/size, Φ)``; cells are the mean
    over runs ± population std of the per-run means. ``table[method][seed] = summarize_coverage(...)``."""
    lines = [
        "| method | unique clusters | mean cluster size | mean 1/size | Φ | runs |",
        "|---|---|---|---|---|---|",
    ]
    for method, by_seed in table.items():
        runs = list(by_seed.values())
        cells = [
            _fmt([r.get(k) for r in runs])
            for k in ("unique_clusters", "mean_cluster_size", "mean_inverse_size", "phi")
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {len(runs)} |")
    return "\n".join(lines) + "\n"


def label_agreement_markdown(agreement: Dict[str, Dict[str, Any]]) -> str:
    """Markdown table ``method × (share of demonstrations with the query's label, CI, queries)`` from
    :func:`ucs.evaluation.summary.label_agreement`; empty when no method has labelled queries."""
    if not agreement:
        return ""
    lines = [
        "| method | demonstrations with the query's label (%) | 95% CI (queries) | queries |",
        "|---|---|---|---|",
    ]
    for method, a in agreement.items():
        lo, hi = a["ci"]
        lines.append(
            f"| {method} | {100 * a['mean']:.1f} | [{100 * lo:.1f}, {100 * hi:.1f}] | {a['n_queries']} |"
        )
    return "\n".join(lines) + "\n"

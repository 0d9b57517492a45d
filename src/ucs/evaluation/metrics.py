"""Accuracy aggregation over runs and a bootstrap confidence interval over queries."""

from __future__ import annotations

import numpy as np

__all__ = ["mean_std", "bootstrap_ci"]


def mean_std(values: "np.ndarray | list[float]") -> tuple[float, float]:
    """Mean and **population** standard deviation (``ddof=0``, as the paper reports) of per-run scores."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError("mean_std needs at least one value")
    return float(v.mean()), float(v.std(ddof=0))


def bootstrap_ci(
    correct: np.ndarray,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    chunk: int = 256,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean accuracy, resampling **queries**.

    Parameters
    ----------
    correct : array of shape (n_runs, n_queries) or (n_queries,)
        0/1 correctness; every run answers the same queries, so one resample of query indices is applied
        to all runs (the statistic is the accuracy averaged over runs).
    n_boot : int
        Bootstrap resamples.
    confidence : float
        Two-sided level, e.g. 0.95.
    seed : int
        Seed of the resampling (deterministic).

    Notes
    -----
    Time O(n_boot · n_queries), memory O(chunk · n_queries): resamples are drawn in chunks.
    """
    c = np.asarray(correct, dtype=np.float64)
    if c.ndim == 1:
        c = c[None, :]
    if c.ndim != 2 or c.shape[1] == 0:
        raise ValueError(f"correct must have shape (n_runs, n_queries) with n_queries > 0, got {c.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    per_query = c.mean(axis=0)
    q = per_query.shape[0]
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot, dtype=np.float64)
    for start in range(0, n_boot, chunk):
        stop = min(start + chunk, n_boot)
        idx = rng.integers(0, q, size=(stop - start, q))
        stats[start:stop] = per_query[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)

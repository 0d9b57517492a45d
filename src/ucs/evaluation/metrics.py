"""Accuracy aggregation over runs and bootstrap confidence intervals over queries (one method, or a paired
difference of two methods on the same queries)."""

from __future__ import annotations

import numpy as np

__all__ = ["mean_std", "bootstrap_ci", "paired_bootstrap_ci"]


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
    per_query = _per_query(correct, "correct")
    _check_boot(n_boot, confidence)
    return _percentile_bootstrap(per_query, n_boot, confidence, seed, chunk)


def paired_bootstrap_ci(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    chunk: int = 256,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the accuracy difference ``a − b`` of two methods on the **same** queries.

    Each resample draws query indices once and applies them to both methods, so the interval reflects how
    consistently ``a`` beats ``b`` query by query. It is much narrower than the two methods' own intervals
    suggest when their answers are correlated (the usual case: the same model, the same queries); an interval
    that excludes 0 is evidence of a difference, overlapping single-method intervals are not evidence of none.

    Parameters
    ----------
    correct_a, correct_b : arrays of shape (n_runs, n_queries) or (n_queries,)
        0/1 correctness (or per-query accuracies averaged over runs) of the two methods, columns aligned by
        query; the run counts may differ.
    n_boot, confidence, seed, chunk
        As in :func:`bootstrap_ci`.

    Notes
    -----
    Time O(n_boot · n_queries), memory O(chunk · n_queries).
    """
    a = _per_query(correct_a, "correct_a")
    b = _per_query(correct_b, "correct_b")
    if a.shape != b.shape:
        raise ValueError(
            f"correct_a and correct_b must cover the same queries, got {a.shape[0]} and {b.shape[0]}"
        )
    _check_boot(n_boot, confidence)
    return _percentile_bootstrap(a - b, n_boot, confidence, seed, chunk)


def _per_query(correct: np.ndarray, name: str) -> np.ndarray:
    c = np.asarray(correct, dtype=np.float64)
    if c.ndim == 1:
        c = c[None, :]
    if c.ndim != 2 or c.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n_runs, n_queries) with n_queries > 0, got {c.shape}")
    return c.mean(axis=0)


def _check_boot(n_boot: int, confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")


def _percentile_bootstrap(
    per_query: np.ndarray, n_boot: int, confidence: float, seed: int, chunk: int
) -> tuple[float, float]:
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

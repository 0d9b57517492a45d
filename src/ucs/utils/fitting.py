"""The longest leading part of a sequence that fits a budget: how a prompt, or an MDL prefix, keeps the
demonstrations a model's context can hold.

Both drop demonstrations from the end, so the question is always "how many leading items fit?" for a test
that holds up to some count and fails beyond it (a prompt's token count grows with each demonstration).
"""

from __future__ import annotations

from typing import Callable

__all__ = ["longest_fitting_prefix"]


def longest_fitting_prefix(n: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``0..n`` with ``fits(k)``, for a ``fits`` that is true up to some ``k`` and false
    beyond it; ``fits(0)`` is taken as true (a caller that may fail even with nothing checks that itself).

    ``fits(n)`` is asked first, so a whole sequence that fits costs one call; otherwise a binary search over
    ``0..n-1``: O(log n) calls of ``fits``.
    """
    if n < 0:
        raise ValueError(f"n must be a non-negative count, got {n}")
    if n == 0 or fits(n):
        return n
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo

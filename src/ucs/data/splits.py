"""Seeded splits and the test-set protocol of the paper (SPEC §5).

- :func:`pool_test_split` cuts an unsplit set (BBEH, a single user file) into pool and test.
- :class:`TestProtocol` draws the evaluation queries **once** (seed 42; 500 for intent datasets, 40 for
  BBEH) so that every run and every method answers the same queries, and lists the run seeds (42, 43, 44)
  that re-fit clustering and re-seed selectors.

All draws use :func:`numpy.random.default_rng` with an explicit seed; nothing touches global RNG state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ucs.data.dataset import Dataset, DatasetError

__all__ = ["pool_test_split", "draw_test_indices", "TestProtocol", "DEFAULT_TEST_SIZE", "PAPER_RUN_SEEDS"]

#: Test-set size of the paper's protocol per task kind.
DEFAULT_TEST_SIZE = {"intent": 500, "reasoning": 40}
#: Run seeds of the paper's three runs.
PAPER_RUN_SEEDS = (42, 43, 44)


def pool_test_split(n: int, pool_fraction: float = 0.8, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of ``range(n)`` into pool and test index arrays (each sorted ascending).

    The pool gets ``round(n * pool_fraction)`` items. ``pool_fraction=0.8`` is the paper's 80/20 split;
    ``2/3`` reproduces the authors' code. Time O(n).
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2 to split into pool and test, got {n!r}")
    if not 0.0 < float(pool_fraction) < 1.0:
        raise ValueError(f"pool_fraction must be in (0, 1), got {pool_fraction!r} (0.8 = the paper's 80/20)")
    n_pool = int(round(n * float(pool_fraction)))
    n_pool = min(max(n_pool, 1), n - 1)
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[:n_pool]), np.sort(perm[n_pool:])


def draw_test_indices(n_available: int, size: int | None, seed: int = 42) -> np.ndarray:
    """``size`` distinct indices of ``range(n_available)``, drawn without replacement with ``seed``, sorted.

    ``size=None`` or ``size >= n_available`` returns every index (the whole test split).
    """
    if n_available <= 0:
        raise DatasetError("the test split is empty: there is nothing to draw evaluation queries from")
    if size is None or size >= n_available:
        return np.arange(n_available, dtype=np.int64)
    if not isinstance(size, (int, np.integer)) or size <= 0:
        raise ValueError(f"test_size must be a positive integer or None, got {size!r}")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_available, size=int(size), replace=False)).astype(np.int64)


@dataclass(frozen=True)
class TestProtocol:
    """The paper's evaluation protocol: which test queries, which run seeds.

    Parameters
    ----------
    test_size : int or None
        Number of test queries; ``None`` → 500 for intent tasks, 40 for reasoning tasks (SPEC §5).
        Larger than the test split → the whole split.
    test_seed : int
        Seed of the one-time draw of the test queries (42).
    run_seeds : tuple of int
        One run per seed (42, 43, 44): clustering is re-fitted and selectors re-seeded per run.
    """

    __test__ = False  # not a pytest test class

    test_size: int | None = None
    test_seed: int = 42
    run_seeds: tuple[int, ...] = PAPER_RUN_SEEDS

    def __post_init__(self) -> None:
        if self.test_size is not None and (
            not isinstance(self.test_size, (int, np.integer)) or self.test_size <= 0
        ):
            raise ValueError(f"test_size must be a positive integer or None, got {self.test_size!r}")
        seeds = tuple(int(s) for s in self.run_seeds)
        if not seeds:
            raise ValueError("run_seeds must name at least one seed, e.g. (42, 43, 44)")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"run_seeds must be distinct, got {seeds}")
        object.__setattr__(self, "run_seeds", seeds)

    def size_for(self, dataset: Dataset) -> int:
        return int(self.test_size if self.test_size is not None else DEFAULT_TEST_SIZE[dataset.task])

    def test_indices(self, dataset: Dataset) -> np.ndarray:
        """Indices into ``dataset.test`` of the evaluation queries (identical for every run and method)."""
        return draw_test_indices(len(dataset.test), self.size_for(dataset), self.test_seed)

    def apply(self, dataset: Dataset) -> Dataset:
        """``dataset`` with its test split restricted to the protocol's queries (recorded in ``info``)."""
        return dataset.with_test(self.test_indices(dataset))

"""Row sharding: contiguous ranges over a pool, and shards held in memory or as ``.npy`` files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Union

import numpy as np
from numpy.typing import NDArray

from ucs.utils.io import load_npy

__all__ = ["shard_ranges", "check_shard_size", "load_shard", "ShardSource"]

#: A shard as a task receives it: an array, or the path of a ``.npy`` file a worker can read.
ShardSource = Union[np.ndarray, str, "os.PathLike[str]"]


def check_shard_size(shard_size: Any, name: str = "shard_size") -> int:
    """Validate a positive integer shard size."""
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"{name} must be a positive integer (rows per shard); got {shard_size!r}")
    return int(shard_size)


def shard_ranges(n: int, shard_size: int) -> NDArray[np.int64]:
    """Contiguous row ranges ``[start, stop)`` covering ``0 .. n-1``, each ``shard_size`` long but the last.

    Returns
    -------
    ranges : ndarray of shape (n_shards, 2), int64
        ``n_shards = ceil(n / shard_size)`` (zero rows for ``n = 0``).
    """
    shard_size = check_shard_size(shard_size)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer; got {n!r}")
    starts = np.arange(0, int(n), shard_size, dtype=np.int64)
    return np.stack([starts, np.minimum(starts + shard_size, int(n))], axis=1).reshape(-1, 2)


def load_shard(source: ShardSource, mmap: bool = False) -> np.ndarray:
    """The array of a shard: ``source`` itself, or the ``.npy`` file it names (never unpickled)."""
    if isinstance(source, (str, os.PathLike)):
        if mmap:
            return np.load(Path(source), mmap_mode="r", allow_pickle=False)
        return load_npy(source)
    return np.asarray(source)

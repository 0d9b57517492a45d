"""Checkpoints of one long embedding pass, so that an interrupted pass resumes where it stopped.

An embedder that exposes ``batch_order(texts)`` (the batches its ``embed`` forms, as row-index arrays in
processing order) can embed the texts of consecutive batches separately and get the same rows, bit for
bit. :func:`plan_parts` groups those batches into parts of at least ``rows`` rows; :class:`PassCheckpoints`
keeps each finished part under ``<directory>/<i:05d>.npy`` with ``<i:05d>.json`` beside it holding the
SHA-256 of the part's row indices and of its array. Both are written atomically, array first; a part
whose manifest, indices, shape or content hash does not match is treated as missing and recomputed.

Notation: ``n`` texts, ``d`` the embedding width, ``P`` parts.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from ucs.utils.io import atomic_save_npy, atomic_write_json, hash_array, load_verified_npy

__all__ = ["PassCheckpoints", "plan_parts"]

_FORMAT = 1


def plan_parts(batches: Sequence[np.ndarray], n: int, rows: int) -> List[np.ndarray]:
    """Concatenate consecutive ``batches`` into parts of at least ``rows`` rows (the last may be smaller).

    Raises ``ValueError`` unless the batches partition ``range(n)``: a ``batch_order`` that skips or
    repeats a row would leave rows unset. O(n log n).
    """
    if rows < 1:
        raise ValueError(f"rows must be a positive integer, got {rows!r}")
    flat = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches] or [np.zeros(0, np.int64)])
    if flat.shape != (n,) or not np.array_equal(np.sort(flat), np.arange(n)):
        raise ValueError(
            f"batch_order must return batches that partition range({n}); "
            f"got {flat.size} indices covering {np.unique(flat).size} distinct rows"
        )
    parts: List[np.ndarray] = []
    current: List[np.ndarray] = []
    size = 0
    for b in batches:
        current.append(np.asarray(b, dtype=np.int64))
        size += len(b)
        if size >= rows:
            parts.append(np.concatenate(current))
            current, size = [], 0
    if current:
        parts.append(np.concatenate(current))
    return parts


def _hash_indices(idx: np.ndarray) -> str:
    return hash_array(np.asarray(idx, dtype="<i8"))


class PassCheckpoints:
    """The finished parts of one embedding pass, in ``directory`` (created on the first :meth:`save`).

    Parameters
    ----------
    directory : Path
        One directory per pass; the caller names it after the pass's cache key, so parts of another
        model or other texts are never read.

    Notes
    -----
    :meth:`load` reads and hashes one part, O(|part| · d); :meth:`save` writes it, the same.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _paths(self, i: int) -> "tuple[Path, Path]":
        return self.directory / f"{i:05d}.npy", self.directory / f"{i:05d}.json"

    def load(self, i: int, idx: np.ndarray) -> Optional[np.ndarray]:
        """Part ``i``'s array of shape ``(len(idx), d)``, or ``None`` when absent, damaged or of other
        rows."""
        entry = load_verified_npy(*self._paths(i), fmt=_FORMAT)
        if entry is None:
            return None
        manifest, arr = entry
        if (
            manifest.get("rows_sha256") != _hash_indices(idx)
            or arr.ndim != 2
            or arr.shape[0] != len(idx)
            or arr.dtype != np.float32
        ):
            return None
        return arr

    def save(self, i: int, idx: np.ndarray, arr: np.ndarray) -> None:
        """Store part ``i`` (rows ``idx``): the array first, then its manifest, both atomically."""
        npy, man = self._paths(i)
        atomic_save_npy(npy, arr)
        atomic_write_json(
            man,
            {
                "format": _FORMAT,
                "rows": int(len(idx)),
                "rows_sha256": _hash_indices(idx),
                "shape": list(arr.shape),
                "sha256": hash_array(arr),
            },
        )

    def clear(self) -> None:
        """Remove every part (once the whole matrix is stored elsewhere)."""
        shutil.rmtree(self.directory, ignore_errors=True)

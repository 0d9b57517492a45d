"""Verification of artifacts read back from disk, and what happens to a damaged one.

Every cached array the pipeline reads back (cluster labels, selections) is written with
:func:`save_checked_npy`: the ``.npy`` (atomically) and then a ``<name>.sha256`` sidecar holding
:func:`~ucs.utils.io.hash_array` of it. :func:`load_checked_npy` verifies the sidecar, and optionally the
shape and value range, before returning the array. A damaged file (flipped bytes, truncation, an edited value,
a missing or mismatching sidecar) is never used and never overwritten in place: it is renamed
``<name>.damaged-<timestamp>`` with :func:`move_aside`, a :class:`DamagedFileWarning` names it, and the
caller recomputes it.

Cost: one SHA-256 pass over the array's bytes per load (``O(size)``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ucs.utils.io import atomic_save_npy, atomic_write_text, hash_array, load_npy

__all__ = [
    "DamagedFileWarning",
    "move_aside",
    "report_damage",
    "save_checked_npy",
    "load_checked_npy",
    "checksum_path",
    "seal_record",
    "sealed_record_ok",
    "SEAL_KEY",
]


class DamagedFileWarning(UserWarning):
    """A file read back failed verification; it was skipped or moved aside and will be recomputed."""


def report_damage(message: str) -> None:
    """Warn (once per message) that a file failed verification."""
    warnings.warn(message, DamagedFileWarning, stacklevel=3)


def move_aside(path: "str | os.PathLike[str]", tag: str = "damaged") -> Path:
    """Rename ``path`` to ``<path>.<tag>-<UTC timestamp>`` (a counter is added if taken); returns the new
    path."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.{tag}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{tag}-{stamp}-{n}")
    os.replace(path, target)
    return target


def checksum_path(path: "str | os.PathLike[str]") -> Path:
    """The sidecar of ``path`` holding its content hash."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def save_checked_npy(path: "str | os.PathLike[str]", array: np.ndarray) -> Path:
    """Save ``array`` atomically, then its content hash (a crash in between leaves an unverified = damaged
    file)."""
    arr = np.ascontiguousarray(array)
    atomic_save_npy(path, arr)
    atomic_write_text(checksum_path(path), hash_array(arr) + "\n")
    return Path(path)


def load_checked_npy(
    path: "str | os.PathLike[str]",
    what: str,
    *,
    shape: Optional[Sequence[int]] = None,
    min_value: Optional[int] = None,
    max_value: Optional[int] = None,
    adopt_unverified: bool = False,
) -> Optional[np.ndarray]:
    """The verified array at ``path``, or ``None`` (absent, or damaged: moved aside with a warning).

    Parameters
    ----------
    what : str
        What the file holds, for the warning ("cluster labels", "selection of dpp (seed 42)").
    shape : sequence of int, optional
        Required shape; ``-1`` leaves a dimension free.
    min_value, max_value : int, optional
        Inclusive bounds of the values (pool indices, cluster ids).
    adopt_unverified : bool
        A file without a checksum (written before checksums existed) that passes the shape and range checks
        is used and its checksum written, instead of being recomputed. For artifacts that are expensive to
        recompute (MDL selections).
    """
    path = Path(path)
    if not path.is_file():
        return None
    side = checksum_path(path)
    problem = None
    arr = None
    try:
        arr = load_npy(path)
        want = side.read_text(encoding="utf-8").strip() if side.is_file() else None
        if want is None and not adopt_unverified:
            problem = "its checksum file is missing (written by an older version or interrupted)"
        elif want is not None and hash_array(arr) != want:
            problem = "its content does not match its checksum"
        elif shape is not None and (
            arr.ndim != len(shape) or any(s not in (-1, a) for s, a in zip(shape, arr.shape))
        ):
            problem = f"it has shape {arr.shape}, expected {tuple(shape)}"
        elif arr.size and min_value is not None and arr.min() < min_value:
            problem = f"it holds values below {min_value}"
        elif arr.size and max_value is not None and arr.max() > max_value:
            problem = f"it holds values above {max_value}"
    except (OSError, ValueError, EOFError) as exc:
        problem = f"it cannot be read ({exc})"
    if problem is None:
        if not side.is_file():
            atomic_write_text(side, hash_array(arr) + "\n")
        return arr
    moved = move_aside(path)
    if side.is_file():
        move_aside(side)
    report_damage(
        f"{what} at {path} failed verification: {problem}; moved aside to {moved.name} and recomputed"
    )
    return None


#: Key under which :func:`seal_record` stores a JSON record's own SHA-256.
SEAL_KEY = "sha256"


def _record_digest(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != SEAL_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_record(record: dict) -> dict:
    """``record`` with its own SHA-256 (of its canonical JSON, this key left out) under :data:`SEAL_KEY`.

    For metadata files (a manifest that holds the checksums of the other files): editing any value by hand, or
    removing the seal, is then detected by :func:`sealed_record_ok`. O(size of the record).
    """
    return {**{k: v for k, v in record.items() if k != SEAL_KEY}, SEAL_KEY: _record_digest(record)}


def sealed_record_ok(record: object) -> bool:
    """Whether ``record`` is a dict carrying a seal that matches its content."""
    return (
        isinstance(record, dict)
        and isinstance(record.get(SEAL_KEY), str)
        and record[SEAL_KEY] == _record_digest(record)
    )

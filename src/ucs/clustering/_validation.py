"""Input and parameter checks shared by the clustering modules.

Every check raises a :class:`ValueError` that names the offending parameter and says how to
fix it, so bad input never reaches numpy/scipy/faiss internals.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["check_embeddings", "check_quantile", "check_int", "check_float", "check_choice"]


def check_embeddings(E: ArrayLike, name: str = "E", min_samples: int = 2) -> NDArray[np.floating]:
    """Validate an embedding matrix and return it as a C-contiguous float array.

    float32 input stays float32 (the pipeline is float32-safe and twice as fast); every other
    numeric dtype becomes float64.

    Raises
    ------
    ValueError
        Not 2-D, too few rows, zero columns, non-numeric, or NaN/inf entries (the message lists
        the first offending rows).
    """
    arr = np.asarray(E)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must be a numeric array of shape (n_samples, n_features); got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        hint = (
            " Use E.reshape(-1, 1) for a single feature or E.reshape(1, -1) for a single sample."
            if arr.ndim == 1
            else ""
        )
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {arr.shape}.{hint}")
    n, d = arr.shape
    if d < 1:
        raise ValueError(f"{name} has no features (shape {arr.shape})")
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} row{'' if n == 1 else 's'} (one per item); at least {min_samples} items "
            "are needed: give a larger pool"
        )
    dtype = np.float32 if arr.dtype == np.float32 else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ValueError(
            f"{name} contains NaN or inf in {bad.size} row(s), e.g. rows {bad[:5].tolist()}; "
            "drop or re-embed those items before clustering"
        )
    return arr


def check_quantile(q: Any, name: str = "dbscan_q") -> float:
    """``q`` must be a real number strictly inside (0, 1)."""
    if (
        isinstance(q, bool)
        or not isinstance(q, numbers.Real)
        or not np.isfinite(q)
        or not 0.0 < float(q) < 1.0
    ):
        raise ValueError(f"{name} must be a quantile strictly between 0 and 1 (e.g. 0.01); got {q!r}")
    return float(q)


def check_int(value: Any, name: str, low: int = 1, allow_none: bool = False) -> "int | None":
    """An integer ``>= low`` (``None`` allowed when ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def check_float(value: Any, name: str, low: float = 0.0, strict: bool = False) -> float:
    """A finite real ``>= low`` (``> low`` when ``strict``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = float(value) > low if strict else float(value) >= low
    if not ok:
        op = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {op} {low}; got {value!r}")
    return float(value)


def check_choice(value: Any, name: str, choices: "tuple[str, ...]") -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return str(value)

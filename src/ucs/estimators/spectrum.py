"""Cluster spectra: multiplicities and frequency-of-frequencies.

Notation (SPEC §3): for a subset ``S`` of pool items with cluster ids ``c(i)``,
``n_u(S)`` is the multiplicity of cluster ``u`` in ``S``; the *spectrum*
``f_s(S) = |{u : n_u(S) = s}|``; ``K_seen(S) = |{u : n_u(S) > 0}|``.

Spectra are returned as integer arrays indexed by ``s`` with ``f[0] == 0``, so
``f[s]`` is the number of clusters seen exactly ``s`` times.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "validate_cluster_ids",
    "validate_subset",
    "multiplicities",
    "spectrum",
    "spectrum_from_multiplicities",
    "k_seen",
]


#: The largest id accepted (values beyond int64 would wrap around to negative numbers when converted).
_MAX_ID = 2**62


def validate_cluster_ids(cluster_ids: ArrayLike, name: str = "cluster_ids") -> NDArray[np.int64]:
    """Check and convert an array of cluster ids.

    Parameters
    ----------
    cluster_ids : array-like of shape (n,)
        Non-negative integer cluster ids (integral floats such as ``3.0`` are accepted).
    name : str
        Parameter name used in error messages.

    Returns
    -------
    ndarray of shape (n,), dtype int64

    Raises
    ------
    ValueError
        If the input is not 1-D, contains NaN/inf, non-integer or negative values.
    """
    arr = np.asarray(cluster_ids)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must contain integers; got non-numeric values") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of cluster ids; got shape {arr.shape}")
    if arr.dtype.kind == "b":
        raise ValueError(f"{name} must contain integer cluster ids, not booleans")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or inf; every item needs an integer cluster id")
        if not np.all(arr == np.round(arr)):
            raise ValueError(
                f"{name} must contain integers; got non-integer values such as "
                f"{arr[arr != np.round(arr)][0]!r}"
            )
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must contain integer cluster ids; got dtype {arr.dtype}")
    if arr.size and arr.dtype.kind in "fu" and arr.max() > _MAX_ID:
        raise ValueError(
            f"{name} contains {arr.max():.0f}, too large for an id (at most {_MAX_ID}); ids and indices "
            "count items, so they are below the number of items"
        )
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise ValueError(
            f"{name} must be non-negative; got {int(arr.min())}. Remap noise (-1) to fresh singleton ids "
            "first "
            "(ucs.clustering does this)"
        )
    return arr


def validate_subset(
    subset: ArrayLike, n_items: int, name: str = "subset", allow_empty: bool = True
) -> NDArray[np.int64]:
    """Check an array of pool indices against a pool of ``n_items`` items.

    Returns the indices as int64; an empty subset is allowed unless ``allow_empty=False``.
    """
    arr = np.asarray([] if subset is None else subset)
    if arr.size == 0:
        if not allow_empty:
            raise ValueError(f"{name} is empty; give at least one pool index")
        return np.zeros(0, dtype=np.int64)
    idx = validate_cluster_ids(arr.reshape(-1) if arr.ndim == 0 else arr, name=name)
    if idx.max() >= n_items:
        raise ValueError(f"{name} contains index {int(idx.max())} but the pool has only {n_items} items")
    return idx


def multiplicities(ids: ArrayLike) -> NDArray[np.int64]:
    """Multiplicities ``n_u`` of the clusters present in ``ids``.

    Parameters
    ----------
    ids : array-like of shape (n,)
        Cluster ids of the items of a subset (repeats allowed).

    Returns
    -------
    ndarray of shape (K_seen,)
        Positive counts, one per distinct cluster, ordered by cluster id.

    Notes
    -----
    O(n log n) time (a sort), O(n) memory.
    """
    arr = validate_cluster_ids(ids, name="ids")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, counts = np.unique(arr, return_counts=True)
    return counts.astype(np.int64)


def spectrum_from_multiplicities(mult: ArrayLike, length: Optional[int] = None) -> NDArray[np.int64]:
    """Frequency-of-frequencies ``f`` from multiplicities.

    Parameters
    ----------
    mult : array-like of shape (K,)
        Non-negative multiplicities (zeros are ignored).
    length : int, optional
        Length of the returned array (``f[0]`` .. ``f[length-1]``); by default ``max(mult) + 1``.
        Bins beyond ``length - 1`` are dropped.

    Returns
    -------
    ndarray of shape (length,), dtype int64, with ``f[0] == 0``.
    """
    m = np.asarray(mult, dtype=np.int64)
    m = m[m > 0]
    if length is None:
        length = int(m.max()) + 1 if m.size else 1
    f = np.bincount(m, minlength=length)[:length].astype(np.int64)
    if f.size:
        f[0] = 0
    return f


def spectrum(ids: ArrayLike, length: Optional[int] = None) -> NDArray[np.int64]:
    """Spectrum ``f_s`` of the cluster ids of a subset.

    Parameters
    ----------
    ids : array-like of shape (n,)
        Cluster ids of the subset's items.
    length : int, optional
        See :func:`spectrum_from_multiplicities`.

    Returns
    -------
    ndarray, ``f[s]`` = number of clusters seen exactly ``s`` times; ``f[0] == 0``.

    Examples
    --------
    >>> spectrum([3, 3, 7, 9]).tolist()
    [0, 2, 1]
    """
    return spectrum_from_multiplicities(multiplicities(ids), length=length)


def k_seen(ids: ArrayLike) -> int:
    """Number of distinct clusters ``K_seen`` among ``ids``."""
    return int(multiplicities(ids).size)

"""Small array helpers shared by every floor."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["l2_normalize"]


def l2_normalize(x: Any, dtype: Any = np.float32) -> np.ndarray:
    """Row-wise ℓ2 normalisation of ``x`` (n, d) in ``dtype``; zero rows stay zero (their cosine with
    anything is 0). Cost O(n d)."""
    x = np.asarray(x, dtype=dtype)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0).astype(x.dtype, copy=False)

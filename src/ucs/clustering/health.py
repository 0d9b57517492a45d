"""Cluster health (SPEC §8): is a partition informative enough for a coverage prior to act on?

For a partition of ``N`` pool items into clusters of sizes ``n_1 >= n_2 >= ...``:

- **largest fraction** ``n_1 / N`` — a giant cluster makes every prompt "one cluster";
- **singleton fraction** ``#{c : n_c = 1} / N`` — a sea of singletons makes every prompt "all new";
- **effective number of clusters** ``exp(H)``, ``H = −Σ_c (n_c/N) ln(n_c/N)``: ``N`` for all
  singletons, ``1`` for one cluster;
- with gold labels ``y``: **AMI** (scikit-learn's ``adjusted_mutual_info_score``) and **purity**
  ``Σ_c max_y |c ∩ y| / N``. Purity alone rewards singletons (all-singletons has purity 1), so it is
  read with AMI, which is 0 for a random partition and 1 for the labels themselves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

import numpy as np
from numpy.typing import ArrayLike

from ucs.defaults import GIANT_FRACTION

__all__ = ["ClusterHealth", "cluster_health", "GIANT_FRACTION"]


@dataclass(frozen=True)
class ClusterHealth:
    """Health figures of one partition (see the module docstring for the definitions).

    Attributes
    ----------
    n_items, n_clusters, largest_size, n_singletons : int
    largest_fraction, singleton_fraction, effective_clusters : float
    ami, purity : float or None
        Against the gold labels, when they were given.
    """

    n_items: int
    n_clusters: int
    largest_size: int
    n_singletons: int
    largest_fraction: float
    singleton_fraction: float
    effective_clusters: float
    ami: Optional[float] = None
    purity: Optional[float] = None

    @property
    def has_giant(self) -> bool:
        """Whether one cluster holds more than :data:`GIANT_FRACTION` of the pool."""
        return self.largest_fraction > GIANT_FRACTION

    def line(self) -> str:
        """One line for terminals and logs."""
        s = (
            f"{self.n_clusters} clusters over {self.n_items} items; largest {self.largest_size} "
            f"({self.largest_fraction:.1%}), singletons {self.singleton_fraction:.1%}, "
            f"effective clusters {self.effective_clusters:.1f}"
        )
        if self.ami is not None:
            s += f", label AMI {self.ami:.3f}, purity {self.purity:.3f}"
        return s

    def warning(self) -> Optional[str]:
        """A warning sentence when the partition has a giant cluster, else ``None``."""
        if not self.has_giant:
            return None
        return (
            f"one cluster holds {self.largest_fraction:.0%} of the pool ({self.largest_size} of "
            f"{self.n_items}): "
            "the coverage prior has little to act on. Try clusterer.method='kmeans' or 'auto' "
            "(docs/clustering.md)."
        )

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def cluster_health(labels: ArrayLike, y: Optional[ArrayLike] = None) -> ClusterHealth:
    """Health figures of the partition ``labels`` (optionally against gold labels ``y``).

    Parameters
    ----------
    labels : array-like of shape (N,)
        Non-negative integer cluster ids (noise already remapped to singletons).
    y : array-like of shape (N,), optional
        Gold labels of the same items (any hashable values).

    Returns
    -------
    ClusterHealth

    Notes
    -----
    Time ``O(N log N)`` (AMI builds a contingency table of clusters × labels, sparse); memory ``O(N)``.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0:
        raise ValueError(f"labels must be a non-empty 1-D array of cluster ids; got shape {lab.shape}")
    if lab.dtype.kind not in "iu" or lab.min() < 0:
        raise ValueError(
            "labels must be non-negative integer cluster ids (remap noise with ucs.clustering.remap_noise)"
        )
    n = int(lab.size)
    sizes = np.bincount(lab.astype(np.int64))
    sizes = sizes[sizes > 0]
    p = sizes / n
    ami = purity = None
    if y is not None:
        y_arr = np.asarray(y)
        if y_arr.shape != (n,):
            raise ValueError(f"y must have one gold label per item, shape ({n},); got {y_arr.shape}")
        ami, purity = _label_agreement(lab, y_arr)
    return ClusterHealth(
        n_items=n,
        n_clusters=int(sizes.size),
        largest_size=int(sizes.max()),
        n_singletons=int((sizes == 1).sum()),
        largest_fraction=float(sizes.max() / n),
        singleton_fraction=float((sizes == 1).sum() / n),
        effective_clusters=float(np.exp(-(p * np.log(p)).sum())),
        ami=ami,
        purity=purity,
    )


def _label_agreement(lab: np.ndarray, y: np.ndarray) -> "tuple[float, float]":
    from sklearn.metrics import adjusted_mutual_info_score
    from sklearn.metrics.cluster import contingency_matrix

    _, y_codes = np.unique(y.astype(str) if y.dtype == object else y, return_inverse=True)
    y_codes = y_codes.ravel()
    ami = float(adjusted_mutual_info_score(y_codes, lab))
    table = contingency_matrix(lab, y_codes, sparse=True)
    purity = float(table.max(axis=1).toarray().sum() / lab.size)
    return ami, purity

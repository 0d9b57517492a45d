"""``method="auto"``: choose the discretisation from label-free criteria (SPEC §8).

The rule, in two steps, on the unit-normalised representation the clusterer would cluster:

1. **Admissible spectra.** A coverage prior reads the cluster spectrum of a budget-sized subset. A
   partition with a giant cluster (largest fraction above ``max_largest``, 5 %) makes most prompts
   "one cluster"; one that is mostly singletons (singleton fraction above ``max_singletons``, 50 %)
   makes every prompt "all new". Neither leaves the estimator anything to read, so both are dropped.
2. **Separation.** Among the admissible candidates, the one with the largest mean cosine silhouette
   on a seeded sample of at most ``sample`` items wins (scikit-learn's ``silhouette_score``; items in
   singleton clusters score 0, so a partition cannot win by shattering the pool). Ties go to the
   earlier candidate.

If no candidate is admissible, the one with the smallest largest-cluster fraction wins. Labels are
never used. The candidates are the paper's ``dict_dbscan`` cut, DBSCAN with a density requirement,
HDBSCAN, and spherical k-means at ``⌈√n⌉ / 2``, ``⌈√n⌉`` and ``2 ⌈√n⌉`` clusters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from .health import cluster_health
from .partition import default_n_clusters

__all__ = ["AutoChoice", "auto_candidates", "choose_partition", "MAX_LARGEST", "MAX_SINGLETONS"]

#: Admissibility thresholds of the rule (module docstring).
MAX_LARGEST = 0.05
MAX_SINGLETONS = 0.5
SILHOUETTE_SAMPLE = 3000


@dataclass
class AutoChoice:
    """What ``auto`` tried and what it chose.

    Attributes
    ----------
    chosen : dict
        Parameters of the winner (``method`` plus its own parameter).
    candidates : list of dict
        One row per candidate: its parameters, health figures, admissibility and silhouette.
    """

    chosen: Dict[str, Any]
    candidates: List[Dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def auto_candidates(n: int) -> List[Dict[str, Any]]:
    """The candidate settings for a pool of ``n`` items (module docstring)."""

    k = default_n_clusters(n)
    cands: List[Dict[str, Any]] = [
        {"method": "dict_dbscan", "min_samples": 1},
        {"method": "dict_dbscan", "min_samples": 5},
        {"method": "dict_hdbscan", "hdbscan_min_cluster_size": 5},
    ]
    for kk in sorted({max(2, k // 2), k, min(n, 2 * k)}):
        cands.append({"method": "dict_kmeans", "n_clusters": kk})
    return [c for c in cands if c["method"] != "dict_hdbscan" or n > 5]


def choose_partition(
    U: NDArray[np.floating],
    candidates: List[Dict[str, Any]],
    cluster_fn: Callable[[Dict[str, Any]], NDArray[np.int64]],
    random_state: Optional[int] = None,
    max_largest: float = MAX_LARGEST,
    max_singletons: float = MAX_SINGLETONS,
    sample: int = SILHOUETTE_SAMPLE,
) -> Tuple[AutoChoice, NDArray[np.int64]]:
    """Run every candidate through ``cluster_fn`` and apply the rule of the module docstring.

    Parameters
    ----------
    U : ndarray of shape (n, d)
        Unit rows the candidates cluster (used for the silhouette).
    candidates : list of dict
        Parameter sets, e.g. from :func:`auto_candidates`.
    cluster_fn : callable
        ``cluster_fn(params) -> labels`` of shape (n,).

    Returns
    -------
    choice : AutoChoice
    labels : ndarray of shape (n,)
        The winner's labels.

    Notes
    -----
    Time: the candidates' own cost plus ``O(s² d)`` per silhouette, ``s = min(n, sample)``.
    """
    from sklearn.metrics import silhouette_score

    n = U.shape[0]
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(n, size=min(n, sample), replace=False))
    rows_table: List[Dict[str, Any]] = []
    results: List[NDArray[np.int64]] = []
    for params in candidates:
        lab = cluster_fn(params)
        h = cluster_health(lab)
        admissible = h.largest_fraction <= max_largest and h.singleton_fraction <= max_singletons
        sub = lab[rows]
        n_sub = np.unique(sub).size
        sil = (
            float(silhouette_score(U[rows], sub, metric="cosine")) if 1 < n_sub < rows.size else float("nan")
        )
        rows_table.append({**params, "admissible": bool(admissible), "silhouette": sil, **_health_fields(h)})
        results.append(lab)
    best = _pick(rows_table)
    return AutoChoice(chosen=dict(candidates[best]), candidates=rows_table), results[best]


def _health_fields(h: Any) -> Dict[str, Any]:
    return {
        "clusters_found": h.n_clusters,
        "largest_fraction": h.largest_fraction,
        "singleton_fraction": h.singleton_fraction,
        "effective_clusters": h.effective_clusters,
    }


def _pick(rows: List[Dict[str, Any]]) -> int:
    ok = [i for i, r in enumerate(rows) if r["admissible"] and np.isfinite(r["silhouette"])]
    if ok:
        return max(ok, key=lambda i: (rows[i]["silhouette"], -i))
    return min(range(len(rows)), key=lambda i: (rows[i]["largest_fraction"], i))

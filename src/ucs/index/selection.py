"""What :meth:`ucs.SelectorIndex.select` returns: the demonstrations chosen for one query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

__all__ = ["IndexSelection"]


@dataclass(frozen=True)
class IndexSelection:
    """The demonstrations chosen for one query.

    Attributes
    ----------
    examples : list of dict
        The chosen examples in prompt order (copies; only ``example_keys`` when the caller asked for them).
    indices : ndarray (B,) int64
        Their positions in the index.
    scores : ndarray (B,) float64
        Each one's score when it was chosen (similarity, greedy gain, vote score; ``nan`` where none).
    cluster_ids : ndarray (B,) int64
        Their latent clusters.
    phi : float
        Coverage ``Φ`` of the subset under the index's unseen estimator.
    clusters_covered : int
        Distinct clusters among them.
    method : str
    query : str or None
        The text that was embedded for the query (``None`` for a query-independent selection).
    n_matched : int or None
        With ``where=``: how many examples the filter matched (``None`` without a filter).
    note : str or None
        Why fewer than ``k`` demonstrations came back (the filter matched fewer, or near-duplicates were
        dropped and no distinct replacement was left), else ``None``.
    """

    examples: List[Dict[str, Any]]
    indices: np.ndarray
    scores: np.ndarray
    cluster_ids: np.ndarray
    phi: float
    clusters_covered: int
    method: str
    query: Optional[str] = None
    extras: Dict[str, Any] = field(default_factory=dict)
    n_matched: Optional[int] = None
    note: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """JSON-friendly form (what a service would log to show which demonstrations were chosen)."""
        out = {
            "method": self.method,
            "query": self.query,
            "indices": self.indices.tolist(),
            "scores": [None if not np.isfinite(s) else float(s) for s in self.scores],
            "cluster_ids": self.cluster_ids.tolist(),
            "phi": self.phi,
            "clusters_covered": self.clusters_covered,
            "examples": self.examples,
        }
        if self.n_matched is not None:
            out["n_matched"] = self.n_matched
        if self.note is not None:
            out["note"] = self.note
        return out

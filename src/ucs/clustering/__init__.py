"""Latent clustering: embeddings to discrete cluster ids (SPEC §2).

Diagnostics of the clusters: SPEC §6.

Public API: :class:`LatentClusterer` (``dict_dbscan``, ``dbscan``, ``dict_argmax``, ``dict_kmeans``,
``kmeans``, ``dict_hdbscan``, ``auto``; ``recut``; ``save``/``load``), :func:`cluster_health` (SPEC
§8), :class:`JointLatentClusterer` (one set of ids from several embedding matrices of the same
pool), :func:`cluster_report` and :func:`coverage_exposure`.
"""

from __future__ import annotations

from .diagnostics import ClusterReport, CoverageExposure, cluster_report, coverage_exposure
from .auto import AutoChoice
from .estimator import LatentClusterer, remap_noise
from .health import ClusterHealth, cluster_health
from .joint import JointLatentClusterer
from .persistence import StaleLabelsError, load_clusterer, save_clusterer

__all__ = [
    "LatentClusterer",
    "JointLatentClusterer",
    "ClusterHealth",
    "cluster_health",
    "AutoChoice",
    "remap_noise",
    "cluster_report",
    "coverage_exposure",
    "ClusterReport",
    "CoverageExposure",
    "save_clusterer",
    "load_clusterer",
    "StaleLabelsError",
]

"""Reading a run folder: the runner's files and the pipeline's run files (:mod:`ucs.pipeline.run_files`).

Nothing here imports the pipeline or a model: a report can be built on any machine from the folder alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ucs.evaluation.records import read_records

__all__ = ["RunData", "load_run", "Demonstration"]


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _jsonl(path: Path) -> List[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class Demonstration:
    """One chosen demonstration: pool index, text, label, and its cluster's id and pool size."""

    index: int
    text: str
    label: str
    cluster: Optional[int]
    cluster_size: Optional[int]


@dataclass
class RunData:
    """Everything a report shows, as read from one run folder.

    Attributes
    ----------
    path : Path
    manifest : dict
        The runner's ``manifest.json`` (configuration key, versions, platform, status).
    summary : dict
        ``results.json`` (per-method accuracy, intervals, per-query accuracies).
    config : dict or None
        ``pipeline/config.json`` (the full :class:`~ucs.pipeline.PipelineConfig`).
    coverage : dict
        ``coverage.json``'s ``coverage`` table: ``{method: {seed: {unique_clusters, mean_cluster_size, phi, ...}}}``.
    label_agreement : dict
        ``coverage.json``'s ``label_agreement``: ``{method: {mean, ci, n_queries, per_query}}``, the share of
        demonstrations carrying the query's label (empty for folders written before it was recorded).
    records : list of dict
        ``records.jsonl``, one per (method, seed, query).
    pool_texts, pool_labels : list of str
        ``pipeline/pool.jsonl`` (empty for folders written before it existed).
    queries : list of dict
        ``pipeline/queries.jsonl``: ``{"query", "text", "gold"}``.
    clusters : dict
        ``pipeline/clusters.json`` (``q_by_method``, ``files``).
    projection : ndarray of shape (N, 2) or None
    timings : list of dict
        ``pipeline/timings.jsonl`` lines (plus a legacy ``timings.json`` as one line).
    """

    path: Path
    manifest: Dict[str, Any]
    summary: Dict[str, Any]
    config: Optional[Dict[str, Any]] = None
    coverage: Dict[str, Any] = field(default_factory=dict)
    label_agreement: Dict[str, Any] = field(default_factory=dict)
    records: List[dict] = field(default_factory=list)
    pool_texts: List[str] = field(default_factory=list)
    pool_labels: List[str] = field(default_factory=list)
    queries: List[dict] = field(default_factory=list)
    clusters: Dict[str, Any] = field(default_factory=dict)
    projection: Optional[np.ndarray] = None
    timings: List[dict] = field(default_factory=list)
    _ids: Dict[Any, np.ndarray] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ derived
    @property
    def methods(self) -> List[str]:
        """Evaluated methods in the order they were asked for (the manifest's), then any others."""
        have = list(self.summary.get("methods", {}))
        first = [m for m in self.manifest.get("methods", []) if m in have]
        return first + [m for m in have if m not in first]

    @property
    def seeds(self) -> List[int]:
        return [int(s) for s in self.manifest.get("seeds", {}).get("run_seeds", [])] or sorted(
            {int(r["seed"]) for r in self.records})

    @property
    def dataset_name(self) -> str:
        return str(self.summary.get("dataset") or self.manifest.get("key", {}).get("dataset", {}).get("name", "?"))

    def q_for(self, method: str) -> Optional[str]:
        """The clustering quantile (as written in ``clusters.json``) ``method``'s selections were made with."""
        q = self.clusters.get("q_by_method", {}).get(method, self.clusters.get("default_q"))
        return None if q is None else repr(float(q))

    def cluster_ids(self, seed: int, q: Optional[str] = None) -> Optional[np.ndarray]:
        """Cluster id of every pool item for run ``seed`` at quantile ``q`` (default: the configured one)."""
        if q is None:
            dq = self.clusters.get("default_q")
            q = None if dq is None else repr(float(dq))
        name = self.clusters.get("files", {}).get(str(int(seed)), {}).get(q) if q is not None else None
        if name is None:
            return None
        key = (int(seed), q)
        if key not in self._ids:
            self._ids[key] = np.load(self.path / "pipeline" / name, allow_pickle=False).astype(np.int64)
        return self._ids[key]

    def demonstrations(self, record: dict) -> List[Demonstration]:
        """The demonstrations of one record, with texts and clusters when the folder has them."""
        ids = self.cluster_ids(int(record["seed"]), self.q_for(record["method"]))
        sizes = None if ids is None else np.bincount(ids)
        out = []
        for i in record.get("selected", []):
            i = int(i)
            text = self.pool_texts[i] if i < len(self.pool_texts) else f"(pool item {i})"
            label = self.pool_labels[i] if i < len(self.pool_labels) else "?"
            c = None if ids is None else int(ids[i])
            out.append(Demonstration(i, text, label, c, None if c is None else int(sizes[c])))
        return out

    def query_text(self, q: int) -> str:
        return self.queries[q]["text"] if 0 <= q < len(self.queries) else f"(query {q})"


def load_run(run_dir: "str | os.PathLike[str]") -> RunData:
    """Read a run folder written by ``ucs evaluate``, ``ucs demo`` or a ``ucs reproduce`` cell.

    Raises
    ------
    FileNotFoundError
        When ``run_dir`` holds no ``manifest.json`` and ``results.json`` (not a run folder).
    """
    p = Path(run_dir)
    manifest, summary = _json(p / "manifest.json"), _json(p / "results.json")
    if manifest is None or summary is None:
        raise FileNotFoundError(f"{p} is not a run folder (it needs manifest.json and results.json, as written by "
                                "ucs evaluate, ucs demo --out or ucs reproduce)")
    d = p / "pipeline"
    pool = _jsonl(d / "pool.jsonl")
    timings = _jsonl(d / "timings.jsonl")
    legacy = _json(d / "timings.json")
    if legacy is not None:
        timings = [{"at": None, "timings": legacy}] + timings
    proj = d / "projection.npy"
    cov = _json(p / "coverage.json") or {}
    return RunData(
        path=p,
        manifest=manifest,
        summary=summary,
        config=_json(d / "config.json"),
        coverage=cov.get("coverage", {}),
        label_agreement=cov.get("label_agreement", {}),
        records=read_records(p / "records.jsonl") if (p / "records.jsonl").is_file() else [],
        pool_texts=[r["text"] for r in pool],
        pool_labels=[str(r["label"]) for r in pool],
        queries=_jsonl(d / "queries.jsonl"),
        clusters=_json(d / "clusters.json") or {},
        projection=np.load(proj, allow_pickle=False) if proj.is_file() else None,
        timings=timings,
    )

"""Reading a run folder: the runner's files and the pipeline's run files (:mod:`ucs.pipeline.run_files`), at
the paths :class:`~ucs.evaluation.run_folder.RunFolder` names.

Nothing here imports the pipeline or a model: a report can be built on any machine from the folder alone. The
report's readers are stricter than the runner's (every field it shows is type-checked, and a damaged file says
to rerun the command that wrote it rather than to start the folder over).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ucs.evaluation.run_folder import RunFolder

__all__ = ["RunData", "RunFolderError", "load_run", "Demonstration"]


class RunFolderError(ValueError):
    """A run folder's file is damaged or holds a field of an unexpected form; the message names file and
    field."""


def _json(path: Path, kind: type = dict) -> Any:
    """The JSON value of ``path`` (``None`` when absent); a damaged file or another top-level type is
    refused."""
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFolderError(
            f"{path} is not readable JSON ({exc}); it is damaged or truncated: rerun the "
            "command that wrote it"
        ) from exc
    if not isinstance(value, kind):
        raise RunFolderError(f"{path} holds a {type(value).__name__}, expected a JSON {kind.__name__}")
    return value


def _jsonl(path: Path, required: tuple = ()) -> List[dict]:
    """The objects of a JSON-lines file (``[]`` when absent); each must be an object with ``required``
    fields."""
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise RunFolderError(
                f"{path}, line {n} is not readable JSON ({exc}); it is damaged or truncated"
            ) from exc
        if not isinstance(row, dict) or any(k not in row for k in required):
            raise RunFolderError(f"{path}, line {n}: expected an object with the field(s) {list(required)}")
        out.append(row)
    return out


def _expect(value: Any, kind: "type | tuple", where: str) -> Any:
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RunFolderError(f"{where} is a {type(value).__name__}, expected a {names}")
    return value


def _check_run(f: RunFolder, manifest: dict, summary: dict) -> None:
    """The fields the report reads, with the types it reads them as."""
    _expect(manifest.get("methods", []), list, f"{f.manifest}: field 'methods'")
    seeds = _expect(manifest.get("seeds", {}), dict, f"{f.manifest}: field 'seeds'")
    _expect(seeds.get("run_seeds", []), list, f"{f.manifest}: field 'seeds.run_seeds'")
    _expect(manifest.get("key", {}), dict, f"{f.manifest}: field 'key'")
    methods = _expect(summary.get("methods", {}), dict, f"{f.results}: field 'methods'")
    for name, entry in methods.items():
        _expect(entry, dict, f"{f.results}: field 'methods.{name}'")


def _projection(path: Path, n_pool: int) -> Optional[np.ndarray]:
    if not path.is_file():
        return None
    try:
        proj = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise RunFolderError(
            f"{path} is not a readable .npy array ({exc}); it is damaged or truncated"
        ) from exc
    if (
        proj.ndim != 2
        or proj.shape[1] != 2
        or (n_pool and proj.shape[0] != n_pool)
        or proj.dtype.kind not in "fiu"
    ):
        raise RunFolderError(
            f"{path} has shape {proj.shape} and dtype {proj.dtype}; expected ({n_pool}, 2) numbers"
        )
    return proj


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
        ``coverage.json``'s ``coverage`` table: ``{method: {seed: {unique_clusters, mean_cluster_size,
        phi, ...}}}``.
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
    _scores: Dict[Any, List[Any]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ derived
    @property
    def folder(self) -> RunFolder:
        """The :class:`~ucs.evaluation.run_folder.RunFolder` this was read from."""
        return RunFolder(self.path)

    @property
    def methods(self) -> List[str]:
        """Evaluated methods in the order they were asked for (the manifest's), then any others."""
        have = list(self.summary.get("methods", {}))
        first = [m for m in self.manifest.get("methods", []) if m in have]
        return first + [m for m in have if m not in first]

    @property
    def seeds(self) -> List[int]:
        return [int(s) for s in self.manifest.get("seeds", {}).get("run_seeds", [])] or sorted(
            {int(r["seed"]) for r in self.records}
        )

    @property
    def dataset_name(self) -> str:
        return str(
            self.summary.get("dataset") or self.manifest.get("key", {}).get("dataset", {}).get("name", "?")
        )

    def q_for(self, method: str) -> Optional[str]:
        """The clustering quantile (as written in ``clusters.json``) ``method``'s selections were made
        with."""
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
            self._ids[key] = np.load(self.folder.diagnostics_dir / name, allow_pickle=False).astype(np.int64)
        return self._ids[key]

    def demonstrations(self, record: dict) -> List[Demonstration]:
        """The demonstrations of one record, with texts and clusters when the folder has them."""
        ids = self.cluster_ids(int(record["seed"]), self.q_for(record["method"]))
        sizes = None if ids is None else np.bincount(ids)
        out = []
        for i in record.get("selected", []):
            i = int(i)
            text = (
                self.pool_texts[i] if 0 <= i < len(self.pool_texts) else f"(pool item {i}, not in this pool)"
            )
            label = self.pool_labels[i] if 0 <= i < len(self.pool_labels) else "?"
            c = None if ids is None or not 0 <= i < len(ids) else int(ids[i])
            out.append(Demonstration(i, text, label, c, None if c is None else int(sizes[c])))
        return out

    def selection_scores(self, record: dict) -> Optional[List[float]]:
        """Each demonstration's score when it was chosen (similarity, greedy gain, vote score), read from
        ``pipeline/selections/<method>__seed<s>__<n>q.json`` when that file chose exactly the record's
        demonstrations; ``None`` otherwise (folders without it, or another selection)."""
        key = (record.get("method"), int(record.get("seed", -1)))
        if key not in self._scores:
            self._scores[key] = self._read_selection_files(*key)
        q, selected = int(record.get("query", -1)), [int(i) for i in record.get("selected", [])]
        for indices, scores, dependent in self._scores[key]:
            row = q if dependent else 0
            if 0 <= row < len(indices) and list(indices[row]) == selected and row < len(scores):
                return [float(x) if isinstance(x, (int, float)) else float("nan") for x in scores[row]]
        return None

    def _read_selection_files(self, method: Any, seed: int) -> List[Any]:
        if not isinstance(method, str):
            return []
        out = []
        for path in self.folder.selection_records(method, seed):
            try:
                data = _json(path)
            except RunFolderError:
                continue  # diagnostics only: a damaged file just leaves the scores out
            if (
                isinstance(data, dict)
                and isinstance(data.get("indices"), list)
                and isinstance(data.get("scores"), list)
            ):
                out.append((data["indices"], data["scores"], bool(data.get("query_dependent", True))))
        return out

    def query_text(self, q: int) -> str:
        return self.queries[q]["text"] if 0 <= q < len(self.queries) else f"(query {q})"


def load_run(run_dir: "str | os.PathLike[str]") -> RunData:
    """Read a run folder written by ``ucs evaluate``, ``ucs demo`` or a ``ucs reproduce`` cell.

    Raises
    ------
    FileNotFoundError
        When ``run_dir`` holds no ``manifest.json`` and ``results.json`` (not a run folder).
    RunFolderError
        When a file is damaged or a field has an unexpected form (the message names the file and the field).
    """
    f = RunFolder(run_dir)
    manifest, summary = _json(f.manifest), _json(f.results)
    if manifest is None or summary is None:
        raise FileNotFoundError(
            f"{f.path} is not a run folder (it needs {f.manifest.name} and {f.results.name}, as "
            "written by ucs evaluate, ucs demo --out or ucs reproduce)"
        )
    _check_run(f, manifest, summary)
    pool = _jsonl(f.pool, required=("text", "label"))
    timings = _jsonl(f.timings)
    legacy = _json(f.legacy_timings)
    if legacy is not None:
        timings = [{"at": None, "timings": legacy}] + timings
    cov = _json(f.coverage) or {}
    for name in ("coverage", "label_agreement"):
        _expect(cov.get(name, {}), dict, f"{f.coverage}: field {name!r}")
    return RunData(
        path=f.path,
        manifest=manifest,
        summary=summary,
        config=_json(f.config),
        coverage=cov.get("coverage", {}),
        label_agreement=cov.get("label_agreement", {}),
        records=f.read_records(),
        pool_texts=[r["text"] for r in pool],
        pool_labels=[str(r["label"]) for r in pool],
        queries=_jsonl(f.queries, required=("text",)),
        clusters=_json(f.clusters) or {},
        projection=_projection(f.projection, len(pool)),
        timings=timings,
    )

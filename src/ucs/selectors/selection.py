"""The :class:`Selection` result object returned by every selector."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ucs.utils.io import atomic_write_text

__all__ = ["Selection"]


@dataclass(frozen=True)
class Selection:
    """Demonstrations chosen for a batch of queries, with per-query diagnostics.

    Attributes
    ----------
    indices : ndarray of shape (R, B), int64
        Pool indices, in prompt order. ``R`` is the number of queries for query-dependent selectors and
        1 for query-independent ones (one row shared by all queries, see :meth:`row`). ``B`` is
        ``min(budget, pool size)``; ``B = 0`` (zero-shot) gives an ``(R, 0)`` array.
    scores : ndarray of shape (R, B), float64
        The score of each chosen item at the moment it was chosen (similarity for TopK, greedy gain for DPP,
        vote score for VoteK, ``nan`` where the method has none).
    query_dependent : bool
        Whether rows differ per query.
    n_queries : int
        Number of queries the selection was made for (``R`` when query-dependent).
    clusters_covered : ndarray of shape (R,), int64, optional
        Distinct clusters among each row's items, when cluster ids are known.
    phi : ndarray of shape (R,), float64, optional
        Coverage ``Φ(S)`` of each row under the UCS prior's estimator, when a prior is set.
    method : str
        Name of the selector that produced it.
    params : dict
        JSON-friendly parameters of that selector.
    extras : dict of str to ndarray
        Method-specific diagnostics with a leading axis of length ``R`` (for example MDL's per-subset scores).
    """

    indices: np.ndarray
    scores: np.ndarray
    query_dependent: bool
    n_queries: int
    method: str
    params: Dict[str, Any] = field(default_factory=dict)
    clusters_covered: Optional[np.ndarray] = None
    phi: Optional[np.ndarray] = None
    extras: Dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def budget(self) -> int:
        """Number of demonstrations per query (``B``)."""
        return int(self.indices.shape[1])

    def row(self, query: int) -> np.ndarray:
        """Pool indices for query number ``query`` (the shared row for query-independent selectors)."""
        if not 0 <= query < max(self.n_queries, 1):
            raise ValueError(f"query must be in [0, {self.n_queries}); got {query}")
        return self.indices[query if self.query_dependent else 0]

    def per_query(self) -> np.ndarray:
        """Indices broadcast to shape ``(n_queries, B)`` (a view for query-independent selections)."""
        if self.query_dependent:
            return self.indices
        return np.broadcast_to(self.indices[:1], (self.n_queries, self.indices.shape[1]))

    # ------------------------------------------------------------------ export
    def to_records(
        self,
        pool_texts: Optional[Sequence[str]] = None,
        pool_labels: Optional[Sequence[Any]] = None,
        query_texts: Optional[Sequence[str]] = None,
    ) -> List[Dict[str, Any]]:
        """One dict per (query, position): what each query got, with the pool texts when given.

        For query-independent selections the records are written once (``query = -1``) unless
        ``query_texts`` is given, in which case every query gets its own copy of the shared row.
        """
        rows = self.indices.shape[0]
        expand = not self.query_dependent and query_texts is not None
        n_rows = self.n_queries if expand else rows
        if query_texts is not None and len(query_texts) != self.n_queries:
            raise ValueError(
                f"query_texts has {len(query_texts)} entries but the selection has {self.n_queries} queries"
            )
        records: List[Dict[str, Any]] = []
        for q in range(n_rows):
            r = q if self.query_dependent else 0
            for pos in range(self.indices.shape[1]):
                idx = int(self.indices[r, pos])
                rec: Dict[str, Any] = {
                    "query": q if (self.query_dependent or expand) else -1,
                    "position": pos,
                    "pool_index": idx,
                    "score": _jsonable_float(self.scores[r, pos]),
                }
                if query_texts is not None:
                    rec["query_text"] = query_texts[q]
                if pool_texts is not None:
                    rec["text"] = pool_texts[idx]
                if pool_labels is not None:
                    rec["label"] = _jsonable(pool_labels[idx])
                if self.clusters_covered is not None:
                    rec["clusters_covered"] = int(self.clusters_covered[r])
                if self.phi is not None:
                    rec["phi"] = _jsonable_float(self.phi[r])
                records.append(rec)
        return records

    def to_dict(self) -> Dict[str, Any]:
        """All arrays and metadata as JSON-friendly Python objects (``nan`` → ``None``)."""
        out: Dict[str, Any] = {
            "method": self.method,
            "params": self.params,
            "query_dependent": self.query_dependent,
            "n_queries": self.n_queries,
            "indices": self.indices.tolist(),
            "scores": [[_jsonable_float(v) for v in row] for row in self.scores],
            "clusters_covered": None if self.clusters_covered is None else self.clusters_covered.tolist(),
            "phi": None if self.phi is None else [_jsonable_float(v) for v in self.phi],
            "extras": {k: _nested_jsonable(np.asarray(v)) for k, v in self.extras.items()},
        }
        return out

    def to_json(
        self,
        path: Optional[str] = None,
        pool_texts: Optional[Sequence[str]] = None,
        pool_labels: Optional[Sequence[Any]] = None,
        query_texts: Optional[Sequence[str]] = None,
    ) -> str:
        """Serialise to JSON (the arrays plus, with ``pool_texts``, per-query records); write atomically to
        ``path`` when given. Returns the JSON text."""
        obj = self.to_dict()
        if pool_texts is not None or query_texts is not None or pool_labels is not None:
            obj["records"] = self.to_records(pool_texts, pool_labels, query_texts)
        text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_csv(
        self,
        path: Optional[str] = None,
        pool_texts: Optional[Sequence[str]] = None,
        pool_labels: Optional[Sequence[Any]] = None,
        query_texts: Optional[Sequence[str]] = None,
    ) -> str:
        """One CSV row per (query, position) with the pool text; written atomically to ``path`` if given."""
        records = self.to_records(pool_texts, pool_labels, query_texts)
        cols = ["query", "position", "pool_index", "score"]
        for extra in ("query_text", "text", "label", "clusters_covered", "phi"):
            if records and extra in records[0]:
                cols.append(extra)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
        writer.writeheader()
        for rec in records:
            writer.writerow({k: ("" if rec.get(k) is None else rec.get(k)) for k in cols})
        text = buf.getvalue()
        if path is not None:
            atomic_write_text(path, text)
        return text

    @classmethod
    def from_dict(cls, obj: Dict[str, Any]) -> "Selection":
        """Inverse of :meth:`to_dict` (records, if present, are ignored)."""
        idx = np.asarray(obj["indices"], dtype=np.int64)
        if idx.ndim == 1:
            idx = idx.reshape(len(idx), 0) if idx.size == 0 else idx[None, :]
        scores = np.asarray(
            [[np.nan if v is None else v for v in row] for row in obj["scores"]], dtype=np.float64
        ).reshape(idx.shape)
        cc = obj.get("clusters_covered")
        phi = obj.get("phi")
        return cls(
            indices=idx,
            scores=scores,
            query_dependent=bool(obj["query_dependent"]),
            n_queries=int(obj["n_queries"]),
            method=str(obj["method"]),
            params=dict(obj.get("params", {})),
            clusters_covered=None if cc is None else np.asarray(cc, dtype=np.int64),
            phi=None
            if phi is None
            else np.asarray([np.nan if v is None else v for v in phi], dtype=np.float64),
            extras={
                k: np.asarray(_nested_from_json(v), dtype=np.float64)
                for k, v in obj.get("extras", {}).items()
            },
        )


def _jsonable_float(v: Any) -> Optional[float]:
    f = float(v)
    return None if not np.isfinite(f) else f


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _nested_jsonable(arr: np.ndarray) -> Any:
    if arr.dtype.kind == "f":
        return (
            np.where(np.isfinite(arr), arr, np.nan).astype(object).tolist() if arr.ndim == 0 else _floats(arr)
        )
    return arr.tolist()


def _floats(arr: np.ndarray) -> Any:
    if arr.ndim == 1:
        return [_jsonable_float(v) for v in arr]
    return [_floats(a) for a in arr]


def _nested_from_json(v: Any) -> Any:
    if isinstance(v, list):
        return [_nested_from_json(x) for x in v]
    return np.nan if v is None else v

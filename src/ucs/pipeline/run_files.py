"""What a run folder keeps beside the runner's files, so that it can be read without the pipeline.

:meth:`Pipeline.run <ucs.pipeline.Pipeline.run>` writes, under ``<out>/pipeline/``:

==========================  ===========================================================================
file                        content
==========================  ===========================================================================
``pool.jsonl``              one line per pool item, in pool order: ``{"text", "label"}``
``queries.jsonl``           the evaluated test queries, in protocol order: ``{"query", "text", "gold"}``
``clusters/seed<S>_q<Q>.npy``  cluster id of every pool item for run seed ``S`` at quantile ``Q`` (int64)
``clusters.json``           which cluster file each method's selections were made with
``projection.npy``          a 2-D PCA projection of the space the clusters were computed in (the backbone's
                            pool embeddings, or the retrieval embeddings with ``cluster_space="retrieval"``),
                            shape (N, 2), float32
``timings.jsonl``           one line per call of ``run``: when, and the seconds each stage took
==========================  ===========================================================================

:mod:`ucs.report` and ``ucs evaluate``'s closing summary read only these and the runner's files; every path is
:class:`~ucs.evaluation.run_folder.RunFolder`'s.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, Sequence

import numpy as np

from ucs.evaluation.run_folder import RunFolder
from ucs.utils.io import atomic_save_npy, atomic_write_json, atomic_write_text

__all__ = ["write_run_files", "append_timings", "projection_2d"]


def projection_2d(E: np.ndarray) -> np.ndarray:
    """First two principal components of ``E`` (N, d), float32 (N, 2); deterministic (full SVD, signs fixed by
    scikit-learn's ``svd_flip``). O(N d min(N, d)) time."""
    from sklearn.decomposition import PCA

    E = np.asarray(E, dtype=np.float64)
    if E.shape[0] < 2 or E.shape[1] < 2:
        return np.zeros((E.shape[0], 2), dtype=np.float32)
    return PCA(n_components=2, svd_solver="full").fit_transform(E).astype(np.float32)


def _jsonl(rows: Sequence[Dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_run_files(
    pipe: Any, out: Path, methods: Sequence[str], query_texts: Sequence[str], gold: Sequence[str]
) -> None:
    """Write the files of the module docstring for ``pipe``'s dataset, ``methods`` and evaluated queries.

    The pool file and the projection are written once per folder (the runner's manifest ties a folder to one
    dataset and backbone); the queries and cluster files are rewritten on every call (cheap).
    """
    folder = RunFolder(out)
    ds = pipe.dataset
    if not folder.pool.is_file():
        names = ds.label_names
        atomic_write_text(
            folder.pool,
            _jsonl([{"text": t, "label": names[int(y)]} for t, y in zip(ds.pool.texts, ds.pool.labels)]),
        )
    atomic_write_text(
        folder.queries,
        _jsonl([{"query": i, "text": t, "gold": g} for i, (t, g) in enumerate(zip(query_texts, gold))]),
    )
    cfg = pipe.config
    files: Dict[str, Dict[str, str]] = {}
    by_method = {m: float(cfg.dbscan_q_for(m)) for m in methods}
    for s in cfg.run_seeds:
        for q in sorted(set(by_method.values())):
            path = folder.cluster_file(int(s), q)
            atomic_save_npy(path, np.asarray(pipe.cluster_ids(int(s), q), dtype=np.int64))
            files.setdefault(str(int(s)), {})[repr(q)] = path.relative_to(folder.diagnostics_dir).as_posix()
    atomic_write_json(
        folder.clusters,
        {"default_q": float(cfg.clusterer["dbscan_q"]), "q_by_method": by_method, "files": files},
    )
    if not folder.projection.is_file():
        memo = getattr(pipe, "_memo", {})
        if "projection" not in memo:  # once per pipeline, however many folders it writes
            # the clusters' own space: a scatter coloured by cluster then shows the clusters that were counted
            memo["projection"] = projection_2d(pipe.cluster_embeddings())
        atomic_save_npy(folder.projection, memo["projection"])


def append_timings(out: Path, timings: Dict[str, float]) -> Path:
    """Append one line ``{"at": ISO time, "timings": {stage: seconds}}`` to
    ``<out>/pipeline/timings.jsonl``."""
    p = RunFolder(out).timings
    p.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(
        {
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "timings": {k: round(float(v), 4) for k, v in timings.items()},
        }
    )
    with open(p, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return p

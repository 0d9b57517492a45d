"""A run folder: the one place its file names are spelled, its lock, and the readers of its manifest and
records.

``ucs evaluate``, ``ucs demo`` and each ``ucs reproduce`` accuracy cell write a run folder (the runner's
files, then the pipeline's); ``ucs compare`` keeps its answers in a folder's record file too. Every module
asks
:class:`RunFolder` for a path instead of spelling a name:

==================================  ========================================================================
path                                holds
==================================  ========================================================================
``records.jsonl``                   one checksummed JSON line per answered (method, seed, query)
                                    (:mod:`ucs.evaluation.records`)
``manifest.json``                   configuration key, versions, platform, status
                                    (:mod:`ucs.evaluation.manifest`)
``results.json``, ``results.md``    the summary of the records (:mod:`ucs.evaluation.summary`)
``coverage.json``, ``coverage.md``  the pipeline's coverage table, cluster health and label agreement
``selections/``                     the runner's cached selections, ``<stem>__seed<S>__<Q>q_<hash>.npy``
``pipeline/``                       the pipeline's diagnostics (``coverage/``, ``selections/``, one file per
                                    method, seed and number of queries), ``config.json`` and the run files of
                                    :mod:`ucs.pipeline.run_files`
``.ucs.lock``                       the folder's lock (:func:`ucs.utils.lock.folder_lock`)
==================================  ========================================================================

A method's name enters file names by one of two rules, because files of both kinds are already on disk and
resumed runs must find them: the runner's cached selections replace every character outside
``[A-Za-z0-9._-]`` by ``_`` (:func:`selection_file_stem`: ``selections/dpp_ucs__seed42__...npy``); the
pipeline's diagnostics and the experiments' per-method files spell ``+`` as ``_plus_``
(:func:`method_file_stem`: ``pipeline/coverage/dpp_plus_ucs__seed42__8q.json``).

Nothing is created until written; every path is a cheap computation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import ContextManager, Iterator, List, Optional, Sequence, Tuple

from ucs.evaluation.records import RecordWriter, read_records
from ucs.utils.io import hash_texts
from ucs.utils.lock import LOCK_NAME, folder_lock

__all__ = [
    "RunFolder",
    "RECORDS",
    "MANIFEST",
    "RESULTS",
    "read_manifest",
    "method_file_stem",
    "selection_file_stem",
]

#: The record file (JSON Lines, one answered query per line).
RECORDS = "records.jsonl"
#: The runner's manifest (JSON object).
MANIFEST = "manifest.json"
#: The summary of the records (JSON object), with its markdown beside it.
RESULTS = "results.json"


def method_file_stem(method: str) -> str:
    """``"dpp+ucs"`` → ``"dpp_plus_ucs"``: a method name in diagnostics and experiment file names."""
    return method.replace("+", "_plus_")


def selection_file_stem(method: str) -> str:
    """``"dpp+ucs"`` → ``"dpp_ucs"``: a method name in the runner's cached selection files."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in method)


def read_manifest(path: "str | os.PathLike[str]") -> dict:
    """The JSON object of a manifest file (a run's, or a ``ucs reproduce`` page's); a damaged one raises a
    ``ValueError`` naming the file and the way out. One read and one parse of the file."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path} is damaged ({exc}); use another output folder, or --fresh to move this one "
            "aside and start over"
        ) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("key", {}), dict):
        raise ValueError(
            f"{path} is not a run manifest; use another output folder, or --fresh to move this "
            "one aside and start over"
        )
    return obj


class RunFolder:
    """The paths, lock and readers of one run folder (the module docstring lists its files).

    Parameters
    ----------
    path : path
        The folder; it need not exist.

    Examples
    --------
    >>> folder = RunFolder("runs/banking77")
    >>> folder.records.name, folder.manifest.name
    ('records.jsonl', 'manifest.json')
    """

    RECORDS = RECORDS
    MANIFEST = MANIFEST
    RESULTS = RESULTS

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunFolder) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    # ---------------------------------------------------------------- the runner's files
    @property
    def records(self) -> Path:
        """``records.jsonl``: one answered (method, seed, query) a line."""
        return self.path / RECORDS

    @property
    def manifest(self) -> Path:
        """``manifest.json``: configuration key, versions, platform and status."""
        return self.path / MANIFEST

    @property
    def results(self) -> Path:
        """``results.json``: the summary of the records."""
        return self.path / RESULTS

    @property
    def results_markdown(self) -> Path:
        """``results.md``: the summary as markdown tables."""
        return self.path / "results.md"

    @property
    def selections_dir(self) -> Path:
        """``selections/``: the runner's cached selections."""
        return self.path / "selections"

    def runner_selection(self, method: str, seed: int, query_texts: Sequence[str]) -> Path:
        """The runner's cached selection of ``method`` for run ``seed`` on ``query_texts``: its name carries
        the number of queries and the first 16 hex digits of their hash. O(total text length)."""
        qhash = hash_texts(list(query_texts))[:16]
        return (
            self.selections_dir
            / f"{selection_file_stem(method)}__seed{seed}__{len(query_texts)}q_{qhash}.npy"
        )

    def runner_selections(self, method: str, seed: int) -> Iterator[Tuple[int, Path]]:
        """``(number of queries, path)`` of every selection of (``method``, ``seed``) the runner cached here
        (:meth:`runner_selection` names them), in no particular order."""
        head = f"{selection_file_stem(method)}__seed{seed}__"
        for p in self.selections_dir.glob(f"{head}*q_*.npy"):
            try:
                yield int(p.name[len(head) :].split("q_", 1)[0]), p
            except ValueError:
                continue

    # ---------------------------------------------------------------- the pipeline's files
    @property
    def coverage(self) -> Path:
        """``coverage.json``: coverage table, cluster health and label agreement of the evaluated methods."""
        return self.path / "coverage.json"

    @property
    def coverage_markdown(self) -> Path:
        """``coverage.md``: the same as markdown."""
        return self.path / "coverage.md"

    @property
    def diagnostics_dir(self) -> Path:
        """``pipeline/``: the files a report reads without the pipeline."""
        return self.path / "pipeline"

    @property
    def config(self) -> Path:
        """``pipeline/config.json``: the full pipeline configuration."""
        return self.diagnostics_dir / "config.json"

    @property
    def pool(self) -> Path:
        """``pipeline/pool.jsonl``: ``{"text", "label"}`` per pool item, in pool order."""
        return self.diagnostics_dir / "pool.jsonl"

    @property
    def queries(self) -> Path:
        """``pipeline/queries.jsonl``: ``{"query", "text", "gold"}`` per evaluated query, in protocol
        order."""
        return self.diagnostics_dir / "queries.jsonl"

    @property
    def clusters(self) -> Path:
        """``pipeline/clusters.json``: which cluster file each method's selections were made with."""
        return self.diagnostics_dir / "clusters.json"

    def cluster_file(self, seed: int, q: float) -> Path:
        """``pipeline/clusters/seed<S>_q<Q>.npy``: cluster id of every pool item for run ``seed`` at quantile
        ``q`` (``clusters.json`` names it relative to ``pipeline/``)."""
        return self.diagnostics_dir / "clusters" / f"seed{int(seed)}_q{float(q)!r}.npy"

    @property
    def projection(self) -> Path:
        """``pipeline/projection.npy``: a 2-D projection of the clustered space, (N, 2)."""
        return self.diagnostics_dir / "projection.npy"

    @property
    def timings(self) -> Path:
        """``pipeline/timings.jsonl``: one line of stage timings per call of ``Pipeline.run``."""
        return self.diagnostics_dir / "timings.jsonl"

    @property
    def legacy_timings(self) -> Path:
        """``pipeline/timings.json``: the one timings object of folders written before ``timings.jsonl``."""
        return self.diagnostics_dir / "timings.json"

    def coverage_file(self, method: str, seed: int, n_queries: int) -> Path:
        """``pipeline/coverage/<stem>__seed<S>__<Q>q.json``: the mean coverage statistics of one selection."""
        return (
            self.diagnostics_dir / "coverage" / f"{method_file_stem(method)}__seed{seed}__{n_queries}q.json"
        )

    def selection_record(self, method: str, seed: int, n_queries: int) -> Path:
        """``pipeline/selections/<stem>__seed<S>__<Q>q.json``: one selection with its scores."""
        return (
            self.diagnostics_dir / "selections" / f"{method_file_stem(method)}__seed{seed}__{n_queries}q.json"
        )

    def selection_records(self, method: str, seed: int) -> List[Path]:
        """Every :meth:`selection_record` of (``method``, ``seed``), whatever its number of queries,
        sorted."""
        return sorted(
            (self.diagnostics_dir / "selections").glob(f"{method_file_stem(method)}__seed{seed}__*q.json")
        )

    # ---------------------------------------------------------------- lock
    @property
    def lock_file(self) -> Path:
        """``.ucs.lock``: the file :meth:`lock` holds (it names its last holder)."""
        return self.path / LOCK_NAME

    def lock(
        self, *, wait: bool = False, timeout: Optional[float] = None, command: Optional[str] = None
    ) -> ContextManager[dict]:
        """The folder's exclusive lock for a ``with`` block (:func:`ucs.utils.lock.folder_lock`: re-entrant in
        a process; raises :class:`~ucs.utils.lock.FolderLockedError` while another live process holds it,
        unless ``wait``)."""
        return folder_lock(self.path, wait=wait, timeout=timeout, command=command)

    # ---------------------------------------------------------------- readers
    def read_manifest(self) -> dict:
        """The verified manifest (:func:`read_manifest`).

        Raises
        ------
        FileNotFoundError
            When the folder holds none (not a folder of ``ucs evaluate`` / ``ucs demo``).
        ValueError
            When it is damaged or not a run manifest (the message names the file and the way out).
        """
        if not self.manifest.is_file():
            raise FileNotFoundError(
                f"{self.path} holds no {MANIFEST}: it is not a folder written by ucs evaluate, "
                "ucs demo or ucs reproduce"
            )
        return read_manifest(self.manifest)

    def read_records(self) -> List[dict]:
        """Every verified record, in file order (``[]`` without a record file; damaged lines are skipped with
        a warning, :func:`ucs.evaluation.records.read_records`). O(records)."""
        return read_records(self.records) if self.records.is_file() else []

    def record_writer(self) -> RecordWriter:
        """An appending :class:`~ucs.evaluation.records.RecordWriter` on the record file (a partial last line,
        from an interrupted write, is cut first)."""
        return RecordWriter(self.records)

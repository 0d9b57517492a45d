"""Where a pipeline keeps what it computes: one object owns every path and file-name rule.

Three roots, each optional beyond the first:

========================  ==============================================================================
root                      holds
========================  ==============================================================================
``cache_dir``             ``embeddings/`` (:class:`~ucs.embedding.EmbeddingCache`) and
                          ``clusters/<key>/{labels_q<q>.npy, meta.json}`` (one folder per clustering)
``store_dir``             ``answers/`` (:class:`~ucs.evaluation.answers.AnswerStore`) and ``scores/``
                          (MDL subset scores); default ``cache_dir``; small and content-addressed
``out_dir``               the run folder: its files are named by :class:`~ucs.evaluation.run_folder.RunFolder`
                          (:attr:`ArtifactLayout.run_folder`), the one owner of its layout
========================  ==============================================================================
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Tuple

from ucs.defaults import default_cache_dir
from ucs.evaluation.run_folder import RunFolder

__all__ = ["ArtifactLayout"]


class ArtifactLayout:
    """The paths of a pipeline's caches, stores and run folder (nothing is created until written).

    Parameters
    ----------
    cache_dir : path, optional
        Default :func:`ucs.defaults.default_cache_dir`.
    store_dir : path, optional
        Root of the answer and score stores; default ``cache_dir``.
    out_dir : path, optional
        The run folder; the methods that name a file in it return ``None`` without one.
    """

    def __init__(
        self,
        cache_dir: "str | os.PathLike[str] | None" = None,
        store_dir: "str | os.PathLike[str] | None" = None,
        out_dir: "str | os.PathLike[str] | None" = None,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.store_dir = Path(store_dir) if store_dir is not None else self.cache_dir
        self.out_dir = Path(out_dir) if out_dir is not None else None

    def __repr__(self) -> str:
        return (
            f"ArtifactLayout(cache_dir={str(self.cache_dir)!r}, store_dir={str(self.store_dir)!r}, "
            f"out_dir={None if self.out_dir is None else str(self.out_dir)!r})"
        )

    # ---------------------------------------------------------------- cache and stores
    @property
    def embeddings_dir(self) -> Path:
        return self.cache_dir / "embeddings"

    @property
    def answers_dir(self) -> Path:
        return self.store_dir / "answers"

    @property
    def scores_dir(self) -> Path:
        return self.store_dir / "scores"

    def cluster_dir(self, spec: Mapping[str, Any]) -> Path:
        """The folder of one clustering, keyed by the SHA-256 of ``spec``'s canonical JSON (24 hex digits)."""
        key = json.dumps(spec, sort_keys=True)
        return self.cache_dir / "clusters" / hashlib.sha256(key.encode()).hexdigest()[:24]

    @staticmethod
    def cluster_labels(cluster_dir: Path, q: float) -> Path:
        return cluster_dir / f"labels_q{float(q)!r}.npy"

    @staticmethod
    def cluster_meta(cluster_dir: Path) -> Path:
        return cluster_dir / "meta.json"

    # ---------------------------------------------------------------- run folder
    @property
    def run_folder(self) -> Optional[RunFolder]:
        """The :class:`~ucs.evaluation.run_folder.RunFolder` of ``out_dir`` (``None`` without one)."""
        return None if self.out_dir is None else RunFolder(self.out_dir)

    @property
    def diagnostics_dir(self) -> Optional[Path]:
        """``<out_dir>/pipeline``: the files a report reads without the pipeline."""
        f = self.run_folder
        return None if f is None else f.diagnostics_dir

    def coverage_file(self, method: str, seed: int, n_queries: int) -> Optional[Path]:
        """:meth:`RunFolder.coverage_file <ucs.evaluation.run_folder.RunFolder.coverage_file>` (``None``
        without a run folder)."""
        f = self.run_folder
        return None if f is None else f.coverage_file(method, seed, n_queries)

    def selection_record(self, method: str, seed: int, n_queries: int) -> Optional[Path]:
        """:meth:`RunFolder.selection_record <ucs.evaluation.run_folder.RunFolder.selection_record>` (``None``
        without a run folder)."""
        f = self.run_folder
        return None if f is None else f.selection_record(method, seed, n_queries)

    def runner_selections(self, method: str, seed: int) -> Iterator[Tuple[int, Path]]:
        """:meth:`RunFolder.runner_selections <ucs.evaluation.run_folder.RunFolder.runner_selections>` (none
        without a run folder)."""
        f = self.run_folder
        return iter(()) if f is None else f.runner_selections(method, seed)

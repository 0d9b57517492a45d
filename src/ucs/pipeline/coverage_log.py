"""The coverage diagnostics of a pipeline's selections, kept in memory and in the run folder.

For every (method, run seed, number of queries) the log keeps the mean coverage statistics of the selected
prompts (:func:`~ucs.pipeline.diagnostics.summarize_coverage`: unique clusters, mean cluster size, Φ …),
writes them with the full selection under the layout's ``pipeline/`` folder, and reads them back — or, for a
method a resumed run never selected in this process, recomputes them from the runner's cached selection.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, Optional, Sequence

import numpy as np

from ucs.pipeline.diagnostics import summarize_coverage
from ucs.pipeline.layout import ArtifactLayout
from ucs.utils.integrity import load_checked_npy
from ucs.utils.io import atomic_write_json, atomic_write_text

__all__ = ["CoverageLog"]

#: ``coverage(method, seed, indices (R, B)) -> per-prompt statistics`` (:meth:`Pipeline.coverage`).
CoverageFn = Callable[[str, int, np.ndarray], Dict[str, np.ndarray]]


class CoverageLog:
    """Mean coverage statistics by (method, seed, number of queries).

    Parameters
    ----------
    coverage : callable
        Per-prompt statistics of a selection's indices on run ``seed``'s clusters.
    n_pool : callable
        The pool size (read lazily: the dataset loads on first use).
    """

    def __init__(self, coverage: CoverageFn, n_pool: Callable[[], int]) -> None:
        self.coverage = coverage
        self.n_pool = n_pool
        self._stats: Dict[tuple, Dict[str, float]] = {}

    def record(self, layout: ArtifactLayout, method: str, seed: int, selection: Any, n_queries: int) -> None:
        """Keep the statistics of ``selection`` and write them, with the selection, to the run folder (if
        any)."""
        stats = summarize_coverage(self.coverage(method, seed, selection.indices))
        self._stats[(method, int(seed), n_queries)] = stats
        path = layout.coverage_file(method, seed, n_queries)
        if path is None:
            return
        atomic_write_json(
            path, {"method": method, "seed": int(seed), "n_queries": n_queries, "coverage": stats}
        )
        atomic_write_text(layout.selection_record(method, seed, n_queries), selection.to_json())

    def table(
        self, layout: ArtifactLayout, methods: Iterable[str], seeds: Sequence[int], n_queries: int
    ) -> Dict[str, Dict[str, Dict[str, float]]]:
        """``table[method][seed]`` of mean statistics, from memory, the run folder or the runner's
        selections."""
        out: Dict[str, Dict[str, Dict[str, float]]] = {}
        for m in methods:
            for s in seeds:
                stats = self._stats.get((m, int(s), n_queries))
                p = layout.coverage_file(m, s, n_queries)
                if stats is None and p is not None and p.is_file():
                    stats = json.loads(p.read_text(encoding="utf-8"))["coverage"]
                if stats is None:
                    stats = self._from_runner(layout, m, int(s), n_queries)
                if stats is not None:
                    out.setdefault(m, {})[str(s)] = stats
        return out

    def _from_runner(
        self, layout: ArtifactLayout, method: str, seed: int, n_queries: int
    ) -> Optional[Dict[str, float]]:
        """Statistics of the first ``n_queries`` rows of the smallest cached runner selection that covers
        them."""
        if n_queries < 1:
            return None
        fits = [(n, p) for n, p in layout.runner_selections(method, seed) if n >= n_queries]
        if not fits:
            return None
        best = min(fits)
        n_pool = self.n_pool()
        sel = load_checked_npy(
            best[1],
            f"selection of {method} (seed {seed})",
            min_value=0,
            max_value=n_pool - 1,
            adopt_unverified=True,
        )
        if sel is None or sel.ndim != 2:
            return None
        rows = sel if sel.shape[0] == 1 else sel[:n_queries]
        stats = summarize_coverage(self.coverage(method, seed, rows))
        self._stats[(method, seed, n_queries)] = stats
        path = layout.coverage_file(method, seed, n_queries)
        if path is not None:
            atomic_write_json(
                path,
                {
                    "method": method,
                    "seed": seed,
                    "n_queries": n_queries,
                    "coverage": stats,
                    "from": best[1].name,
                },
            )
        return stats

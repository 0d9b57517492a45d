"""Assembling the report: one self-contained HTML file from a run folder.

The page is rendered by jinja2 with autoescaping from the templates shipped in ``ucs/report/templates``;
plotly's JavaScript is embedded once, inline, with the first figure; the per-query browser's data travel as
one JSON block (escaped for HTML by jinja's ``tojson``) that a small vanilla script renders with DOM text
nodes. The file makes no network request and opens from disk offline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional


from ucs.report.data import RunData, RunFolderError, load_run
from ucs.report.figures import MAX_SCATTER_POINTS, figures_for
from ucs.report.tables import (
    GIANT_FRACTION,
    accuracy_rows,
    coverage_rows,
    delta_rows,
    health_rows,
    pct,
    settings_rows,
    summary_rows,
    test_double_note,
    timing_rows,
)
from ucs.utils.redact import redact_obj

__all__ = ["build_report", "write_report", "REPORT_NAME", "browser_data"]

#: File name of the report inside a run folder (``write_report``'s default).
REPORT_NAME = "report.html"


def _env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("ucs.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = pct
    env.filters["num"] = lambda x, d=2: "—" if x is None else f"{x:.{d}f}"
    return env


def browser_data(run: RunData) -> Dict[str, Any]:
    """The per-query browser's data: queries, the pool items some prompt used (text, label), and for each run
    seed and method the prediction, correctness and demonstrations (pool index, cluster id, cluster size, the
    score it was chosen with or ``None``, whether it carries the query's own label)."""
    items: Dict[str, List[str]] = {}
    rows: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for r in run.records:
        demos = []
        scores = run.selection_scores(r) or []
        for j, d in enumerate(run.demonstrations(r)):
            items.setdefault(str(d.index), [d.text, d.label])
            score = scores[j] if j < len(scores) and scores[j] == scores[j] else None  # NaN → None
            demos.append([d.index, d.cluster, d.cluster_size, score, d.label == str(r.get("gold"))])
        rows.setdefault(str(r["seed"]), {}).setdefault(r["method"], {})[str(r["query"])] = [
            r.get("parsed"),
            bool(r.get("correct")),
            demos,
        ]
    qs = sorted({int(r["query"]) for r in run.records})
    gold = {int(r["query"]): r.get("gold") for r in run.records}
    queries = [{"q": q, "text": run.query_text(q), "gold": gold.get(q)} for q in qs]
    return {
        "methods": run.methods,
        "seeds": [str(s) for s in run.seeds if str(s) in rows] or sorted(rows),
        "queries": queries,
        "items": items,
        "rows": rows,
        "labels": sorted({str(q["gold"]) for q in queries}),
    }


def build_report(
    run_dir: "str | os.PathLike[str]", *, max_points: int = MAX_SCATTER_POINTS, title: Optional[str] = None
) -> str:
    """The HTML report of the run folder ``run_dir`` as a string.

    Parameters
    ----------
    run_dir : path
        A folder written by ``ucs evaluate``, ``ucs demo --out`` or a ``ucs reproduce`` cell.
    max_points : int
        The cluster explorer draws at most this many pool items (a uniform sample above it; the page says so).
    title : str, optional
        Page title (default: ``ucs report — <dataset>``).

    Returns
    -------
    str
        A complete HTML document with no external reference.

    Notes
    -----
    Time O(records · budget + N log N) for a pool of N items (plus one bootstrap per UCS form); the file is
    about 4.7 MB of plotly.js plus roughly 100 bytes per drawn point and per used pool item.
    """
    run = load_run(run_dir)
    try:
        return _render(run, title, max_points)
    except (
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
    ) as exc:  # a field of a form load_run did not foresee
        raise RunFolderError(
            f"{run_dir}: a file of this run folder holds a field the report cannot read "
            f"({type(exc).__name__}: "
            f"{exc}); rerun the command that wrote the folder"
        ) from exc


def _render(run: RunData, title: Optional[str], max_points: int) -> str:
    acc = accuracy_rows(run)
    deltas = delta_rows(run)
    health = health_rows(run)
    n_pool = len(run.pool_texts) or (0 if run.projection is None else int(run.projection.shape[0]))
    ctx = {
        "title": title or f"ucs report — {run.dataset_name}",
        "double_note": test_double_note(run),
        "run": run,
        "summary_rows": redact_obj(summary_rows(run)),  # a model URL's credentials (runs made before they
        "settings_rows": redact_obj(settings_rows(run)),  # were masked on disk) never reach the page
        "accuracy": acc,
        "deltas": deltas,
        "confidence": int(round(100 * float(run.summary.get("confidence", 0.95)))),
        "coverage": coverage_rows(run),
        "health": health,
        "giant": GIANT_FRACTION,
        "timings": timing_rows(run),
        "figures": figures_for(run, acc, deltas, max_points),
        "n_pool": n_pool,
        "max_points": max_points,
        "sampled": n_pool > max_points,
        "data": browser_data(run),
        "has_texts": bool(run.pool_texts),
    }
    return _env().get_template("report.html.j2").render(**ctx)


def write_report(
    run_dir: "str | os.PathLike[str]", out: "str | os.PathLike[str] | None" = None, **kwargs: Any
) -> Path:
    """Write :func:`build_report`'s page to ``out`` (default ``<run_dir>/report.html``) atomically; returns
    it."""
    from ucs.utils.io import atomic_write_text

    path = Path(out) if out is not None else Path(run_dir) / REPORT_NAME
    return atomic_write_text(path, build_report(run_dir, **kwargs))

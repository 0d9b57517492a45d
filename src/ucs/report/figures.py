"""The report's plotly figures: accuracy with intervals, paired Δ, the cluster explorer and the size spectrum.

Each function returns a ``plotly.graph_objects.Figure``; :func:`figure_html` turns one into a ``<div>`` with a
fixed id (so the same run gives the same file) and, for the first figure only, plotly's JavaScript inline.
Texts shown on hover are HTML-escaped here: plotly renders a few tags in hover labels, pool texts must not be
read as tags.
"""

from __future__ import annotations

import html
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = [
    "MAX_SCATTER_POINTS",
    "scatter_sample",
    "accuracy_figure",
    "delta_figure",
    "cluster_scatter",
    "spectrum_figure",
    "figure_html",
]

#: The cluster explorer draws at most this many pool items (a uniform random sample, seed 0, above it); the
#: page says so. Keeps a 15,000-item pool's report small and its scatter responsive.
MAX_SCATTER_POINTS = 4000
_HOVER_CHARS = 160
_LAYOUT = dict(template="plotly_white", height=380, margin=dict(l=60, r=20, t=40, b=60))


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _hover(text: str) -> str:
    t = text if len(text) <= _HOVER_CHARS else text[: _HOVER_CHARS - 1] + "…"
    return html.escape(t, quote=False)


def scatter_sample(n: int, max_points: int = MAX_SCATTER_POINTS, seed: int = 0) -> np.ndarray:
    """Sorted indices of the pool items the explorer draws: all when ``n <= max_points``, else a uniform
    sample of ``max_points`` without replacement (``numpy.random.default_rng(seed)``)."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


def accuracy_figure(rows: Sequence[Dict[str, Any]], confidence: float = 0.95) -> Any:
    """One marker per method at its mean accuracy (%), error bars = its bootstrap interval over queries."""
    go = _go()
    rows = [r for r in rows if r["mean"] is not None]
    y = [100 * r["mean"] for r in rows]
    hi = [100 * (r["ci"][1] - r["mean"]) if r["ci"] else 0 for r in rows]
    lo = [100 * (r["mean"] - r["ci"][0]) if r["ci"] else 0 for r in rows]
    fig = go.Figure(
        go.Scatter(
            x=[r["method"] for r in rows],
            y=y,
            mode="markers",
            marker=dict(size=11, color="#1f77b4"),
            error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo),
            name="accuracy",
            hovertemplate="%{x}: %{y:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"accuracy (%) with {int(round(100 * confidence))}% interval over queries",
        yaxis_title="accuracy (%)",
        **_LAYOUT,
    )
    return fig


def delta_figure(rows: Sequence[Dict[str, Any]], confidence: float = 0.95) -> Any:
    """One marker per UCS form at its paired Δ accuracy (points) against the base selector, with its
    interval."""
    go = _go()
    fig = go.Figure(
        go.Scatter(
            x=[f"{r['method']} − {r['base']}" for r in rows],
            y=[100 * r["delta"] for r in rows],
            mode="markers",
            marker=dict(size=11, color="#d62728"),
            name="Δ",
            error_y=dict(
                type="data",
                symmetric=False,
                array=[100 * (r["ci"][1] - r["delta"]) for r in rows],
                arrayminus=[100 * (r["delta"] - r["ci"][0]) for r in rows],
            ),
            hovertemplate="%{x}: %{y:+.1f} points<extra></extra>",
        )
    )
    fig.add_hline(y=0, line_dash="dot", line_color="#888")
    fig.update_layout(
        title=f"paired Δ accuracy (points), {int(round(100 * confidence))}% paired bootstrap interval",
        yaxis_title="Δ (points)",
        **_LAYOUT,
    )
    return fig


def cluster_scatter(
    projection: np.ndarray,
    ids: Optional[np.ndarray],
    texts: Sequence[str],
    labels: Sequence[str],
    max_points: int = MAX_SCATTER_POINTS,
) -> Any:
    """The pool in two dimensions (PCA of its embeddings), coloured by cluster; hover: text, label, cluster,
    size.

    One trace with one marker per drawn item (:func:`scatter_sample`)."""
    go = _go()
    n = projection.shape[0]
    idx = scatter_sample(n, max_points)
    sizes = np.bincount(ids) if ids is not None else None
    hover = []
    for i in idx.tolist():
        c = "" if ids is None else f"<br>cluster {int(ids[i])} (size {int(sizes[ids[i]])})"
        t = texts[i] if i < len(texts) else f"pool item {i}"
        lab = labels[i] if i < len(labels) else "?"
        hover.append(f"{_hover(t)}<br>label: {_hover(lab)}{c}")
    color = ids[idx] if ids is not None else None
    fig = go.Figure(
        go.Scatter(
            x=np.round(projection[idx, 0], 4),
            y=np.round(projection[idx, 1], 4),
            mode="markers",
            marker=dict(size=6, color=color, colorscale="Turbo", opacity=0.8, line=dict(width=0)),
            hovertext=hover,
            hoverinfo="text",
            name="pool",
        )
    )
    shown = f"{idx.size} of {n} items (uniform sample)" if idx.size < n else f"all {n} items"
    fig.update_layout(
        title=f"pool embeddings, PCA to 2-D, coloured by cluster — {shown}",
        xaxis_title="PC 1",
        yaxis_title="PC 2",
        **{**_LAYOUT, "height": 560},
    )
    return fig


def spectrum_figure(ids: np.ndarray) -> Any:
    """Number of clusters of each size (bars; log scale), the cluster-size spectrum."""
    go = _go()
    sizes = np.bincount(np.bincount(ids))
    s = np.nonzero(sizes)[0]
    s = s[s > 0]
    fig = go.Figure(
        go.Bar(
            x=s.tolist(),
            y=sizes[s].tolist(),
            name="clusters",
            hovertemplate="%{y} clusters of size %{x}<extra></extra>",
        )
    )
    many = s.size and sizes[s].max() > 50
    fig.update_layout(
        title="cluster-size spectrum: number of clusters of each size",
        xaxis_title="cluster size (items)",
        yaxis_title="clusters" + (" (log scale)" if many else ""),
        yaxis_type="log" if many else "linear",
        xaxis_type="log" if s.size and s.max() > 50 else "linear",
        **_LAYOUT,
    )
    return fig


def figure_html(fig: Any, div_id: str, include_js: bool) -> str:
    """``fig`` as an HTML fragment with ``div_id``; plotly's JavaScript inline when ``include_js``."""
    return fig.to_html(
        full_html=False,
        include_plotlyjs=bool(include_js),
        div_id=div_id,
        config={"displaylogo": False, "responsive": True},
        include_mathjax=False,
    )


def figures_for(run: Any, accuracy: List[dict], deltas: List[dict], max_points: int) -> Dict[str, str]:
    """The HTML fragments of every figure the run supports, keyed by name; the first carries plotly.js."""
    conf = float(run.summary.get("confidence", 0.95))
    figs: Dict[str, Any] = {}
    if any(r["mean"] is not None for r in accuracy):
        figs["accuracy"] = accuracy_figure(accuracy, conf)
    if deltas:
        figs["delta"] = delta_figure(deltas, conf)
    seed = run.seeds[0] if run.seeds else None
    ids = run.cluster_ids(seed) if seed is not None else None
    if run.projection is not None and run.projection.shape[0] > 0:
        figs["scatter"] = cluster_scatter(run.projection, ids, run.pool_texts, run.pool_labels, max_points)
    if ids is not None:
        figs["spectrum"] = spectrum_figure(ids)
    return {name: figure_html(f, f"fig-{name}", i == 0) for i, (name, f) in enumerate(figs.items())}

"""PNG figures of experiments (matplotlib, the ``plot`` extra; Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Sequence

import numpy as np

from ucs.experiments.spec import Cell, Experiment
from ucs.utils.io import atomic_write_bytes

__all__ = [
    "require_matplotlib",
    "cluster_sizes_figure",
    "health_spectra_figure",
    "variant_curve_figure",
    "figure_for",
]


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` with the Agg backend, or an ImportError that says how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "figures need matplotlib: install the plot extra (pip install -e '.[plot]' in the ucs "
            "repository, or pip install matplotlib)"
        ) from exc
    return plt


def _save(fig: Any, path: Path) -> Path:
    import io

    buf = io.BytesIO()
    # no timestamp in the PNG metadata: the same results give the same bytes
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    atomic_write_bytes(path, buf.getvalue())
    return path


def cluster_sizes_figure(
    cells: Sequence[Cell], results: Sequence[Dict[str, Any]], path: "str | Path"
) -> Path:
    """Paper Fig. 3: left, pool items in clusters of size 1..8 (and larger); right, the 8 largest sizes."""
    plt = require_matplotlib()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    n = len(cells)
    width = 0.8 / max(n, 1)
    xs = np.arange(1, 10)
    for i, (c, r) in enumerate(zip(cells, results)):
        s0 = r["per_seed"][next(iter(r["per_seed"]))]
        counts = [s0["items_by_size"].get(str(k), 0) for k in range(1, 9)] + [s0["items_by_size"].get("0", 0)]
        label = f"{c.dataset} / {c.backbone}"
        ax1.bar(xs - 0.4 + width * (i + 0.5), counts, width=width, label=label)
        ax2.plot(np.arange(1, len(s0["largest_sizes"]) + 1), s0["largest_sizes"], marker="o", label=label)
    ax1.set_xticks(xs, [str(k) for k in range(1, 9)] + [">8"])
    ax1.set_xlabel("cluster size")
    ax1.set_ylabel("pool items")
    ax1.set_title("items in clusters of size k")
    ax2.set_yscale("log")
    ax2.set_xlabel("rank")
    ax2.set_ylabel("cluster size")
    ax2.set_title("8 largest clusters")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def variant_curve_figure(
    exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]], path: "str | Path"
) -> Path:
    """Accuracy (mean ± std over runs) against the experiment's variants, one line per method, one panel per
    dataset × backbone (e.g. accuracy against the budget)."""
    plt = require_matplotlib()
    groups = list(dict.fromkeys((c.dataset, c.backbone) for c in cells))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.5), squeeze=False)
    names = [v.name for v in exp.variants]
    labels = [v.label or v.name for v in exp.variants]
    for ax, (ds, bb) in zip(axes[0], groups):
        series: Dict[str, list] = {}
        for c, r in zip(cells, results):
            if (c.dataset, c.backbone) != (ds, bb):
                continue
            for m, s in r.get("methods", {}).items():
                if s.get("mean") is not None:
                    series.setdefault(m, []).append(
                        (names.index(c.variant.name), 100 * s["mean"], 100 * (s["std"] or 0))
                    )
        for m, pts in series.items():
            pts.sort()
            x, y, e = zip(*pts)
            ax.errorbar(x, y, yerr=e, marker="o", capsize=3, label=m)
        ax.set_xticks(range(len(labels)), labels, rotation=30, fontsize=7)
        ax.set_title(f"{ds} / {bb}", fontsize=9)
        ax.set_ylabel("accuracy (%)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def health_spectra_figure(
    cells: Sequence[Cell], results: Sequence[Dict[str, Any]], path: "str | Path"
) -> Path:
    """Rank–size spectra (every cluster's size, descending, log–log), one panel per dataset × backbone and one
    line per clustering: a giant shows as a high first point, a sea of singletons as a long flat tail at 1."""
    plt = require_matplotlib()
    groups = list(dict.fromkeys((c.dataset, c.backbone) for c in cells))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.6), squeeze=False)
    for ax, (ds, bb) in zip(axes[0], groups):
        for c, r in zip(cells, results):
            if (c.dataset, c.backbone) == (ds, bb) and r.get("sizes"):
                sizes = np.asarray(r["sizes"], dtype=float)
                ax.plot(np.arange(1, sizes.size + 1), sizes, label=c.variant.label or c.variant.name, lw=1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("cluster rank")
        ax.set_ylabel("cluster size")
        ax.set_title(f"{ds} / {bb}", fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def figure_for(
    exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]], path: "str | Path"
) -> Path:
    """The experiment's figure: cluster sizes for ``clusters`` experiments, a variant curve otherwise."""
    if exp.kind == "clusters":
        return cluster_sizes_figure(cells, results, path)
    if exp.kind == "health":
        return health_spectra_figure(cells, results, path)
    return variant_curve_figure(exp, cells, results, path)

"""The report's tables as plain rows: run summary, accuracy with intervals, paired Δ, coverage, cluster
health, timings. Each function takes a :class:`~ucs.report.data.RunData` and returns lists of dicts or
strings."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ucs.defaults import GIANT_FRACTION
from ucs.evaluation.manifest import TEST_DOUBLE_NOTE, is_test_double
from ucs.evaluation.summary import paired_delta
from ucs.report.data import RunData
from ucs.utils.cpu import describe_machine

__all__ = [
    "summary_rows",
    "accuracy_rows",
    "delta_rows",
    "coverage_rows",
    "health",
    "health_rows",
    "timing_rows",
    "pct",
    "GIANT_FRACTION",
]


def pct(x: Optional[float], digits: int = 1) -> str:
    return "—" if x is None else f"{100 * x:.{digits}f}"


def _short(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v) if v else "—"
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items()) if v else "—"
    return "—" if v is None else str(v)


def _clustering(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The clustering settings of a run's ``pipeline/config.json`` under the results' key names
    (``clustering``, ``cluster_space``, ``dbscan_q``, ``n_clusters``), from the nested form (``clusterer``) or
    the flat one of folders written before it."""
    c = cfg.get("clusterer")
    if not isinstance(c, dict):
        return cfg
    return {
        "clustering": c.get("method"),
        "cluster_space": cfg.get("cluster_space"),
        "dbscan_q": c.get("dbscan_q"),
        "n_clusters": c.get("n_clusters"),
    }


def summary_rows(run: RunData) -> List[List[str]]:
    """``[name, value]`` rows: dataset, sizes, backbone, hashes, preset, mode, seeds, status, versions."""
    key = run.manifest.get("key", {})
    ds = key.get("dataset", {})
    model = key.get("model", {})
    cfg = run.config or {}
    clu = _clustering(cfg)
    proto = key.get("protocol", {})
    model_hash = str(model.get("revision") or model.get("sha256") or "—")
    source = ds.get("source") or {}
    files = (
        ", ".join(f"{k} ({str(v)[:12]}…)" for k, v in source.items())
        if isinstance(source, dict)
        else _short(source)
    )
    versions = run.manifest.get("versions", {})
    rows = [
        ["dataset", str(ds.get("name", run.dataset_name))],
        ["data files (sha256)", files or "—"],
        ["data hash (fingerprint)", str(ds.get("fingerprint", "—"))],
        ["pool items", str(len(run.pool_texts)) if run.pool_texts else "—"],
        ["test queries evaluated", str(run.summary.get("n_queries_requested", len(run.queries)))],
        [
            "backbone",
            " · ".join(str(model[k]) for k in ("model", "engine", "pooling") if model.get(k)) or "—",
        ],
        ["model hash", model_hash],
        ["preset", str(cfg.get("preset", "—"))],
        [
            "clustering",
            " · ".join(
                f"{k} {clu[k]}"
                for k in ("clustering", "cluster_space", "dbscan_q", "n_clusters")
                if clu.get(k) is not None and applies(k, clu.get("clustering"))
            )
            or "—",
        ],
        ["prediction mode", str(run.summary.get("mode", key.get("mode", {}).get("name", "—")))],
        [
            "demonstrations per prompt",
            str(cfg.get("budget", key.get("config", {}).get("pipeline", {}).get("budget", "—"))),
        ],
        ["run seeds", _short(proto.get("run_seeds"))],
        ["test draw seed", str(proto.get("test_seed", "—"))],
        [
            "status",
            f"{run.manifest.get('status', '?')} ({run.manifest.get('n_records', len(run.records))} records)",
        ],
        [
            "started / finished",
            f"{run.manifest.get('started_at', '?')} / {run.manifest.get('finished_at', '?')}",
        ],
        [
            "versions",
            ", ".join(
                f"{k} {v}"
                for k, v in versions.items()
                if k in ("ucs-icl", "ucs", "python", "numpy", "llama_cpp_python", "torch")
            ),
        ],
        [
            "machine",
            describe_machine(run.manifest.get("platform", {})) if run.manifest.get("platform") else "—",
        ],
    ]
    return rows


#: Settings that only apply to some clusterings: shown only when the run's clustering uses them.
_ONLY_FOR = {
    "dbscan_q": ("dbscan", "dict_dbscan"),
    "dbscan_k": ("dbscan", "dict_dbscan"),
    "dbscan_q_by_selector": ("dbscan", "dict_dbscan"),
    "min_samples": ("dbscan", "dict_dbscan"),
    "n_clusters": ("kmeans", "dict_kmeans"),
    "hdbscan_min_cluster_size": ("hdbscan", "dict_hdbscan"),
}


def applies(name: str, clustering: Any) -> bool:
    """Whether setting ``name`` means anything for a run clustered with ``clustering`` (unknown: shown)."""
    return name not in _ONLY_FOR or not isinstance(clustering, str) or clustering in _ONLY_FOR[name]


def settings_rows(run: RunData) -> List[List[str]]:
    """The settings that change results (the configuration's resume key), ``[name, value]``; settings of
    another clustering method than the run's (the DBSCAN quantile ``q`` on a k-means run) are left out."""
    pipe = run.manifest.get("key", {}).get("config", {}).get("pipeline")
    src = pipe if isinstance(pipe, dict) else (run.config or {})
    clustering = src.get("clustering", _clustering(run.config or {}).get("clustering"))
    return [[k, _short(v)] for k, v in sorted(src.items()) if applies(k, clustering)]


def test_double_note(run: RunData) -> Optional[str]:
    """The banner of a run made with a test-double backbone, else ``None``."""
    return TEST_DOUBLE_NOTE if is_test_double(run.manifest.get("key", {}).get("model")) else None


def accuracy_rows(run: RunData) -> List[Dict[str, Any]]:
    """One row per method: mean, std, CI (fractions), per-run accuracies, unmatched, queries, complete."""
    out = []
    for m in run.methods:
        s = run.summary["methods"][m]
        out.append(
            {
                "method": m,
                "mean": s.get("mean"),
                "std": s.get("std"),
                "ci": s.get("ci"),
                "per_run": [v.get("accuracy") for v in s.get("runs", {}).values()],
                "unmatched": sum(int(v.get("unmatched", 0)) for v in s.get("runs", {}).values()),
                "n_queries": s.get("n_queries"),
                "complete": s.get("complete"),
            }
        )
    return out


def delta_rows(run: RunData) -> List[Dict[str, Any]]:
    """Each UCS form against its base selector: Δ accuracy and its paired bootstrap interval."""
    ms = {m: run.summary["methods"][m] for m in run.methods}
    n_boot = int(run.summary.get("n_boot", 2000))
    conf = float(run.summary.get("confidence", 0.95))
    out = []
    for m in ms:
        if not m.endswith("+ucs") or m[:-4] not in ms:
            continue
        d = paired_delta(ms[m], ms[m[:-4]], n_boot=n_boot, confidence=conf)
        if d is not None:
            out.append({"method": m, "base": m[:-4], **d})
    return out


def coverage_rows(run: RunData) -> List[Dict[str, Any]]:
    """Per method: distinct clusters, mean cluster size and Φ of its prompts (means over runs), and the share
    of their demonstrations that carry the query's label (``None`` when not recorded)."""
    out = []
    order = [m for m in run.methods if m in run.coverage] + [m for m in run.coverage if m not in run.methods]
    for m in order:
        runs = list(run.coverage[m].values())

        def mean(k: str) -> Optional[float]:
            v = [r[k] for r in runs if r.get(k) is not None and np.isfinite(r[k])]
            return float(np.mean(v)) if v else None

        out.append(
            {
                "method": m,
                "unique_clusters": mean("unique_clusters"),
                "mean_cluster_size": mean("mean_cluster_size"),
                "phi": mean("phi"),
                "runs": len(runs),
                "same_label": (run.label_agreement.get(m) or {}).get("mean"),
            }
        )
    return out


def health(labels: np.ndarray, y: Optional[List[str]] = None) -> Dict[str, Any]:
    """:func:`ucs.clustering.cluster_health` of a partition as a dict (largest and singleton fractions of the
    pool, number of clusters, effective number ``exp(entropy)``, and with labels ``y`` AMI and purity)."""
    from ucs.clustering import cluster_health

    return cluster_health(labels, y=y).to_dict()


def health_rows(run: RunData) -> List[Dict[str, Any]]:
    """Health of every clustering the run's selections used (one row per run seed and quantile)."""
    out = []
    for seed, by_q in run.clusters.get("files", {}).items():
        for q in by_q:
            ids = run.cluster_ids(int(seed), q)
            if ids is None:
                continue
            y = run.pool_labels if len(run.pool_labels) == ids.size else None
            out.append({"seed": int(seed), "q": float(q), **health(ids, y)})
    return out


def timing_rows(run: RunData) -> List[Dict[str, Any]]:
    """One row per recorded call: when, and the stages (name, seconds), longest first. Stages nest
    (``evaluate`` includes the selections and query embeddings it triggered), so they are not summed."""
    out = []
    for t in run.timings:
        st = {k: float(v) for k, v in (t.get("timings") or {}).items()}
        out.append({"at": t.get("at") or "(earlier)", "stages": sorted(st.items(), key=lambda kv: -kv[1])})
    return out

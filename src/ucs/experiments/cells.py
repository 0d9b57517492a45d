"""Running one cell of an experiment through :class:`~ucs.pipeline.Pipeline`, resumably.

Where each kind of cell keeps its files (``work`` = the work directory):

* ``accuracy`` and ``coverage`` cells share one runner folder per configuration,
  ``work/evals/<dataset>__<backbone>__<hash of the resume key>/``: two experiments that evaluate the same
  configuration (the main table's UCS+DPP and the score-design ablation's default row, say) answer each
  prompt once, and coverage cells read the selections and diagnostics an evaluation left there (and leave
  theirs for a later evaluation). The runner's manifest guards the folder against a different configuration.
* ``clusters`` and ``runtime`` cells keep their own folder, ``work/<experiment>/<cell>/``, with a
  ``cell.json`` holding the result and the key it was computed for.

Embeddings and clusterings always come from the shared cache (``cache_dir``); nothing is recomputed that a
previous invocation finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ucs.clustering import LatentClusterer, cluster_health, cluster_report
from ucs.data import load_dataset
from ucs.embedding.cache import default_cache_dir
from ucs.evaluation.fingerprints import record_fingerprints
from ucs.evaluation.predict import get_mode
from ucs.evaluation.prompts import format_for_task
from ucs.evaluation.summary import demonstration_vote, label_agreement, strict_matcher_summary, summarize
from ucs.evaluation.run_folder import RunFolder, method_file_stem
from ucs.evaluation.runner import selection_path
from ucs.experiments.spec import Cell, _safe
from ucs.pipeline import Pipeline
from ucs.pipeline.backbones import backbone_kwargs, load_backbone_for, load_retrieval_for
from ucs.selectors.method import MethodSpec
from ucs.utils.integrity import save_checked_npy
from ucs.utils.io import atomic_write_json

__all__ = ["Models", "CellContext", "run_cell", "read_accuracy", "eval_dir_for", "query_texts_for"]


#: What a page's manifest keeps of each cell's runner manifest: the resume key, how far it got, the machine
#: that last wrote it, and the fingerprints of its selections and answers
#: (:mod:`ucs.evaluation.fingerprints`).
_RUNNER_FIELDS = ("key", "methods", "status", "n_records", "limit", "platform", "fingerprints")


class Models:
    """Backbones and retrieval embedders loaded once and shared by every cell of a reproduction.

    Parameters
    ----------
    backbone_factory : callable, optional
        ``factory(config) -> backbone``; default :func:`ucs.pipeline.load_backbone_for`. Tests pass one
        that counts model calls.
    """

    def __init__(self, backbone_factory: Optional[Callable[[Any], Any]] = None) -> None:
        self.backbone_factory = backbone_factory
        self.backbones: Dict[str, Any] = {}
        self.retrievals: Dict[str, Any] = {}

    @staticmethod
    def _key(cfg: Any) -> str:
        if cfg.backbone.lower().startswith("dummy"):
            return cfg.backbone.lower()
        return json.dumps([cfg.backbone, cfg.engine, backbone_kwargs(cfg)], sort_keys=True, default=str)

    def backbone(self, cfg: Any) -> Any:
        key = self._key(cfg)
        if key not in self.backbones:
            self.backbones[key] = (self.backbone_factory or load_backbone_for)(cfg)
        return self.backbones[key]

    def retrieval(self, cfg: Any) -> Any:
        """The retrieval embedder (``None`` for ``backbone``: the pipeline derives it from the pool
        embeddings)."""
        if cfg.retrieval_embedder == "backbone":
            return None
        key = json.dumps([cfg.retrieval_embedder, cfg.device])
        if key not in self.retrievals:
            self.retrievals[key] = load_retrieval_for(cfg, None)
        return self.retrievals[key]


class CellContext:
    """Where and how cells run: work, cache and store folders, the shared models, the query limit.

    ``store_dir`` holds the answer and score stores (default: inside ``cache_dir``; see
    :class:`~ucs.pipeline.Pipeline`)."""

    def __init__(
        self,
        work_dir: "str | Path",
        cache_dir: "str | Path | None" = None,
        models: Optional[Models] = None,
        limit: Optional[int] = None,
        progress: bool = False,
        store_dir: "str | Path | None" = None,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.models = models or Models()
        self.limit = limit
        self.progress = progress
        self._datasets: Dict[Any, Any] = {}

    def dataset(self, cfg: Any) -> Any:
        key = (cfg.dataset, cfg.data_dir)
        if key not in self._datasets:
            self._datasets[key] = load_dataset(cfg.dataset, cfg.data_dir)
        return self._datasets[key]

    def pipeline(self, cell: Cell, out_dir: "Path | None", *, reuse_answers: bool = True) -> Any:
        """A :class:`~ucs.pipeline.Pipeline` for ``cell``; ``reuse_answers=False`` keeps it off the shared
        answer store (timed evaluations must send their prompts to the model)."""
        cfg = cell.config
        return Pipeline(
            cfg,
            dataset=self.dataset(cfg),
            backbone=self.models.backbone(cfg),
            retrieval=self.models.retrieval(cfg),
            cache_dir=self.cache_dir,
            out_dir=out_dir,
            progress=self.progress,
            reuse_answers=reuse_answers,
            store_dir=self.store_dir,
        )

    def cell_dir(self, cell: Cell) -> Path:
        return self.work_dir / cell.experiment / cell.id


def eval_dir_for(work_dir: "str | Path", cell: Cell) -> Path:
    """The runner folder shared by every accuracy / coverage cell with this cell's resume key."""
    key_dict = cell.config.key_dict()
    key = json.dumps(key_dict, sort_keys=True, default=str)
    h = hashlib.sha256(key.encode()).hexdigest()[:12]
    backbone = _safe(key_dict["backbone"])  # a model URL without credentials or client options
    return Path(work_dir) / "evals" / f"{_safe(cell.dataset)}__{backbone}__{h}"


def query_texts_for(cfg: Any, dataset: Any, limit: Optional[int]) -> List[str]:
    """The protocol's evaluation queries (the first ``limit``), exactly as the runner draws them."""
    idx = cfg.protocol().test_indices(dataset)
    n = len(idx) if limit is None else min(int(limit), len(idx))
    return [dataset.test.texts[int(i)] for i in idx[:n]]


def _cached(path: Path, key: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") == json.loads(json.dumps(key, default=str)):
            return data["result"]
    return None


def _cell_key(cell: Cell, ctx: CellContext, **extra: Any) -> Dict[str, Any]:
    return {
        "config": cell.config.key_dict(),
        "methods": list(cell.methods),
        "limit": ctx.limit,
        "options": dict(cell.options),
        **extra,
    }


# ---------------------------------------------------------------------- kinds
def run_accuracy(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """Evaluate the cell's methods with the resumable runner; returns their summaries and coverage."""
    out = eval_dir_for(ctx.work_dir, cell)
    pipe = ctx.pipeline(cell, out)
    res = pipe.run(out, methods=cell.method_specs, limit=ctx.limit)
    summ = res.summary
    manifest = RunFolder(out).read_manifest()
    return {
        "dir": str(out),
        "n_queries": int(summ.get("n_queries_requested", 0)),
        "n_drawn": _n_drawn(cell, ctx),  # more than n_queries under --limit
        "methods": {m: summ["methods"][m] for m in cell.methods if m in summ["methods"]},
        "coverage": {m: res.coverage[m] for m in cell.methods if m in res.coverage},
        "label_agreement": {m: res.label_agreement[m] for m in cell.methods if m in res.label_agreement},
        "vote": {m: v for m, v in (summ.get("vote") or {}).items() if m in cell.methods},
        "strict_matcher": {m: v for m, v in (summ.get("strict_matcher") or {}).items() if m in cell.methods},
        "new_records": int(res.evaluation.n_new_records),
        "computed": bool(res.evaluation.n_new_records),
        "runner_manifest": {k: manifest.get(k) for k in _RUNNER_FIELDS},
        "timings": dict(pipe.timings),
    }


def read_accuracy(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """An accuracy cell as far as its runner folder has it, computing nothing
    (``ucs reproduce --render-only``).

    The summaries are recomputed from ``records.jsonl`` (each line verified by its checksum), with the same
    bootstrap as the runner's; a method is reported only when every query of every run is recorded — the
    others are listed under ``pending`` and the page shows "—" for them. Coverage comes from the folder's
    cached diagnostics and selections. Cost: reading the records, ``O(records)``.
    """
    out = eval_dir_for(ctx.work_dir, cell)
    n_q = len(query_texts_for(cell.config, ctx.dataset(cell.config), ctx.limit))
    seeds = cell.config.run_seeds
    folder = RunFolder(out)
    records = folder.read_records()
    records = [r for r in records if r["method"] in cell.methods and r["query"] < n_q]
    summ = summarize(records, run_seeds=seeds)["methods"] if records else {}
    done = {
        m: s
        for m, s in summ.items()
        if s.get("complete") and all(r.get("n") == n_q for r in s.get("runs", {}).values())
    }
    coverage: Dict[str, Any] = {}
    agreement: Dict[str, Any] = {}
    vote: Dict[str, Any] = {}
    if done:
        pipe = ctx.pipeline(cell, out)
        table = pipe.coverage_table(list(done), n_q)
        coverage = {m: table[m] for m in done if m in table}
        shown = [r for r in records if r["method"] in done]
        agreement = label_agreement(shown, pipe.dataset.pool.labels, run_seeds=seeds)
        vote = demonstration_vote(shown, pipe.dataset.pool.labels, run_seeds=seeds)
    res = {
        "dir": str(out),
        "n_queries": n_q,
        "n_drawn": _n_drawn(cell, ctx),
        "methods": done,
        "coverage": coverage,
        "label_agreement": agreement,
        "vote": vote,
        "strict_matcher": _strict_summaries(cell, ctx, [r for r in records if r["method"] in done]),
        "new_records": 0,
        "computed": False,
        "pending": [m for m in cell.methods if m not in done],
    }
    if folder.manifest.is_file():
        manifest = folder.read_manifest()
        runner = {k: manifest.get(k) for k in _RUNNER_FIELDS}
        runner["fingerprints"] = record_fingerprints([r for r in records if r["method"] in done])
        res["runner_manifest"] = runner
    return res


def _n_drawn(cell: Cell, ctx: CellContext) -> int:
    """How many test queries the cell's protocol draws (what a run without ``--limit`` evaluates)."""
    return len(cell.config.protocol().test_indices(ctx.dataset(cell.config)))


def _strict_summaries(cell: Cell, ctx: CellContext, records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The strict matcher's summaries of a generation cell matched by the paper's rule, as the runner writes
    them (:func:`~ucs.evaluation.summary.strict_matcher_summary`); empty for other modes."""
    mode = get_mode(cell.config.mode)
    if mode.kind != "generate" or mode.matcher == "strict" or not records:
        return {}
    ds = ctx.dataset(cell.config)
    return strict_matcher_summary(
        records, ds.label_names, format_for_task(ds.task).answer_marker, run_seeds=cell.config.run_seeds
    )


def run_coverage(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """Coverage exposure of the selections (no ICL calls), per (method, run seed); resumable per pair."""
    out = eval_dir_for(ctx.work_dir, cell)
    pipe = ctx.pipeline(cell, out)
    queries = query_texts_for(cell.config, pipe.dataset, ctx.limit)
    n_q = len(queries)
    table = pipe.coverage_table(cell.methods, n_q)
    computed = 0
    for spec in cell.method_specs:  # the specs of cell.methods, in its order
        m = spec.name
        for s in cell.config.run_seeds:
            if str(s) in table.get(m, {}):
                continue
            sel = pipe.selection(spec, s, queries)
            path = selection_path(out, m, s, queries)
            if not path.is_file():  # hand the selection to a later evaluation of this folder
                save_checked_npy(path, np.asarray(sel.indices, dtype=np.int64))
            computed += 1
    if computed:
        table = pipe.coverage_table(cell.methods, n_q)
    return {
        "dir": str(out),
        "n_queries": n_q,
        "n_drawn": _n_drawn(cell, ctx),
        "coverage": {m: table.get(m, {}) for m in cell.methods},
        "computed": bool(computed),
        "selections_computed": computed,
        "timings": dict(pipe.timings),
    }


def _audit_entry(
    ids: np.ndarray, c: int, labels: List[str], texts: List[str], n_members: int, seed: int = 0
) -> Dict[str, Any]:
    """Size, purity, label composition and ``n_members`` members (a seeded random sample, in pool order:
    pools are often sorted by label, so the first members would all share one label)."""
    members = np.flatnonzero(ids == c)
    if members.size > n_members:
        shown = np.sort(
            np.random.default_rng([int(seed), int(c)]).choice(members, size=n_members, replace=False)
        )
    else:
        shown = members
    vals, cnts = np.unique(np.asarray(labels, dtype=object)[members].astype(str), return_counts=True)
    order = np.lexsort((vals, -cnts))
    return {
        "cluster": int(c),
        "size": int(members.size),
        "purity": float(cnts[order[0]] / members.size),
        "majority_label": str(vals[order[0]]),
        "composition": [[str(vals[i]), int(cnts[i])] for i in order],
        "members": [[texts[i], labels[i]] for i in shown.tolist()],
    }


def run_clusters(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """Cluster-size distribution and health (every run seed) and the qualitative audit (first run seed)."""
    d = ctx.cell_dir(cell)
    key = _cell_key(cell, ctx)
    hit = _cached(d / "cell.json", key)
    if hit is not None:
        return {**hit, "computed": False}
    o = cell.options
    pipe = ctx.pipeline(cell, None)
    ds = pipe.dataset
    labels = [ds.label_names[int(y)] for y in ds.pool.labels]
    texts = list(ds.pool.texts)
    per_seed: Dict[str, Any] = {}
    audit: Dict[str, Any] = {}
    for i, seed in enumerate(cell.config.run_seeds):
        ids = pipe.cluster_ids(seed)
        rep = cluster_report(ids, y=np.asarray(labels, dtype=object), top=8)
        per_seed[str(seed)] = {
            "n_items": rep.n_items,
            "n_clusters": rep.n_clusters,
            "n_singletons": rep.n_singletons,
            "purity": rep.purity,
            "items_by_size": {str(k): v for k, v in rep.items_by_size.items()},
            "largest_sizes": rep.largest_sizes,
            "health": cluster_health(ids, np.asarray(labels, dtype=object)).to_dict(),
        }
        if i == 0:
            n_members = int(o.get("audit_members", 5))
            largest = [
                _audit_entry(ids, c.cluster, labels, texts, n_members, seed)
                for c in rep.top[: int(o.get("audit_largest", 3))]
            ]
            sizes = np.bincount(ids)
            lo, hi = int(o.get("audit_min_size", 3)), int(o.get("audit_max_size", 10))
            cand = np.flatnonzero((sizes >= lo) & (sizes <= hi))
            k = min(int(o.get("audit_small", 4)), cand.size)
            pick = np.sort(np.random.default_rng(int(seed)).choice(cand, size=k, replace=False)) if k else []
            small = [_audit_entry(ids, int(c), labels, texts, n_members, seed) for c in pick]
            audit = {"seed": int(seed), "largest": largest, "small": small, "size_range": [lo, hi]}
    result = {"per_seed": per_seed, "audit": audit, "n_pool": len(texts)}
    atomic_write_json(d / "cell.json", {"key": key, "result": result})
    return {**result, "computed": True}


def run_runtime(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """Offline stage times (fresh embedding sample + fresh clustering fit) and online time per method."""
    d = ctx.cell_dir(cell)
    key = _cell_key(cell, ctx)
    offline_path = d / "offline.json"
    offline_key = {**key, "embedding": "timed after a warm-up call"}
    offline = _cached(offline_path, offline_key)
    # Timed evaluations answer every prompt with the model: no shared answer store, and one runner folder
    # per method (a folder answers a repeated prompt once, which would credit a UCS form with the answers
    # its base selector already paid for). Repeats within one method's runs still count once, as they
    # would for a user. A method's timing is all or nothing: an interrupted one starts over.
    online_key = {**key, "evaluation": "per-method folders, no answer store"}
    pipe = ctx.pipeline(cell, d / "eval", reuse_answers=False)
    computed = offline is None
    if offline is None:
        offline = _time_offline(cell, pipe)
        atomic_write_json(offline_path, {"key": offline_key, "result": offline})
    # warm the caches so that the online times are selection + evaluation only
    queries = query_texts_for(cell.config, pipe.dataset, ctx.limit)
    for s in cell.config.run_seeds:
        for spec in cell.method_specs:
            pipe.cluster_ids(s, cell.config.dbscan_q_for(spec))
    pipe.retrieval_pool()
    pipe.retrieval_queries(queries)
    online: Dict[str, Any] = {}
    for spec in cell.method_specs:
        m = spec.name
        safe = method_file_stem(m)
        path = d / "online" / f"{safe}.json"
        hit = _cached(path, online_key)
        if hit is None:
            hit = _time_online(pipe, spec, d / "eval" / safe, ctx.limit)
            atomic_write_json(path, {"key": online_key, "result": hit})
            computed = True
        online[m] = hit
    return {
        "dir": str(d),
        "offline": offline,
        "online": online,
        "n_queries": len(queries),
        "computed": computed,
    }


def _time_offline(cell: Cell, pipe: Any) -> Dict[str, Any]:
    """Embedding time of a sample of the pool (scaled to the pool) and one fresh clustering fit."""
    texts = list(pipe.dataset.pool.texts)
    n_embed = cell.options.get("embed_sample")
    n_embed = len(texts) if n_embed is None else min(int(n_embed), len(texts))
    # one small untimed call first: the first forward pass of a process pays one-off costs (lazy
    # initialisation, kernel selection) that would otherwise be charged to whichever dataset runs first
    pipe.backbone.embed(texts[: min(8, n_embed)])
    t0 = time.perf_counter()
    pipe.backbone.embed(texts[:n_embed])  # bypasses the cache on purpose: this is what is timed
    emb_s = time.perf_counter() - t0
    E = pipe.pool_embeddings()
    t0 = time.perf_counter()
    est = LatentClusterer(**pipe.clusterer_params(cell.config.run_seeds[0])).fit(E)
    fit_s = time.perf_counter() - t0
    return {
        "n_pool": len(texts),
        "embed_texts": n_embed,
        "embed_s": emb_s,
        "embed_pool_s": emb_s * len(texts) / max(n_embed, 1),
        "cluster_fit_s": fit_s,
        "stages": {k: float(v) for k, v in getattr(est, "timings_", {}).items()},
        "n_clusters": int(est.n_clusters_),
    }


def _time_online(pipe: Any, method: MethodSpec, eval_dir: Path, limit: Optional[int]) -> Dict[str, Any]:
    """Selection + evaluation time of one method in a folder of its own (an interrupted timing starts
    over)."""
    if eval_dir.exists():  # time the whole evaluation again, not its remainder
        shutil.rmtree(eval_dir)
    before = pipe.timings.get(f"select:{method}", 0.0)
    load0 = _load_1min()
    t0 = time.perf_counter()
    res = pipe.run(eval_dir, methods=[method], limit=limit)
    total = time.perf_counter() - t0
    sel = pipe.timings.get(f"select:{method}", 0.0) - before
    n_new = int(res.evaluation.n_new_records)
    new = RunFolder(eval_dir).read_records()[-n_new:] if n_new else []
    return {
        "total_s": total,
        "selection_s": sel,
        "evaluation_s": total - sel,
        "records": n_new,
        "answered": int(sum(not r.get("reused") for r in new)),
        "load_1min": [load0, _load_1min()],
    }


def _load_1min() -> Optional[float]:
    """The system's 1-minute load average (runnable processes; about the CPU count when a timed run has the
    machine to itself, more when something else competes), or ``None`` where the OS does not report it."""
    try:
        return round(float(os.getloadavg()[0]), 2)
    except (AttributeError, OSError):
        return None


def run_health(cell: Cell, ctx: CellContext) -> Dict[str, Any]:
    """Cluster health (SPEC §8) of the cell's clustering for every run seed, against the pool's labels,
    with the size spectrum (all sizes, descending) of the first seed and what ``auto`` chose."""
    d = ctx.cell_dir(cell)
    key = _cell_key(cell, ctx)
    hit = _cached(d / "cell.json", key)
    if hit is not None:
        return {**hit, "computed": False}
    pipe = ctx.pipeline(cell, None)
    ds = pipe.dataset
    y = np.asarray([ds.label_names[int(v)] for v in ds.pool.labels], dtype=object)
    per_seed: Dict[str, Any] = {}
    sizes: List[int] = []
    for i, seed in enumerate(cell.config.run_seeds):
        ids = pipe.cluster_ids(seed)
        h = cluster_health(ids, y)
        meta = pipe.cluster_meta(seed)
        auto = meta.get("auto_choice")
        # the clusterer's own stage timings (recorded when it was fitted; no embedding, no cache reads)
        per_seed[str(seed)] = {
            **h.to_dict(),
            "seconds": float(sum((meta.get("timings") or {}).values())),
            "chosen": None if auto is None else auto["chosen"],
        }
        if i == 0:
            sizes = sorted(np.bincount(ids).tolist(), reverse=True)
    result = {"per_seed": per_seed, "sizes": sizes, "n_pool": int(len(y))}
    atomic_write_json(d / "cell.json", {"key": key, "result": result})
    return {**result, "computed": True}


RUNNERS = {
    "accuracy": run_accuracy,
    "coverage": run_coverage,
    "clusters": run_clusters,
    "health": run_health,
    "runtime": run_runtime,
}


def run_cell(kind: str, cell: Cell, ctx: CellContext, *, compute: bool = True) -> Dict[str, Any]:
    """Run ``cell`` as an experiment of ``kind`` (``accuracy``, ``coverage``, ``clusters``, ``runtime``);
    ``compute=False`` (accuracy cells only) reads what its runner folder holds (:func:`read_accuracy`)."""
    if not compute:
        if kind != "accuracy":
            raise ValueError(
                f"only accuracy experiments can be rendered without computing; this one is {kind!r}"
            )
        return read_accuracy(cell, ctx)
    return RUNNERS[kind](cell, ctx)

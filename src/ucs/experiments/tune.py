"""Tuning ``dbscan_q`` and ``λ`` per UCS selector on a validation split held out of the pool.

The paper tuned both by grid search (its Tables 9–10) without saying on what. :func:`tune` does it on data
the test set never sees: a seeded fraction of the **pool** becomes the validation queries, the selectors
choose demonstrations from the rest of the pool, and the criterion is ICL accuracy on those queries.
It is cheap because nothing expensive is recomputed per grid point:

* the full pool is embedded once (the embedding cache) and the remaining pool's rows are sliced out of it
  (:class:`~ucs.pipeline.Pipeline`'s ``pool_embeddings=`` hook);
* the remaining pool is clustered once per run seed and every other ``q`` is a re-cut
  (:meth:`~ucs.clustering.LatentClusterer.recut`), stored in the cluster cache;
* each grid point is a resumable runner folder, and ``λ = 0`` (the base selector, whatever ``q``) is
  evaluated once per selector.

>>> from ucs.experiments.tune import default_grids
>>> q, lam = default_grids()
>>> q
(0.01, 0.1, 0.15, 0.5)
>>> lam[:3]
(0.0, 0.001, 0.005)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ucs.data.splits import pool_test_split
from ucs.evaluation.summary import paired_delta
from ucs.pipeline import Pipeline
from ucs.pipeline.config import parse_method_specs, parse_methods
from ucs.selectors.method import MethodSpec
from ucs.selectors.prior import check_lam
from ucs.pipeline.presets import TUNED_DBSCAN_Q, TUNED_LAMBDA
from ucs.utils.io import atomic_write_json, atomic_write_text

__all__ = ["default_grids", "validation_split", "TuneResult", "tune", "tune_variants", "parse_variants"]


def default_grids() -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """``q``: the values in paper Table 9; ``λ``: the values in paper Table 10 plus 0 (the base selector)."""
    return tuple(sorted(set(TUNED_DBSCAN_Q.values()))), tuple(sorted(set(TUNED_LAMBDA.values()) | {0.0}))


def validation_split(
    dataset: Any, fraction: float = 0.1, seed: int = 0
) -> Tuple[Any, np.ndarray, np.ndarray]:
    """``dataset`` with a seeded ``fraction`` of its pool moved into the test split (the validation queries).

    Returns ``(tuning dataset, kept pool indices, validation pool indices)``; indices refer to the original
    pool. The original test split is dropped, so nothing downstream can read it.
    """
    from dataclasses import replace

    if not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1); got {fraction!r}")
    keep, val = pool_test_split(len(dataset.pool), 1.0 - float(fraction), seed)
    info = {k: v for k, v in dataset.info.items()}
    info.update(
        validation_of=dataset.name,
        val_fraction=float(fraction),
        val_seed=int(seed),
        val_pool_indices=[int(i) for i in val],
    )
    tuned = replace(
        dataset,
        name=f"{dataset.name}-val",
        pool=dataset.pool.subset(keep),
        test=dataset.pool.subset(val),
        info=info,
        validation=None,
    )
    return tuned, keep, val


def _fmt_q(q: float) -> str:
    return repr(float(q))


@dataclass
class TuneResult:
    """The grid (one row per evaluated point) and the chosen values."""

    grid: List[Dict[str, Any]]
    chosen: Dict[str, Dict[str, float]]
    config: Any  # the tuned PipelineConfig
    out_dir: Path
    info: Dict[str, Any] = field(default_factory=dict)
    #: The tuned methods (the grid rows' ``selector`` are their canonical names).
    methods: Tuple[MethodSpec, ...] = ()

    def to_markdown(self) -> str:
        lines = [
            f"# Tuning on a validation split of the {self.info.get('dataset')} pool",
            "",
            f"- validation: {self.info.get('n_val_queries')} queries held out of the pool "
            f"(fraction {self.info.get('val_fraction')}, seed {self.info.get('val_seed')}); selectors choose "
            f"from the remaining {self.info.get('n_pool')} items; the test split is never read",
            f"- backbone `{self.config.public_dict()['backbone']}`, mode `{self.config.mode}`, "
            f"{self.config.n_runs} run(s); "
            "criterion: mean accuracy; ties go to the configuration's own (paper default) values",
            "",
        ]

        specs = {m.name: m for m in self.methods}
        for sel in dict.fromkeys(r["selector"] for r in self.grid):
            base_name = specs[sel].base
            rows = [r for r in self.grid if r["selector"] == sel]
            qs = sorted({r["q"] for r in rows if r["lam"] != 0})
            lams = sorted({r["lam"] for r in rows})
            base = next((r for r in rows if r["lam"] == 0), None)
            lines += [
                f"## {sel}",
                "",
                "accuracy % (rows q, columns λ; λ = 0 is the base selector, the same for every q)",
                "",
                "| q \\ λ | " + " | ".join(f"{lam:g}" for lam in lams) + " |",
                "|---|" + "---|" * len(lams),
            ]
            for q in qs:
                cells = []
                for lam in lams:
                    r = base if lam == 0 else next((x for x in rows if x["q"] == q and x["lam"] == lam), None)
                    acc = "—" if r is None or r["accuracy"] is None else f"{100 * r['accuracy']:.1f}"
                    if self.chosen["lam_by_selector"].get(base_name) == lam and (
                        lam == 0 or self.chosen["dbscan_q_by_selector"].get(base_name) == q
                    ):
                        acc = f"**{acc}**"
                    cells.append(acc)
                lines.append(f"| {q:g} | " + " | ".join(cells) + " |")
            lines += [
                "",
                f"chosen: q = {self.chosen['dbscan_q_by_selector'][base_name]:g}, "
                f"λ = {self.chosen['lam_by_selector'][base_name]:g}",
                "",
            ]
        return "\n".join(lines)


def _choose(rows: List[Dict[str, Any]], q0: float, lam0: float) -> Tuple[float, float]:
    """Best mean accuracy; ties toward ``(q0, λ0)``: the same q and λ first, then the nearest (log scale)."""

    def dist(v: float, ref: float) -> float:
        return abs(math.log10(v + 1e-4) - math.log10(ref + 1e-4))

    def key(r: Dict[str, Any]) -> Tuple:
        acc = -1.0 if r["accuracy"] is None else r["accuracy"]
        return (-round(acc, 12), r["q"] != q0, r["lam"] != lam0, dist(r["lam"], lam0) + dist(r["q"], q0))

    best = min(rows, key=key)
    return float(best["q"]), float(best["lam"])


def _validation_setup(
    config: Any,
    dataset: Any,
    backbone: Any,
    retrieval: Any,
    cache_dir: Any,
    val_fraction: float,
    val_seed: int,
    variants: Sequence[Any] = (),
) -> Tuple[Any, np.ndarray, np.ndarray, Dict[str, Any]]:
    """The full pool's pipeline (its embeddings from the cache), the kept and validation pool indices, and the
    keyword arguments every validation pipeline shares (the validation dataset, the models, the kept rows).

    The backbone embeds the pool only when some setting reads its embeddings (the backbone's cluster space or
    retrieval): with the retrieval embedder's clusters, ICL needs no pool embedding from the backbone at
    all."""
    full = Pipeline(
        config, dataset=dataset, backbone=backbone, retrieval=retrieval, cache_dir=cache_dir, progress=False
    )
    needs_backbone = any(
        c.cluster_space == "backbone" or c.retrieval_embedder == "backbone" for c in (config, *variants)
    )
    E = full.pool_embeddings() if needs_backbone else None
    R = full.retrieval_pool() if config.retrieval_embedder != "backbone" else None
    val_ds, keep, val = validation_split(full.dataset, val_fraction, val_seed)
    shared = dict(
        dataset=val_ds,
        backbone=full.backbone,
        retrieval=full._retrieval,
        cache_dir=full.cache_dir,
        pool_embeddings=None if E is None else E[keep],
        retrieval_embeddings=None if R is None else R[keep],
    )
    return full, keep, val, shared


def tune(
    config: Any,
    out_dir: "str | Path",
    *,
    selectors: Optional[Sequence[str]] = None,
    q_grid: Optional[Sequence[float]] = None,
    lam_grid: Optional[Sequence[float]] = None,
    val_fraction: float = 0.1,
    val_seed: int = 0,
    limit: Optional[int] = None,
    cache_dir: "str | Path | None" = None,
    dataset: Any = None,
    backbone: Any = None,
    retrieval: Any = None,
    progress: bool = False,
) -> TuneResult:
    """Grid-search ``dbscan_q`` × ``λ`` for each UCS selector on a validation split of the pool.

    Parameters
    ----------
    config : PipelineConfig
        Everything else (dataset, backbone, mode, runs, ...). ``test_size`` caps the number of validation
        queries (drawn once with ``test_seed`` from the held-out pool items); ``config.dbscan_q_for`` /
        ``config.lam_for`` of each selector are the tie-break defaults.
    out_dir : path
        Receives ``tune.md``, ``tune.json`` (the grid), ``chosen.json`` (``lam_by_selector`` and
        ``dbscan_q_by_selector``), ``tuned_config.json`` (a complete configuration for ``ucs evaluate
        --config``) and one runner folder per grid point under ``grid/`` (rerun to resume).
    selectors : sequence of str, optional
        UCS methods to tune (default: the ``+ucs`` methods of ``config.selector["method"]``).
    q_grid, lam_grid : sequence of float, optional
        Default :func:`default_grids` (paper Tables 9 and 10, plus ``λ = 0``).
    val_fraction, val_seed : float, int
        Share of the pool held out as validation queries, and the seed of that split.
    limit : int, optional
        Only the first ``limit`` validation queries.
    dataset, backbone, retrieval : optional
        Injected objects (tests); defaults come from ``config``.

    Returns
    -------
    TuneResult

    Notes
    -----
    Cost: ``len(selectors) × (len(q_grid) × (len(lam_grid) − 1) + 1)`` evaluations of ``n_runs × n_val``
    prompts; one clustering fit per run seed and one re-cut per ``q``.
    """
    out = Path(out_dir)
    methods, q_grid, lam_grid = _check_grid(config, selectors, q_grid, lam_grid)
    full, keep, val, shared = _validation_setup(
        config, dataset, backbone, retrieval, cache_dir, val_fraction, val_seed
    )
    # one fit per run seed, every q a re-cut, all stored in the cluster cache for the grid points below
    base_pipe = Pipeline(config, progress=False, **shared)
    for s in config.run_seeds:
        for q in q_grid:
            base_pipe.cluster_ids(s, q)
    grid = [
        row
        for m in methods
        for row in _evaluate_grid(config, m, q_grid, lam_grid, out, shared, limit, progress)
    ]
    chosen: Dict[str, Dict[str, float]] = {"lam_by_selector": {}, "dbscan_q_by_selector": {}}
    for m in methods:
        base = m.base
        rows = [r for r in grid if r["selector"] == m.name]
        expanded = [dict(r, q=q) for r in rows if r["lam"] == 0.0 for q in q_grid] + [
            r for r in rows if r["lam"] != 0
        ]
        chosen["dbscan_q_by_selector"][base], chosen["lam_by_selector"][base] = _choose(
            expanded, config.dbscan_q_for(m), config.lam_for(m)
        )
    tuned = config.replace(
        lam_by_selector={**config.lam_by_selector, **chosen["lam_by_selector"]},
        dbscan_q_by_selector={**config.dbscan_q_by_selector, **chosen["dbscan_q_by_selector"]},
    )
    n_val = max((r["n_queries"] or 0) for r in grid) if grid else 0
    info = {
        "dataset": full.dataset.name,
        "val_fraction": float(val_fraction),
        "val_seed": int(val_seed),
        "n_val_pool": int(len(val)),
        "n_val_queries": int(n_val),
        "n_pool": int(len(keep)),
        "q_grid": list(q_grid),
        "lam_grid": list(lam_grid),
        "selectors": [m.name for m in methods],
    }
    result = TuneResult(grid, chosen, tuned, out, info, methods)
    atomic_write_json(
        out / "tune.json", {"info": info, "grid": grid, "chosen": chosen, "config": config.public_dict()}
    )
    atomic_write_json(out / "chosen.json", chosen)
    tuned.to_json(out / "tuned_config.json")
    atomic_write_text(out / "tune.md", result.to_markdown())
    return result


def _check_grid(
    config: Any,
    selectors: Optional[Sequence[str]],
    q_grid: Optional[Sequence[float]],
    lam_grid: Optional[Sequence[float]],
) -> Tuple[Tuple[MethodSpec, ...], Tuple[float, ...], Tuple[float, ...]]:
    """The UCS methods to tune and the q and λ grids (defaults filled in); a bad one is refused by name."""
    specs = (
        parse_method_specs(selectors)  # the caller's --selectors: parsed here, once
        if selectors is not None
        else tuple(s for s in config.method_specs if s.ucs)
    )
    methods = tuple(s.name for s in specs)
    if not specs or any(not s.ucs for s in specs):
        raise ValueError(
            "selectors must be UCS methods such as 'dpp+ucs'; got "
            f"{list(methods) or list(config.selector['method'])}"
        )
    dq, dl = default_grids()
    qs = tuple(float(q) for q in (q_grid if q_grid is not None else dq))
    lams = tuple(float(v) for v in (lam_grid if lam_grid is not None else dl))
    if not qs or not lams:
        raise ValueError("q_grid and lam_grid must each hold at least one value")
    for q in qs:
        if not 0.0 < q < 1.0:
            raise ValueError(f"every q in q_grid must be in (0, 1); got {q!r}")
    for v in lams:
        check_lam(v, "each λ of lam_grid")
    return specs, qs, lams


def _evaluate_grid(
    config: Any,
    method: MethodSpec,
    q_grid: Sequence[float],
    lam_grid: Sequence[float],
    out: Path,
    shared: Dict[str, Any],
    limit: Optional[int],
    progress: bool,
) -> List[Dict[str, Any]]:
    """One resumable runner folder per (q, λ) point of ``method`` (λ = 0 once: q does not matter there)."""
    base = method.base
    points = [(q_grid[0], 0.0)] if 0.0 in lam_grid else []
    points += [(q, lam) for q in q_grid for lam in lam_grid if lam != 0.0]
    rows: List[Dict[str, Any]] = []
    for q, lam in points:
        cfg = config.replace(
            selector={"method": (method,)},  # a spec passes the configuration as it is
            lam_by_selector={**config.lam_by_selector, base: lam},
            dbscan_q_by_selector={**config.dbscan_q_by_selector, base: q},
        )
        name = f"{base}__lam0" if lam == 0.0 else f"{base}__q{_fmt_q(q)}__lam{lam!r}"
        res = Pipeline(cfg, progress=progress, **shared).run(out / "grid" / name, limit=limit)
        s = res.summary["methods"].get(method.name, {})
        rows.append(
            {
                "selector": method.name,
                "q": float(q),
                "lam": float(lam),
                "accuracy": s.get("mean"),
                "std": s.get("std"),
                "ci": s.get("ci"),
                "n_queries": s.get("n_queries"),
                "dir": str(out / "grid" / name),
            }
        )
    return rows


def parse_variants(spec: str) -> Dict[str, Dict[str, Any]]:
    """``"paper:clusterer.method=dict_dbscan;km:clusterer.method=kmeans,prior.estimator=binomial"`` → named
    settings (each key a configuration path, :meth:`~ucs.pipeline.PipelineConfig.with_settings`).

    Values are read as JSON where they parse (numbers, ``null``, ``true``), else as strings.
    """
    out: Dict[str, Dict[str, Any]] = {}
    for part in (p.strip() for p in str(spec).split(";")):
        if not part:
            continue
        name, sep, body = part.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"each variant must read NAME:KEY=VALUE[,KEY=VALUE...]; got {part!r}")
        settings: Dict[str, Any] = {}
        for kv in (x.strip() for x in body.split(",") if x.strip()):
            k, eq, v = kv.partition("=")
            if not eq or not k.strip():
                raise ValueError(f"variant {name!r}: expected KEY=VALUE, got {kv!r}")
            try:
                settings[k.strip()] = json.loads(v)
            except json.JSONDecodeError:
                settings[k.strip()] = v.strip()
        name = check_variant_name(name.strip())
        if name in out:
            raise ValueError(
                f"variant name {name!r} is given twice in variants; give every variant its own name"
            )
        out[name] = settings
    if not out:
        raise ValueError(f"variants must name at least one NAME:KEY=VALUE setting; got {spec!r}")
    return out


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_variant_name(name: str) -> str:
    """``name`` if it is a safe folder name (letters, digits, ``.``, ``_``, ``-``; not starting with
    ``.``)."""
    if not _SAFE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"variant name {name!r} in variants is not a safe folder name: use letters, digits, '.', '_' and "
            "'-' (at most 64, starting with a letter or digit)"
        )
    return name


def _variant_configs(
    config: Any, variants: Dict[str, Dict[str, Any]], methods: Sequence[str]
) -> Dict[str, Any]:
    """Every variant's configuration, all checked before any runs: names, known settings, valid values."""
    out = {}
    for name, settings in variants.items():
        check_variant_name(name)
        if any(k in ("selectors", "selector.method") for k in settings) or "method" in settings.get(
            "selector", {}
        ):
            raise ValueError(
                f"variant {name!r} of variants: the selector methods are not a variant setting; pass "
                "--selectors once"
            )
        try:
            out[name] = config.with_settings({**settings, "selector.method": list(methods)})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"variant {name!r} of variants: {exc}") from exc
    return out


def tune_variants(
    config: Any,
    out_dir: "str | Path",
    variants: Dict[str, Dict[str, Any]],
    *,
    val_fraction: float = 0.1,
    val_seed: int = 0,
    limit: Optional[int] = None,
    cache_dir: "str | Path | None" = None,
    dataset: Any = None,
    backbone: Any = None,
    retrieval: Any = None,
    progress: bool = False,
    against: Optional[str] = None,
) -> TuneResult:
    """Choose among whole settings (clustering method, cluster space, estimator, relevance, selector settings,
    demonstration order, ...) on a validation split of the pool, the way :func:`tune` chooses ``q`` and ``λ``.

    Every variant evaluates the compared methods of ``config.selector["method"]`` on the same validation
    queries: the UCS methods against their base selectors (evaluated in every variant folder, answered from
    the shared answer store), or, with ``against`` (e.g. ``"topk"``), every other method against that one
    reference **as the first variant has it** — so a variant that changes the reference's own settings
    (``order=similar_last``) also scores the reference itself against its first form (with ``selectors``
    naming only the reference, that is all it compares: e.g. TopK's demonstration orders). The criterion is
    the mean over the compared methods of each variant's accuracy **gain over its reference**; ties go to the
    earlier variant, so list the configuration's own settings first. ``chosen["by_method"]`` also names each
    method's own best variant (for settings that concern one selector, such as
    ``selector.params.mmr.lambda_mult``). The test split is never read.

    Returns
    -------
    TuneResult
        ``grid``: one row per (variant, method); ``chosen``: ``{"variant": name, "settings": {...},
        "by_method": {method: variant}}``; ``config``: ``config`` with the chosen settings. Writes
        ``variants.md``, ``variants.json`` and ``tuned_config.json`` to ``out_dir``.
    """
    out = Path(out_dir)
    if not variants:
        raise ValueError("variants must hold at least one named setting")
    compared, reference = _compared_methods(config.method_specs, against)
    methods = tuple(dict.fromkeys([reference(m) for m in compared] + compared))
    configs = _variant_configs(config, variants, methods)
    full, keep, val, shared = _validation_setup(
        config, dataset, backbone, retrieval, cache_dir, val_fraction, val_seed, list(configs.values())
    )
    grid: List[Dict[str, Any]] = []
    first: Dict[
        str, Any
    ] = {}  # with ``against``: the reference as the first variant has it, for every variant
    for name, settings in variants.items():
        res = Pipeline(configs[name], progress=progress, **shared).run(out / "variants" / name, limit=limit)
        summ, agree = res.summary["methods"], res.label_agreement
        if against is not None and not first:
            ref = reference(compared[0])
            first = {"summary": summ.get(ref), "agree": agree.get(ref)}
        # every variant scores the same rows (the first variant's reference against itself: gain 0), so the
        # mean gains compare like with like
        rows = compared + (
            [reference(compared[0])] if against is not None and reference(compared[0]) not in compared else []
        )
        for m in rows:
            ref_s, ref_a = (
                (first["summary"], first["agree"])
                if against is not None
                else (summ.get(reference(m)), agree.get(reference(m)))
            )
            grid.append(_grid_row(name, settings, m, summ.get(m), ref_s, agree.get(m), ref_a))
    scores = {
        n: float(np.mean([r["gain"] for r in grid if r["variant"] == n and r["gain"] is not None] or [-1.0]))
        for n in variants
    }
    best = max(variants, key=lambda n: (round(scores[n], 12), -list(variants).index(n)))
    chosen = {
        "variant": best,
        "settings": dict(variants[best]),
        "mean_gain": scores[best],
        "by_method": {
            m: _best_variant(grid, m, list(variants)) for m in dict.fromkeys(r["selector"] for r in grid)
        },
    }
    tuned = config.with_settings(variants[best])
    info = {
        "dataset": full.dataset.name,
        "val_fraction": float(val_fraction),
        "val_seed": int(val_seed),
        "n_val_pool": int(len(val)),
        "n_pool": int(len(keep)),
        "selectors": list(compared),
        "against": None if against is None else reference(compared[0]),
        "n_val_queries": int(max((r["n_queries"] or 0) for r in grid)),
        "mean_gain": scores,
    }
    result = TuneResult(grid, chosen, tuned, out, info)
    atomic_write_json(
        out / "variants.json", {"info": info, "grid": grid, "chosen": chosen, "config": config.public_dict()}
    )
    tuned.to_json(out / "tuned_config.json")
    atomic_write_text(out / "variants.md", variants_markdown(result))
    return result


def _grid_row(
    name: str,
    settings: Dict[str, Any],
    method: str,
    summ: Optional[Dict[str, Any]],
    ref: Optional[Dict[str, Any]],
    agree: Optional[Dict[str, Any]],
    ref_agree: Optional[Dict[str, Any]],
) -> Dict[str, Any]:
    """One (variant, method) row: accuracy, its gain over the reference with the paired interval, and the
    share of demonstrations with the query's label with its paired change."""
    acc, ref_acc = (summ or {}).get("mean"), (ref or {}).get("mean")
    paired = paired_delta(summ, ref)
    share = paired_delta(agree, ref_agree, field="share")
    return {
        "variant": name,
        "selector": method,
        "accuracy": acc,
        "base_accuracy": ref_acc,
        "gain": None if acc is None or ref_acc is None else acc - ref_acc,
        "gain_ci": None if paired is None else paired["ci"],
        "n_queries": (summ or {}).get("n_queries"),
        "settings": dict(settings),
        "same_label": (agree or {}).get("mean"),
        "same_label_delta": None if share is None else share["delta"],
        "same_label_ci": None if share is None else share["ci"],
    }


def _compared_methods(specs: Sequence[MethodSpec], against: Optional[str]) -> Tuple[List[str], Any]:
    """The names of the methods a variant search compares and a function giving each one's reference by
    name: its base selector (``against=None``: the UCS methods), or ``against`` for every other method."""
    selectors = [m.name for m in specs]
    if against is None:
        bases = {m.name: m.base for m in specs if m.ucs}
        compared = list(bases)
        if not compared:
            raise ValueError(
                f"selectors must include UCS methods such as 'dpp+ucs' (or pass against='topk' to "
                f"compare any selectors with TopK); got {selectors}"
            )
        return compared, lambda m: bases[m]
    ref = parse_methods(against)  # the caller's --against: parsed here, once
    if len(ref) != 1:
        raise ValueError(f"against must name one method, e.g. 'topk'; got {against!r}")
    compared = [m for m in selectors if m != ref[0]] or [ref[0]]  # the reference alone: its variants' forms
    return compared, lambda m: ref[0]  # against its first variant's (e.g. order)


def _best_variant(grid: List[Dict[str, Any]], method: str, order: List[str]) -> Optional[str]:
    """The variant with ``method``'s largest gain over its reference (ties: the earlier), ``None`` if none
    ran."""
    rows = [r for r in grid if r["selector"] == method and r["gain"] is not None]
    if not rows or all(r["gain"] == 0.0 and r["same_label_delta"] in (0.0, None) for r in rows):
        return None  # no variant changed it (the reference where only other selectors' settings vary)
    return max(rows, key=lambda r: (round(r["gain"], 12), -order.index(r["variant"])))["variant"]


def variants_markdown(result: TuneResult) -> str:
    """The variant comparison of :func:`tune_variants` as markdown."""
    info = result.info
    sels = info["selectors"]
    ref = f"`{info['against']}`" if info.get("against") else "their base selectors"
    lines = [
        f"# Choosing settings on a validation split of the {info['dataset']} pool",
        "",
        f"- validation: {info['n_val_queries']} queries held out of the pool (fraction "
        f"{info['val_fraction']}, seed {info['val_seed']}); selectors choose from the remaining "
        f"{info['n_pool']} items; the test split is never read",
        f"- backbone `{result.config.public_dict()['backbone']}`, mode `{result.config.mode}`, "
        f"{result.config.n_runs} run(s); "
        f"criterion: mean gain of the compared methods over {ref}; ties go to the earlier variant",
        "",
        f"accuracy % of each method (gain over {ref} on the same queries, with its paired 95 % bootstrap "
        "interval)",
        "",
        "| variant | settings | " + " | ".join(sels) + " | mean gain |",
        "|---|---|" + "---:|" * (len(sels) + 1),
    ]
    for name, gain in info["mean_gain"].items():
        rows = {r["selector"]: r for r in result.grid if r["variant"] == name}
        cells = []
        for m in sels:
            r = rows.get(m)
            ci = (
                ""
                if r is None or not r.get("gain_ci")
                else f" [{100 * r['gain_ci'][0]:+.1f}, {100 * r['gain_ci'][1]:+.1f}]"
            )
            cells.append(
                "—"
                if r is None or r["accuracy"] is None
                else f"{100 * r['accuracy']:.1f} ({100 * (r['gain'] or 0):+.1f}{ci})"
            )
        settings = (
            ", ".join(f"{k}={v}" for k, v in next(iter(rows.values()))["settings"].items()) if rows else ""
        )
        mark = "**" if name == result.chosen["variant"] else ""
        lines.append(f"| {mark}{name}{mark} | {settings} | " + " | ".join(cells) + f" | {100 * gain:+.2f} |")
    lines += _relevance_lines(result)
    per = ", ".join(f"{m}: `{v}`" for m, v in (result.chosen.get("by_method") or {}).items() if v is not None)
    return "\n".join(
        lines
        + ["", f"chosen: `{result.chosen['variant']}`" + (f"; best per method: {per}" if per else ""), ""]
    )


def _relevance_lines(result: TuneResult) -> List[str]:
    """The variants' relevance: share of each UCS method's demonstrations carrying the query's label (its
    change over the base selector's share, paired interval); nothing when the queries have no label ids."""
    sels = result.info["selectors"]
    if not any(r.get("same_label") is not None for r in result.grid):
        return []
    lines = [
        "",
        "relevance of the same prompts: % of demonstrations whose label is the query's own (change over "
        "the reference's share, with its paired 95 % interval)",
        "",
        "| variant | " + " | ".join(sels) + " |",
        "|---|" + "---:|" * len(sels),
    ]
    for name in result.info["mean_gain"]:
        rows = {r["selector"]: r for r in result.grid if r["variant"] == name}
        cells = []
        for m in sels:
            r = rows.get(m) or {}
            if r.get("same_label") is None:
                cells.append("—")
                continue
            d, ci = r.get("same_label_delta"), r.get("same_label_ci")
            cells.append(
                f"{100 * r['same_label']:.1f}"
                + ("" if d is None else f" ({100 * d:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}])")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines

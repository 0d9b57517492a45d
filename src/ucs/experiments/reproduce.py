"""``reproduce``: run named experiments end to end and write their markdown, figures and manifests.

>>> from ucs.experiments.reproduce import ReproduceOptions, plan
>>> cells = plan(["sensitivity_budget"], ReproduceOptions(preset="cpu"))["sensitivity_budget"]
>>> [c.config.budget for c in cells]
[0, 1, 5, 10, 20]

For each experiment: plan its cells (:meth:`~ucs.experiments.spec.Experiment.plan`), run every cell
through :class:`~ucs.pipeline.Pipeline` (:mod:`ucs.experiments.cells`: cached embeddings and clusterings,
resumable runner folders), then write ``<results_dir>/<name>.md`` (+ ``<name>.png`` for figures) and
``<name>.manifest.json`` (each cell's configuration and runner manifest, data hashes, package versions).
A second invocation recomputes nothing that the first finished.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ucs.data import load_dataset
from ucs.data.splits import DEFAULT_TEST_SIZE
from ucs.evaluation.records import read_records
from ucs.evaluation.run_folder import RunFolder
from ucs.evaluation.runner import package_versions, platform_info
from ucs.experiments.cells import CellContext, Models, eval_dir_for, run_cell
from ucs.experiments.figures import figure_for
from ucs.experiments.provenance import earlier_computation, read_old_manifest
from ucs.experiments.registry import get_experiment, resolve_names
from ucs.experiments.render import render
from ucs.experiments.spec import Cell, Experiment
from ucs.utils.io import atomic_write_json, atomic_write_text

__all__ = [
    "ReproduceOptions",
    "ExperimentRun",
    "plan",
    "reproduce",
    "run_experiment",
    "estimate_cost",
    "describe_cells",
    "machine_lines",
    "plan_totals",
    "results_the_page_would_lose",
]


@dataclass
class ReproduceOptions:
    """How to run experiments. ``None`` keeps the experiment's (or its size preset's) value.

    ``settings`` are :class:`~ucs.pipeline.PipelineConfig` settings by path (``--set clusterer.dbscan_q=0.1``,
    :meth:`~ucs.pipeline.PipelineConfig.with_settings`); ``limit`` evaluates
    only the first ``limit`` protocol queries (resumable into the full run); ``store_dir`` holds the answer
    and score stores (default: inside ``cache_dir``) — commit it beside the results to resume a long run
    elsewhere. ``render_only`` writes the pages from what the runner folders hold, computing nothing (accuracy
    experiments; unfinished methods show as "—" and are listed in the manifest's ``pending``).
    """

    preset: str = "paper"
    datasets: Optional[Sequence[str]] = None
    backbones: Optional[Sequence[str]] = None
    selectors: Optional[Sequence[str]] = None
    variants: Optional[Sequence[str]] = None
    test_size: Optional[int] = None
    runs: Optional[int] = None
    mode: Optional[str] = None
    data_dir: Optional[str] = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    limit: Optional[int] = None
    work_dir: str = "runs/reproduce"
    results_dir: str = "docs/results"
    cache_dir: Optional[str] = None
    store_dir: Optional[str] = None
    progress: bool = False
    render_only: bool = False
    command: Optional[str] = None

    def overrides(self) -> Dict[str, Any]:
        o: Dict[str, Any] = dict(self.settings)
        for k, v in (
            ("test_size", self.test_size),
            ("n_runs", self.runs),
            ("mode", self.mode),
            ("data_dir", self.data_dir),
        ):
            if v is not None:
                o[k] = v
        return o


@dataclass
class ExperimentRun:
    """What :func:`run_experiment` did: the cells, their results and the files written."""

    experiment: Experiment
    cells: List[Cell]
    results: List[Dict[str, Any]]
    markdown_path: Path
    manifest_path: Path
    figure_path: Optional[Path] = None
    #: results the page already showed that this invocation lacks; non-empty means the page was kept as it was
    kept: List[str] = field(default_factory=list)

    @property
    def computed(self) -> bool:
        """Whether any cell computed something (False on a resume of a finished experiment)."""
        return any(r.get("computed") for r in self.results)


def plan(names: "str | Sequence[str] | None", options: ReproduceOptions) -> Dict[str, List[Cell]]:
    """The cells of each named experiment (all when ``names`` is ``None``); raises ``ValueError`` on bad
    names."""
    return {
        n: get_experiment(n).plan(
            options.preset,
            datasets=options.datasets,
            backbones=options.backbones,
            selectors=options.selectors,
            overrides=options.overrides(),
            variants=options.variants,
        )
        for n in resolve_names(names)
    }


def estimate_cost(
    exp: Experiment,
    cell: Cell,
    n_test: Optional[int] = None,
    n_pool: Optional[int] = None,
    limit: Optional[int] = None,
) -> Dict[str, Any]:
    """Model calls a cell needs when nothing is cached: ICL prompts (upper bound — deterministic modes answer
    a repeated prompt once), MDL subset scorings (MDL and MDL+UCS share theirs, except in the runtime
    experiment, which times each method alone), and pool texts to embed (per distinct embedding setting)."""
    c = cell.config
    size = (
        c.test_size
        if c.test_size is not None
        else DEFAULT_TEST_SIZE["reasoning" if c.dataset.startswith("bbeh") else "intent"]
    )
    nq: Optional[int] = size if n_test is None else min(size, n_test)
    if limit is not None and nq is not None:
        nq = min(nq, limit)
    n_mdl = sum(m.needs_scorer for m in c.method_specs)  # the specs of cell.methods
    if exp.kind != "runtime":  # MDL+UCS scores MDL's candidate subsets, which the score store answers once
        n_mdl = min(n_mdl, 1)
    prompts = (
        0
        if exp.kind in ("coverage", "clusters", "health")
        else (None if nq is None else len(cell.methods) * c.n_runs * nq)
    )
    select_time = c.selector["params"]["mdl"]["select_time"]
    mdl = None if nq is None else n_mdl * c.n_runs * nq * select_time
    if exp.kind in ("clusters", "health") or c.budget == 0:  # budget 0: MDL makes no LM call
        mdl = 0
    embed = [c.dataset, c.backbone, c.engine, c.layer, c.pooling, c.embed_normalize, *c.joint_backbones]
    # what MDL's candidate subsets and their scores depend on (not λ, the estimator or the clusters)
    subsets = [
        c.dataset,
        c.data_dir,
        c.backbone,
        c.engine,
        c.dtype,
        c.mdl_scorer,
        c.retrieval_embedder,
        c.budget,
        c.selector["params"]["mdl"]["candidate_num"],
        select_time,
        c.test_size,
        c.test_seed,
        *c.run_seeds,
        nq,
    ]
    return {
        "icl_prompts": prompts,
        "mdl_scorings": mdl,
        "queries": nq,
        "pool": n_pool,
        "embedding": "/".join(str(x) for x in embed),
        "mdl_subsets": "/".join(str(x) for x in subsets),
    }


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)


def run_experiment(
    name: str,
    options: ReproduceOptions,
    *,
    models: Optional[Models] = None,
    log: Optional[Callable[[str], None]] = None,
) -> ExperimentRun:
    """Run every cell of experiment ``name`` and write its markdown, figure and manifest."""
    exp = get_experiment(name)
    cells = plan([name], options)[name]
    ctx = CellContext(
        options.work_dir,
        options.cache_dir,
        models or Models(),
        options.limit,
        options.progress,
        options.store_dir,
    )
    results: List[Dict[str, Any]] = []
    for i, cell in enumerate(cells, 1):
        if log:
            log(f"[{exp.name} {i}/{len(cells)}] {cell.id} ({', '.join(cell.methods)})")
        t0 = time.perf_counter()
        res = run_cell(exp.kind, cell, ctx, compute=not options.render_only)
        res["wall_s"] = time.perf_counter() - t0
        results.append(res)
    out = Path(options.results_dir)
    kept = results_the_page_would_lose(exp, options, out / f"{exp.name}.manifest.json", cells, results)
    if kept:  # a part run, a --limit run or an empty work dir must not replace a fuller page
        if log:
            log(
                f"[{exp.name}] kept {out / (exp.name + '.md')}: it shows {len(kept)} complete result(s) this "
                f"invocation lacks ({', '.join(kept[:3])}{', ...' if len(kept) > 3 else ''}); the full "
                "command (with --render-only once the work dir holds them) rewrites it, or pass "
                "--results-dir to write this part elsewhere"
            )
        return ExperimentRun(
            exp, cells, results, out / f"{exp.name}.md", out / f"{exp.name}.manifest.json", kept=kept
        )
    png = None
    if "png" in exp.outputs:
        png = figure_for(exp, cells, results, out / f"{exp.name}.png")

    earlier = read_old_manifest(out / f"{exp.name}.manifest.json")
    md = atomic_write_text(
        out / f"{exp.name}.md", render(exp, cells, results, options.preset, png.name if png else None)
    )
    cell_entries = []
    for cell, res in zip(cells, results):
        ds = ctx.dataset(cell.config)
        entry = {
            **cell.describe(),
            "dir": _rel(Path(res.get("dir", ctx.cell_dir(cell)))),
            "config": cell.config.public_dict(),
            "data": {"name": ds.name, "fingerprint": ds.fingerprint(), "source": dict(ds.source)},
            "computed_in_this_invocation": bool(res.get("computed")),
        }
        if "runner_manifest" in res:
            entry["runner_manifest"] = res["runner_manifest"]
        if not res.get("computed"):
            before = earlier_computation(
                earlier, cell.id, (res.get("runner_manifest") or {}).get("fingerprints")
            )
            if before:
                entry["computed_by"] = before
        cell_entries.append(entry)
    manifest = {
        "experiment": exp.to_dict(),
        "preset": options.preset,
        "options": {k: (list(v) if isinstance(v, (tuple, list)) else v) for k, v in asdict(options).items()},
        "command": options.command,
        "versions": package_versions(),
        "platform": platform_info(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cells": cell_entries,
        "results": [_manifest_result(r) for r in results],
    }
    mf = atomic_write_json(out / f"{exp.name}.manifest.json", manifest, inline_scalar_lists=True)
    return ExperimentRun(exp, cells, results, md, mf, png)


def results_the_page_would_lose(
    exp: Experiment,
    options: ReproduceOptions,
    manifest_path: Path,
    cells: Sequence[Cell],
    results: Sequence[Dict[str, Any]],
) -> List[str]:
    """``cell/method`` entries complete on the page's current manifest that ``results`` lack or hold for fewer
    queries, among those the experiment still defines (its full plan over the manifest's datasets and
    backbones: a variant or method removed from the definition may leave the page). ``[]`` when there is no
    page yet, or its manifest cannot be read. O(cells × methods)."""
    old = read_old_manifest(manifest_path)
    if old is None:
        return []
    try:
        old_cells = [c["cell"] for c in old["cells"]]
        defined = {
            (c.id, m)
            for c in exp.plan(
                options.preset,
                datasets=list(dict.fromkeys(c["dataset"] for c in old["cells"])),
                backbones=list(dict.fromkeys(c["backbone"] for c in old["cells"])),
                overrides=options.overrides(),
            )
            for m in c.methods
        }
    except (KeyError, TypeError):
        return []
    new = {
        (c.id, m): int(v.get("n_queries") or 0)
        for c, r in zip(cells, results)
        for m, v in (r.get("methods") or {}).items()
        if isinstance(v, dict) and v.get("complete")
    }
    lost = []
    for cell, res in zip(old_cells, old.get("results", [])):
        for m, v in ((res or {}).get("methods") or {}).items():
            if (
                isinstance(v, dict)
                and v.get("complete")
                and (cell, m) in defined
                and new.get((cell, m), -1) < int(v.get("n_queries") or 0)
            ):
                lost.append(f"{cell}/{m}")
    return lost


def _manifest_result(r: Dict[str, Any]) -> Dict[str, Any]:
    """A cell's result as the manifest keeps it: without the runner's own manifest, and the label agreement
    without its per-query shares (the records in the runner folder hold them; accuracy keeps its per-query
    values, from which the page's paired intervals are recomputed)."""
    out = {k: v for k, v in r.items() if k != "runner_manifest"}
    if "label_agreement" in out:
        out["label_agreement"] = {
            m: {k: v for k, v in a.items() if k != "per_query"} for m, a in out["label_agreement"].items()
        }
    return out


def reproduce(
    names: "str | Sequence[str] | None",
    options: ReproduceOptions,
    *,
    models: Optional[Models] = None,
    log: Optional[Callable[[str], None]] = None,
) -> List[ExperimentRun]:
    """Run the named experiments (all when ``None``) in registry order, sharing loaded models."""
    names = resolve_names(names)
    plan(names, options)  # every configuration is valid before anything runs
    models = models or Models()
    return [run_experiment(n, options, models=models, log=log) for n in names]


def describe_cells(names: "str | Sequence[str] | None", options: ReproduceOptions) -> List[Dict[str, Any]]:
    """One row per cell with its cost estimate (for ``--dry-run``); datasets are loaded to size them. A
    dataset that cannot be loaded leaves its sizes ``None`` and says why in the row's ``load_error`` (the run
    would stop there with the same message)."""
    rows = []
    sizes: Dict[Any, Any] = {}
    for n, cells in plan(names, options).items():
        exp = get_experiment(n)
        for c in cells:
            key = (c.config.dataset, c.config.data_dir)
            if key not in sizes:
                try:
                    ds = load_dataset(c.config.dataset, c.config.data_dir)
                    sizes[key] = (len(ds.test), len(ds.pool), None)
                except (OSError, ValueError) as exc:
                    sizes[key] = (None, None, str(exc))
            n_test, n_pool, load_error = sizes[key]
            cost = estimate_cost(exp, c, n_test, n_pool, options.limit)
            shared = exp.kind in ("accuracy", "coverage")
            rows.append(
                {
                    "experiment": n,
                    "kind": exp.kind,
                    "mdl_select_time": c.config.selector["params"]["mdl"]["select_time"],
                    "scoring_methods": [m.name for m in c.method_specs if m.needs_scorer],
                    **c.describe(),
                    "eval_dir": _rel(eval_dir_for(options.work_dir, c))
                    if shared
                    else _rel(Path(options.work_dir) / n / c.id),
                    "answered": _answered(eval_dir_for(options.work_dir, c), c.methods, cost["queries"])
                    if exp.kind == "accuracy"
                    else {},
                    "load_error": load_error,
                    **cost,
                }
            )
    return rows


def _answered(folder: Path, methods: Sequence[str], n_queries: Optional[int]) -> Dict[str, int]:
    """Records already in a runner folder per method, on its first ``n_queries`` queries (verified lines only;
    a damaged line counts as not answered). O(records)."""
    path = RunFolder(folder).records
    if not path.is_file():
        return {}
    counts: Dict[str, int] = {}
    for r in read_records(path):
        if r["method"] in methods and (n_queries is None or r["query"] < n_queries):
            counts[r["method"]] = counts.get(r["method"], 0) + 1
    return counts


def machine_lines(names: "str | Sequence[str] | None", options: ReproduceOptions) -> List[str]:
    """What ``--dry-run`` says about machines: this one (and whether it computes bfloat16 natively, when a
    cell asks for bfloat16), and the machine each existing page of ``names`` was made on — so a run that would
    mix machines in one page is seen before it starts. O(experiments)."""
    from ucs.utils.cpu import describe_machine, native_bf16

    here = platform_info()
    lines = [f"this machine: {describe_machine(here)}"]
    wants_bf16 = any(c.config.dtype == "bfloat16" for cells in plan(names, options).values() for c in cells)
    if wants_bf16 and native_bf16(here.get("cpu_details") or {}) is False:
        lines.append(
            "  bfloat16 is emulated on this CPU (no AVX-512-BF16 or AMX): several times slower than "
            "float32, and its answers differ from a native-bfloat16 machine's"
        )
    for n in resolve_names(names):
        mf = Path(options.results_dir) / f"{n}.manifest.json"
        try:
            made_on = json.loads(mf.read_text(encoding="utf-8")).get("platform") or {}
        except (OSError, ValueError):
            continue
        same = made_on == {k: here.get(k) for k in made_on} and "cpu_details" in made_on
        lines.append(f"{n}.md was made on: {describe_machine(made_on)}" + (" — this machine" if same else ""))
    return lines


def plan_totals(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Upper bounds on the model calls of the cells ``rows`` (from :func:`describe_cells`), after sharing.

    Cells of one configuration share a runner folder, so a method's prompts count once per folder; MDL and
    MDL+UCS score the same candidate subsets once (the score store), so MDL scorings count once per subset set
    (runtime cells time every scoring and count apart). Returns ``icl_prompts`` and ``mdl_scorings`` (``None``
    when some cell's query count is unknown), ``icl_prompts_left`` (the same bound less the records already in
    the runner folders, ``answered`` of each row), ``embed_passes`` and ``embed_texts`` (pool embedding
    passes, the texts they cover, ``None`` when a pool size is unknown). A row's ``scoring_methods`` are
    the methods that score with a language model. O(rows × methods).
    """
    totals: Dict[str, Any] = {"icl_prompts": 0, "mdl_scorings": 0, "icl_prompts_left": 0}
    embeds: Dict[Any, Any] = {}
    seen: set = set()
    for r in rows:
        per = None if r["queries"] is None else r["queries"] * r["runs"]
        for m in r["methods"]:
            if r["kind"] in ("accuracy", "runtime") and ("left", r["eval_dir"], m) not in seen:
                seen.add(("left", r["eval_dir"], m))
                left = None if per is None else max(0, per - r.get("answered", {}).get(m, 0))
                totals["icl_prompts_left"] = (
                    None
                    if totals["icl_prompts_left"] is None or left is None
                    else totals["icl_prompts_left"] + left
                )
            for k, kinds, mult in (
                ("icl_prompts", ("accuracy", "runtime"), 1),
                ("mdl_scorings", ("accuracy", "runtime", "coverage"), r["mdl_select_time"]),
            ):
                tag: Tuple[Any, ...] = (k, r["eval_dir"], m)
                if k == "mdl_scorings" and r["kind"] != "runtime":
                    tag = (k, r["mdl_subsets"])
                unscored = m not in r["scoring_methods"]  # no LM scorings
                if r["kind"] not in kinds or tag in seen or (k == "mdl_scorings" and unscored):
                    continue
                seen.add(tag)
                totals[k] = None if totals[k] is None or per is None else totals[k] + per * mult
        embeds[r["embedding"]] = r["pool"]
    totals["embed_passes"] = len(embeds)
    totals["embed_texts"] = sum(v for v in embeds.values() if v) if all(embeds.values()) else None
    return totals

"""``ucs demo``: the whole UCS pipeline, offline, on the shipped sample dataset (or any dataset)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, List, Optional

import numpy as np
import typer

from ucs.commands._config import SET_HELP, parse_settings
from ucs.commands._health import echo_health
from ucs.commands._runs import FRESH_HELP, WAIT_HELP, run_folder
from ucs.report.console import DATASET_HELP

HELP = """Run the whole pipeline on a small scale and show every stage.

Embeds the pool with the ICL backbone (default SmolLM2-135M, offline), clusters it into latent clusters,
selects demonstrations with base selectors and their UCS forms, evaluates a handful of test queries by
label likelihood, and prints a chosen prompt, the coverage diagnostics and the accuracies.
"""


def clustering_text(cfg: Any) -> str:
    """``dict_dbscan, q = 0.01`` / ``kmeans, k = ⌈√N⌉`` / ``kmeans, k = 40``: the clustering in a few
    words."""
    from ucs.clustering.estimator import EPS_METHODS

    c = cfg.clusterer
    text = c["method"]
    if c["method"] in EPS_METHODS:
        text += f", q = {c['dbscan_q']}, min_samples = {c['min_samples']}"
    elif c["method"] in ("dict_kmeans", "kmeans"):
        text += ", k = " + ("⌈√N⌉" if c["n_clusters"] is None else str(c["n_clusters"]))
    return text + ("" if cfg.cluster_space == "backbone" else f", {cfg.cluster_space} space")


def _echo_rule(title: str) -> None:
    typer.echo(f"\n== {title} " + "=" * max(3, 70 - len(title)))


def run_demo(
    dataset: str = "sample",
    data_dir: Optional[str] = None,
    backbone: str = "smollm2",
    engine: Optional[str] = None,
    selectors: str = "dpp,dpp+ucs,votek,votek+ucs",
    queries: int = 8,
    budget: int = 5,
    runs: int = 1,
    lam: Optional[float] = None,
    dbscan_q: Optional[float] = None,
    estimator: Optional[str] = None,
    out: Optional[Path] = None,
    cache_dir: Optional[Path] = None,
    show_prompts: int = 1,
    backbone_obj: Any = None,
    clustering: Optional[str] = None,
    test_file: Optional[str] = None,
    settings: Optional[dict] = None,
) -> Any:
    """Run the demo and print it; returns the :class:`~ucs.pipeline.PipelineResult`. ``clustering`` is
    ``clusterer.method``; ``settings`` are further settings by path (``{"clusterer.n_clusters": 6}``), applied
    last."""
    from ucs.pipeline import Pipeline, PipelineConfig

    options = {
        "dataset": dataset,
        "data_dir": data_dir,
        "test_file": test_file,
        "backbone": backbone,
        "engine": engine,
        "selector.method": selectors,
        "budget": budget,
        "n_runs": runs,
        "test_size": queries,
        "mode": "likelihood",
        "prior.lam": lam,
        "clusterer.dbscan_q": dbscan_q,
        "prior.estimator": estimator,
        "clusterer.method": clustering,
    }
    # the default preset's method settings; retrieval by the backbone itself, so the demo needs no extra model
    cfg = PipelineConfig.resolve(
        "default",
        overrides={
            **{k: v for k, v in options.items() if v is not None},
            "retrieval_embedder": "backbone",
            "preset": "demo",
            **(settings or {}),
        },
    )
    tmp = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="ucs-demo-")
        out = Path(tmp.name)
    pipe = Pipeline(cfg, backbone=backbone_obj, cache_dir=cache_dir, out_dir=out, progress=True)
    try:
        _show_data(pipe, queries, runs, budget)
        _show_embeddings(pipe)
        _show_clusters(pipe, cfg)
        _echo_rule("3. selection + ICL evaluation (likelihood of every label)")
        result = pipe.run(out)
        _show_demonstrations(pipe, cfg, queries, show_prompts)
        _echo_rule("coverage of the chosen prompts (mean over queries)")
        from ucs.pipeline.diagnostics import coverage_markdown, label_agreement_markdown

        typer.echo(coverage_markdown(result.coverage))
        if result.label_agreement:
            _echo_rule("relevance of the chosen prompts (mean over queries)")
            typer.echo(label_agreement_markdown(result.label_agreement))
        _echo_rule("accuracy")
        typer.echo(result.evaluation.to_markdown())
        times = {k: round(v, 2) for k, v in pipe.timings.items()}
        typer.echo(f"timings (s): {times}")
        _write_report(out, temporary=tmp is not None)
        return result
    finally:
        if tmp is not None:
            tmp.cleanup()


def _show_data(pipe: Any, queries: int, runs: int, budget: int) -> None:
    ds = pipe.dataset
    _echo_rule("data")
    typer.echo(
        f"{ds.name}: pool {len(ds.pool)}, test {len(ds.test)}, {ds.n_labels} labels; "
        f"evaluating {min(queries, len(ds.test))} test queries, {runs} run(s), budget {budget}"
    )


def _show_embeddings(pipe: Any) -> None:
    _echo_rule("1. pool embeddings (ICL backbone)")
    t0 = time.perf_counter()
    E = pipe.pool_embeddings()
    ident = dict(pipe.backbone.identity)
    typer.echo(
        f"backbone {ident.get('model')} ({ident.get('engine', 'dummy')}): E {E.shape[0]} × {E.shape[1]} "
        f"in {time.perf_counter() - t0:.1f} s (cache: {pipe.embedding_cache.root})"
    )


def _show_clusters(pipe: Any, cfg: Any) -> None:
    seed = cfg.run_seeds[0]
    _echo_rule(f"2. latent clusters (seed {seed}, {clustering_text(cfg)})")
    t0 = time.perf_counter()
    sizes = np.bincount(pipe.cluster_ids(seed))
    largest = np.sort(sizes)[::-1][:8].tolist()
    typer.echo(
        f"{sizes.size} clusters in {time.perf_counter() - t0:.1f} s; singletons {int((sizes == 1).sum())}; "
        f"largest sizes {largest}"
    )
    echo_health(pipe.cluster_health(seed))


def _show_demonstrations(pipe: Any, cfg: Any, queries: int, show_prompts: int) -> None:
    """Each selector's demonstrations for the first test query (with their clusters), then whole prompts of
    the first ``show_prompts`` UCS forms (or base selectors when none is selected)."""
    from ucs.evaluation.prompts import PromptBuilder, format_for_task

    ds, seed = pipe.dataset, cfg.run_seeds[0]
    eval_ds = cfg.protocol().apply(ds)
    qtexts = list(eval_ds.test.texts[: min(queries, len(eval_ds.test))])
    for m in cfg.method_specs:
        row = pipe.selection(m, seed, qtexts).indices[0]
        cids = pipe.cluster_ids(seed, cfg.dbscan_q_for(m))
        sizes = np.bincount(cids)
        typer.echo(f"\n[{m}] demonstrations for query 0 ({qtexts[0]!r}):")
        for i in row.tolist():
            typer.echo(
                f"  - {ds.pool.texts[i]!r} → {ds.label_names[int(ds.pool.labels[i])]}"
                f"  [cluster {int(cids[i])}, size {int(sizes[cids[i]])}]"
            )
    builder = PromptBuilder(format_for_task(ds.task), ds.label_names, None, None, None)
    methods = cfg.method_specs
    shown = [m for m in methods if m.ucs][:show_prompts] or list(methods[:show_prompts])
    for m in shown:
        sel = pipe.selection(m, seed, qtexts)
        demos = [(ds.pool.texts[i], ds.label_names[int(ds.pool.labels[i])]) for i in sel.indices[0].tolist()]
        _echo_rule(f"prompt chosen by {m} for query 0")
        typer.echo(builder.build(demos, qtexts[0]).text)


def _write_report(out: Path, temporary: bool) -> None:
    """The HTML report of the run: beside its files, or (for a temporary run folder) in a file of its own."""
    from ucs.commands._report import try_write_report

    if not temporary:
        typer.echo(f"files: {out}")
        try_write_report(out)
    else:  # the run's folder is temporary: keep its report beside it
        fd, name = tempfile.mkstemp(prefix="ucs-demo-report-", suffix=".html")
        os.close(fd)
        try_write_report(out, Path(name))


def demo_cmd(
    dataset: str = typer.Option(
        "sample", "--dataset", "-d", help=DATASET_HELP + " Default: the shipped sample."
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the public data files."),
    test_file: Optional[Path] = typer.Option(
        None, "--test-file", help="Test split of a table --dataset (which then is the pool)."
    ),
    backbone: str = typer.Option(
        "smollm2", "--model", "-m", "--backbone", help="ICL backbone (smollm2, gemma3, ...)."
    ),
    engine: Optional[str] = typer.Option(None, "--engine", help="llama | transformers."),
    selectors: str = typer.Option(
        "dpp,dpp+ucs,votek,votek+ucs", "--selectors", "-s", help="Methods to compare."
    ),
    test_size: int = typer.Option(8, "--queries", "-n", help="Test queries to evaluate."),
    budget: int = typer.Option(5, "--budget", "-b", help="Demonstrations per prompt."),
    n_runs: int = typer.Option(1, "--runs", help="Runs (seeds 42, 43, ...)."),
    lam: Optional[float] = typer.Option(None, "--lam", help="UCS weight λ."),
    dbscan_q: Optional[float] = typer.Option(None, "--dbscan-q", help="Clustering quantile q."),
    estimator: Optional[str] = typer.Option(
        None, "--estimator", help="Unseen estimator (paper, binomial, ...)."
    ),
    clustering: Optional[str] = typer.Option(
        None,
        "--clustering",
        hidden=True,
        help="Deprecated: --set clusterer.method=NAME (kmeans, the default | dict_dbscan, the paper's | "
        "...).",
    ),
    settings: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Keep the run's files here (default: temporary)."
    ),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding/cluster cache."),
    wait: bool = typer.Option(False, "--wait", help=WAIT_HELP),
    fresh: bool = typer.Option(False, "--fresh", "--overwrite", help=FRESH_HELP),
) -> None:
    import contextlib

    given = parse_settings(settings)
    if clustering is not None:
        import warnings

        from ucs.pipeline import DeprecatedSettingWarning

        warnings.warn(
            f"--clustering is deprecated: write --set clusterer.method={clustering}",
            DeprecatedSettingWarning,
            stacklevel=2,
        )
    with (
        run_folder(out, wait=wait, fresh=fresh, kind="ucs evaluate / ucs demo")
        if out is not None
        else contextlib.nullcontext()
    ):
        run_demo(
            dataset,
            None if data_dir is None else str(data_dir),
            backbone,
            engine,
            selectors,
            test_size,
            budget,
            n_runs,
            lam,
            dbscan_q,
            estimator,
            out,
            cache_dir,
            clustering=clustering,
            test_file=None if test_file is None else str(test_file),
            settings=given,
        )


def register(app: typer.Typer) -> None:
    app.command("demo", help=HELP)(demo_cmd)

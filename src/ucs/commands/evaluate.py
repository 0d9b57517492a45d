"""``ucs evaluate``: the main job — select demonstrations with each method and measure ICL accuracy."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import typer

from ucs import defaults as D
from ucs.commands._config import SET_HELP, config_from_options, parse_selectors, parse_settings
from ucs.commands._health import echo_health
from ucs.commands._runs import FRESH_HELP, WAIT_HELP, run_folder
from ucs.evaluation.run_folder import RunFolder
from ucs.report.console import DATASET_HELP

HELP = """Run the UCS pipeline on a dataset and write the results table (markdown + JSON).

Stages: pool embeddings with the ICL backbone (cached) → latent clusters per run seed → retrieval
embeddings → each selector → ICL evaluation (resumable: rerun the same command to continue).
Settings start from --preset ('default' = the project's configuration, 'paper' = paper Table 8, 'cpu' = small
evaluation for a CPU machine) or --config FILE, then the options given, then each --set PATH=VALUE, which
reaches any setting under its class's own parameter name (--set selector.params.mmr.lambda_mult=0.8,
--set clusterer.n_atoms=32; --print-config shows every path).
"""


def _parse_overrides(items: Optional[List[str]], param: str) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for it in items or []:
        for part in it.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise typer.BadParameter(
                    f"expected SELECTOR=VALUE such as votek=5; got {part!r}", param_hint=param
                )
            k, v = part.split("=", 1)
            try:
                out[k.strip()] = float(v)
            except ValueError:
                raise typer.BadParameter(f"{v!r} is not a number", param_hint=param) from None
    return out


def evaluate_cmd(
    dataset: str = typer.Option("banking77", "--dataset", "-d", help=DATASET_HELP),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the public data files."),
    test_file: Optional[Path] = typer.Option(
        None,
        "--test-file",
        help="Test split of a table --dataset (which then is the pool); default: the "
        "table's 'split' column (pool/train, test), else a seeded 80/20 split.",
    ),
    backbone: Optional[str] = typer.Option(
        None, "--model", "-m", help="ICL backbone: smollm2, gemma3, GGUF file, hub id."
    ),
    engine: Optional[str] = typer.Option(
        None, "--engine", help="llama | transformers (default: the model layer's)."
    ),
    selectors: Optional[str] = typer.Option(
        None,
        "--selectors",
        "-s",
        help="Comma-separated: random,topk,dpp,dpp+ucs,mdl,mdl+ucs,votek,votek+ucs.",
    ),
    budget: Optional[int] = typer.Option(None, "--budget", "-b", help="Demonstrations per prompt."),
    n_runs: Optional[int] = typer.Option(None, "--runs", help="Number of runs (seeds 42, 43, ...)."),
    test_size: Optional[int] = typer.Option(
        None, "--test-size", help="Test queries drawn once with seed 42."
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", help="likelihood | generate (greedy) | greedy-strict | paper (sampled, T=0.1)."
    ),
    estimator: Optional[str] = typer.Option(
        None, "--estimator", help="paper | poisson | binomial | efron_thisted | good_toulmin | chao1."
    ),
    lam: Optional[float] = typer.Option(
        None, "--lam", help="UCS weight λ, prior.lam (0 = the base selector)."
    ),
    lam_by_selector: Optional[List[str]] = typer.Option(
        None, "--lam-by", help="Per-selector λ, e.g. votek=5,dpp=0.5."
    ),
    dbscan_q: Optional[float] = typer.Option(
        None, "--dbscan-q", help="Clustering quantile q, clusterer.dbscan_q."
    ),
    dbscan_q_by_selector: Optional[List[str]] = typer.Option(
        None, "--q-by", help="Per-selector q, e.g. dpp=0.1."
    ),
    design: Optional[str] = typer.Option(None, "--design", help="full | seen_only | unseen_only | ratio."),
    clustering: Optional[str] = typer.Option(
        None,
        "--clustering",
        hidden=True,
        help="Deprecated: --set clusterer.method=NAME (kmeans, the default | dict_dbscan, the paper's | "
        "...).",
    ),
    n_clusters: Optional[int] = typer.Option(
        None, "--n-clusters", help="k of the k-means clusterings (default ⌈√N⌉)."
    ),
    cluster_space: Optional[str] = typer.Option(
        None, "--cluster-space", help="Embeddings clustered: retrieval (default preset) | backbone (paper)."
    ),
    relevance: Optional[str] = typer.Option(
        None,
        "--relevance",
        help="Coverage weighting of query-dependent UCS forms: none (the default and the paper's) | "
        "candidates | candidates_bonus (see docs/selectors.md).",
    ),
    retrieval_embedder: Optional[str] = typer.Option(
        None,
        "--retrieval",
        help="backbone | all-minilm-l6-v2 | all-mpnet-base-v2 | sentence-transformers dir.",
    ),
    mdl_scorer: Optional[str] = typer.Option(
        None,
        "--mdl-scorer",
        help="LM that scores MDL subsets: 'backbone' or any --model value (paper: gpt2).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (rerun to resume)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N test queries (resumable)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="paper | default | cpu (default: default)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="JSON configuration (PipelineConfig)."),
    settings: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Embedding/cluster cache (default ~/.cache/ucs)."
    ),
    device: Optional[str] = typer.Option(
        None, "--device", help="Torch device for the transformers engine (cuda)."
    ),
    dtype: Optional[str] = typer.Option(
        None,
        "--dtype",
        help="transformers engine dtype: float32 | bfloat16 | float16 | auto (bfloat16 ~3x faster on AMX "
        "CPUs).",
    ),
    n_gpu_layers: Optional[int] = typer.Option(
        None, "--n-gpu-layers", help="llama.cpp layers to offload (-1 all)."
    ),
    seed: Optional[int] = typer.Option(None, "--seed", help="First run seed (default 42)."),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="Where embedding, clustering and selection run: local (this process) or ray.",
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster: 'auto', 'ray://host:10001', or empty for a private local one."
    ),
    num_cpus: Optional[int] = typer.Option(None, "--num-cpus", help="CPUs of a private local Ray cluster."),
    shard_size: int = typer.Option(
        D.TEXT_SHARD_SIZE, "--shard-size", help="Pool texts per embedding shard (ray)."
    ),
    knn: str = typer.Option(
        D.KNN, "--knn", help="exact | hnsw | ivf neighbour search of the sharded clustering (ray)."
    ),
    progress: bool = typer.Option(
        True,
        "--progress/--no-progress",
        help="Progress of embedding, clustering, MDL scoring and evaluation (stderr).",
    ),
    print_config: bool = typer.Option(
        False, "--print-config", help="Print the resolved configuration and exit."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the cost (prompts, model calls, minutes measured here on two prompts) and exit.",
    ),
    wait: bool = typer.Option(False, "--wait", help=WAIT_HELP),
    fresh: bool = typer.Option(False, "--fresh", "--overwrite", help=FRESH_HELP),
) -> None:
    from ucs.pipeline import Pipeline

    given = parse_settings(settings)
    if clustering is not None:
        import warnings

        from ucs.pipeline import DeprecatedSettingWarning

        warnings.warn(
            f"--clustering is deprecated: write --set clusterer.method={clustering}",
            DeprecatedSettingWarning,
            stacklevel=2,
        )
    cfg = config_from_options(
        preset,
        config_file,
        {
            "dataset": dataset,
            "data_dir": None if data_dir is None else str(data_dir),
            "backbone": backbone,
            "engine": engine,
            "test_file": None if test_file is None else str(test_file),
            "selector.method": parse_selectors(selectors),
            "budget": budget,
            "n_runs": n_runs,
            "test_size": test_size,
            "mode": mode,
            "prior.estimator": estimator,
            "prior.lam": lam,
            "clusterer.dbscan_q": dbscan_q,
            "prior.design": design,
            "retrieval_embedder": retrieval_embedder,
            "clusterer.method": clustering,
            "clusterer.n_clusters": n_clusters,
            "cluster_space": cluster_space,
            "prior.relevance": relevance,
            "device": device,
            "dtype": dtype,
            "n_gpu_layers": n_gpu_layers,
            "seed": seed,
            "mdl_scorer": mdl_scorer,
            "lam_by_selector": _parse_overrides(lam_by_selector, "--lam-by") or None,
            "dbscan_q_by_selector": _parse_overrides(dbscan_q_by_selector, "--q-by") or None,
        },
        given,
    )
    if retrieval_embedder is None and config_file is None and "retrieval_embedder" not in given:
        # the preset's embedder, not one the user asked for
        from ucs.pipeline.backbones import retrieval_fallback

        cfg, note = retrieval_fallback(cfg)
        if note:
            typer.echo(note, err=True)
    if print_config:
        typer.echo(cfg.to_json())
        raise typer.Exit()
    if dry_run:
        from ucs.experiments.cost import cost_lines, evaluation_cost

        typer.echo("\n".join(cost_lines(evaluation_cost(cfg, limit=limit, cache_dir=cache_dir))))
        raise typer.Exit()
    from ucs.commands._inputs import executor_from_options

    ex = executor_from_options(executor, address, num_cpus)
    try:
        with (
            run_folder(out, wait=wait, fresh=fresh, kind="ucs evaluate / ucs demo"),
            Pipeline(
                cfg,
                cache_dir=cache_dir,
                out_dir=out,
                progress=progress,
                executor=ex,
                shard_size=shard_size,
                knn=knn,
            ) as pipe,
        ):
            result = pipe.run(out, limit=limit)
    finally:
        ex.close()
    from ucs.commands._report import try_write_report
    from ucs.report.console import demonstrations_text, timings_line
    from ucs.report.data import load_run

    run = load_run(out)
    timings = timings_line(run)
    if timings:
        typer.echo(timings)
    for seed, h in result.health.items():
        echo_health(h, f"cluster health (seed {seed})")
    typer.echo(result.to_markdown())
    status = RunFolder(out).read_manifest().get("status")
    typer.echo(f"results: {Path(out) / 'results.md'} (+ results.json, coverage.md/json); status: {status}")
    try_write_report(Path(out))
    demos = demonstrations_text(run)
    if demos:
        typer.echo("\n" + demos)


def register(app: typer.Typer) -> None:
    app.command("evaluate", help=HELP)(evaluate_cmd)

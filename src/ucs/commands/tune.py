"""``ucs tune``: pick ``dbscan_q`` and ``λ`` per UCS selector on a validation split held out of the pool."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ucs.commands._config import SET_HELP, config_from_options, parse_selectors, parse_settings
from ucs.commands._runs import FRESH_HELP, WAIT_HELP, run_folder

HELP = """Grid-search the clustering quantile q and the UCS weight λ of each UCS selector.

A seeded fraction of the POOL becomes the validation queries (the test split is never read); the selectors
choose from the rest of the pool; the criterion is ICL accuracy (likelihood mode unless --mode). Embeddings
come from the cache and every q is a re-cut of one clustering per run seed. Writes tune.md / tune.json, and
chosen.json + tuned_config.json (use: ucs evaluate --config OUT/tuned_config.json ...).

Settings start from --preset or --config FILE, then the options given, then each --set PATH=VALUE.

With --variants, choose among whole settings instead (clustering method, cluster space, estimator, relevance,
selector settings such as selector.params.mmr.lambda_mult, demonstration order), each KEY a path of --set:
--variants "paper:clusterer.method=dict_dbscan;km:clusterer.method=kmeans,\
cluster_space=retrieval,prior.estimator=binomial".
Each variant's UCS methods are scored by their gain over their base selectors on the same validation queries
(with --against topk: every selector by its gain over TopK, and each one's best variant is named);
writes variants.md / variants.json and tuned_config.json.
"""


#: UCS methods tuned when neither --selectors nor a --config file names them.
DEFAULT_SELECTORS = "dpp+ucs,votek+ucs"


def _floats(value: Optional[str], name: str) -> Optional[List[float]]:
    if value is None:
        return None
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated numbers; got {value!r}", param_hint=name
        ) from None


def tune_cmd(
    dataset: Optional[str] = typer.Option(
        None, "--dataset", "-d", help="Dataset name or table path (default: the config's)."
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the public data files."),
    backbone: Optional[str] = typer.Option(None, "--model", "-m", help="ICL backbone: smollm2, gemma3, ..."),
    selectors: Optional[str] = typer.Option(
        None,
        "--selectors",
        "-s",
        help="Methods to tune (default: the --config file's, else dpp+ucs,votek+ucs).",
    ),
    q_grid: Optional[str] = typer.Option(
        None, "--q-grid", help="Comma-separated q values (default: paper Table 9's)."
    ),
    lam_grid: Optional[str] = typer.Option(
        None, "--lam-grid", help="Comma-separated λ values (default: Table 10's + 0)."
    ),
    val_fraction: float = typer.Option(
        0.1, "--val-fraction", help="Share of the pool held out for validation."
    ),
    val_seed: int = typer.Option(0, "--val-seed", help="Seed of the validation split."),
    test_size: Optional[int] = typer.Option(
        None,
        "--val-size",
        help="Validation queries used, drawn once from the held-out items (default: the "
        "protocol size, 500 or 40).",
    ),
    n_runs: Optional[int] = typer.Option(None, "--runs", help="Runs per grid point (default 1)."),
    mode: str = typer.Option("likelihood", "--mode", help="likelihood | generate | greedy-strict | paper."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N validation queries."),
    retrieval_embedder: Optional[str] = typer.Option(
        None, "--retrieval", help="Retrieval embedder (default: the preset's)."
    ),
    preset: Optional[str] = typer.Option(None, "--preset", help="paper | default | cpu (default: default)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="JSON configuration (PipelineConfig)."),
    settings: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (rerun to resume)."),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Embedding/cluster cache (default ~/.cache/ucs)."
    ),
    progress: bool = typer.Option(
        True,
        "--progress/--no-progress",
        help="Progress of embedding, clustering, MDL scoring and evaluation (stderr).",
    ),
    variants: Optional[str] = typer.Option(
        None,
        "--variants",
        help="Choose among named settings instead of the q × λ grid: 'NAME:KEY=VALUE,...;NAME:...'.",
    ),
    against: Optional[str] = typer.Option(
        None,
        "--against",
        help="With --variants: compare every selector with this one (e.g. topk) instead of UCS forms with "
        "their bases.",
    ),
    wait: bool = typer.Option(False, "--wait", help=WAIT_HELP),
    fresh: bool = typer.Option(False, "--fresh", "--overwrite", help=FRESH_HELP),
) -> None:
    from ucs.experiments.tune import tune

    if not 0.0 < val_fraction < 1.0:
        raise typer.BadParameter(f"must be in (0, 1); got {val_fraction}", param_hint="--val-fraction")
    given = parse_settings(settings)
    cfg = config_from_options(
        preset,
        config_file,
        {
            "dataset": dataset,
            "data_dir": None if data_dir is None else str(data_dir),
            "backbone": backbone,
            "mode": mode,
            "n_runs": n_runs if n_runs is not None else 1,
            "test_size": test_size,
            "retrieval_embedder": retrieval_embedder,
            "selector.method": parse_selectors(selectors)
            or (None if config_file is not None else DEFAULT_SELECTORS),
        },
        given,
    )
    if test_size is None and "test_size" not in given:
        cfg = cfg.replace(test_size=None)
    if retrieval_embedder is None and config_file is None and "retrieval_embedder" not in given:
        # the preset's embedder, not one the user asked for
        from ucs.pipeline.backbones import retrieval_fallback

        cfg, note = retrieval_fallback(cfg)
        if note:
            typer.echo(note, err=True)
    if variants is not None:
        from ucs.experiments.tune import parse_variants, tune_variants, variants_markdown

        named = parse_variants(variants)
        with run_folder(out, wait=wait, fresh=fresh, kind="ucs tune"):
            result = tune_variants(
                cfg,
                out,
                named,
                val_fraction=val_fraction,
                val_seed=val_seed,
                limit=limit,
                cache_dir=cache_dir,
                progress=progress,
                against=against,
            )
        typer.echo(variants_markdown(result))
        typer.echo(f"chosen: {result.chosen['variant']}; full configuration: {out / 'tuned_config.json'}")
        return
    if against is not None:
        raise typer.BadParameter(
            "compares selectors with --variants only; add --variants 'NAME:KEY=VALUE;...'",
            param_hint="--against",
        )
    q_values, lam_values = _floats(q_grid, "--q-grid"), _floats(lam_grid, "--lam-grid")
    with run_folder(out, wait=wait, fresh=fresh, kind="ucs tune"):
        result = tune(
            cfg,
            out,
            q_grid=q_values,
            lam_grid=lam_values,
            val_fraction=val_fraction,
            val_seed=val_seed,
            limit=limit,
            cache_dir=cache_dir,
            progress=progress,
        )
    typer.echo(result.to_markdown())
    typer.echo(f"chosen: {out / 'chosen.json'}; full configuration: {out / 'tuned_config.json'}")


def register(app: typer.Typer) -> None:
    app.command("tune", help=HELP)(tune_cmd)

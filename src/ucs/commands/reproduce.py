"""``ucs reproduce``: regenerate the paper's tables and figures (and the estimator study) as named
experiments."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ucs.commands._config import SET_HELP, parse_settings
from ucs.commands._runs import WAIT_HELP, run_folder

HELP = """Run named experiments end to end and write <results-dir>/<name>.md (+ .png, + .manifest.json).

Every evaluation cell is a resumable runner folder under --work-dir; embeddings and clusterings come from
--cache-dir; rerun the same command to continue after an interruption. --preset picks the sizes: 'paper'
(500 queries, 3 runs, sampled generation, SmolLM2 and Gemma-3) or 'cpu' (SmolLM2, likelihood mode, 100
queries). See docs/reproduce.md.
"""


def _split(value: Optional[str]) -> Optional[List[str]]:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


def reproduce_cmd(
    list_: bool = typer.Option(False, "--list", help="List the experiments (name, paper reference, cells)."),
    only: Optional[str] = typer.Option(
        None, "--only", help="Comma-separated experiment names (default: all)."
    ),
    preset: str = typer.Option("paper", "--preset", help="Sizes: paper | cpu."),
    datasets: Optional[str] = typer.Option(
        None, "--datasets", help="Comma-separated datasets (replaces the experiment's)."
    ),
    backbones: Optional[str] = typer.Option(
        None, "--backbones", help="Comma-separated backbones: smollm2, gemma3, ..."
    ),
    selectors: Optional[str] = typer.Option(
        None, "--selectors", help="Comma-separated methods (replaces the experiment's)."
    ),
    variants: Optional[str] = typer.Option(
        None,
        "--variants",
        help="Comma-separated variant names of the experiment (default: all); run a long "
        "experiment a part at a time, the page shows the parts run so far in this invocation.",
    ),
    test_size: Optional[int] = typer.Option(
        None, "--test-size", help="Test queries drawn once with seed 42."
    ),
    n_runs: Optional[int] = typer.Option(None, "--runs", help="Number of runs (seeds 42, 43, ...)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N test queries (resumable)."),
    mode: Optional[str] = typer.Option(None, "--mode", help="likelihood | generate | greedy-strict | paper."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Folder of the public data files."),
    work_dir: Path = typer.Option(Path("runs/reproduce"), "--work-dir", help="Runner folders (resumable)."),
    results_dir: Path = typer.Option(
        Path("docs/results"), "--results-dir", help="Where markdown/PNG/manifests go."
    ),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Embedding/cluster cache (default ~/.cache/ucs)."
    ),
    store_dir: Optional[Path] = typer.Option(
        None,
        "--store-dir",
        help="Answer and MDL-score stores (default: inside --cache-dir). Small and "
        "content-addressed: commit it beside the results so that a later run, elsewhere, resumes without "
        "asking the model again.",
    ),
    settings: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
    render_only: bool = typer.Option(
        False,
        "--render-only",
        help="Write the pages from what --work-dir already holds, computing nothing "
        "(accuracy experiments): a long run's page while it is under way; unfinished methods show as '—'.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the cells and their model-call estimates; run nothing."
    ),
    progress: bool = typer.Option(
        True,
        "--progress/--no-progress",
        help="Progress of embedding, clustering, MDL scoring and evaluation (stderr).",
    ),
    wait: bool = typer.Option(False, "--wait", help=WAIT_HELP),
) -> None:
    from ucs.experiments.reproduce import ReproduceOptions, plan

    names = _check_arguments(only, variants, datasets, settings, limit)
    names = _without_joint_when_one_backbone(names, only, _split(backbones))
    opts = ReproduceOptions(
        preset=preset,
        datasets=_split(datasets),
        backbones=_split(backbones),
        selectors=_split(selectors),
        variants=_split(variants),
        test_size=test_size,
        runs=n_runs,
        mode=mode,
        data_dir=None if data_dir is None else str(data_dir),
        settings=parse_settings(settings),
        limit=limit,
        work_dir=str(work_dir),
        results_dir=str(results_dir),
        cache_dir=None if cache_dir is None else str(cache_dir),
        progress=progress,
        store_dir=None if store_dir is None else str(store_dir),
        render_only=render_only,
        command="ucs " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else None,
    )
    try:
        planned = plan(names, opts)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if list_:
        _print_list(planned, preset)
    elif dry_run:
        _print_dry_run(names, opts)
    else:
        _run(names, opts, work_dir, wait)


def register(app: typer.Typer) -> None:
    app.command("reproduce", help=HELP)(reproduce_cmd)


def _check_arguments(
    only: Optional[str],
    variants: Optional[str],
    datasets: Optional[str],
    settings: Optional[List[str]],
    limit: Optional[int],
) -> List[str]:
    """The experiment names ``--only`` resolves to; a bad name, variant, dataset, setting or limit is refused
    by the option's name."""
    from ucs.data.registry import check_dataset_name
    from ucs.experiments.registry import get_experiment, resolve_names

    try:
        names = resolve_names(only)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--only") from None
    if variants is not None:
        known_variants = {v.name for n in names for v in get_experiment(n).variants}
        wrong = [v for v in _split(variants) or [""] if v not in known_variants]
        if wrong:
            raise typer.BadParameter(
                f"unknown variant(s) {wrong}; the experiments' variants are {sorted(known_variants)}",
                param_hint="--variants",
            )
    for name in _split(datasets) or []:
        try:
            check_dataset_name(name)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--datasets") from None
    parse_settings(settings)  # a path the configuration does not have is refused naming --set
    if limit is not None and limit < 1:
        raise typer.BadParameter(f"must be a positive number of queries; got {limit}", param_hint="--limit")
    return names


def _without_joint_when_one_backbone(
    names: List[str], only: Optional[str], backbones: Optional[List[str]]
) -> List[str]:
    """All experiments on one ``--backbones`` backbone: every one but ``joint_dictionary``, which needs two
    and is left out with a note on stderr. Named with ``--only``, it is kept (and refused with the fix)."""
    if only is not None or backbones is None or len(set(backbones)) > 1 or "joint_dictionary" not in names:
        return names
    typer.echo(
        "note: joint_dictionary left out: it clusters on a dictionary shared by two or more backbones; "
        "give them with --backbones A,B to run it",
        err=True,
    )
    return [n for n in names if n != "joint_dictionary"]


def _print_list(planned: Dict[str, Any], preset: str) -> None:
    """``--list``: one aligned row per experiment with its number of cells."""
    from ucs.experiments.registry import get_experiment

    rows = [("name", "paper", "varies", "kind", "cells")]
    for n, cells in planned.items():
        e = get_experiment(n)
        rows.append((n, e.paper_ref, e.varies, e.kind, str(len(cells))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for j, r in enumerate(rows):
        typer.echo("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
        if j == 0:
            typer.echo("  ".join("-" * w for w in widths))
    typer.echo(f"\npreset {preset}: {sum(len(c) for c in planned.values())} cells")


def _print_dry_run(names: List[str], opts: Any) -> None:
    """``--dry-run``: every cell with its cost estimate, then the totals after sharing."""
    from ucs.experiments.reproduce import describe_cells, machine_lines, plan_totals

    rows = describe_cells(names, opts)
    for r in rows:
        done = sum(r["answered"].values())
        typer.echo(
            f"{r['experiment']:20s} {r['cell']:45s} methods={','.join(r['methods'])} queries={r['queries']} "
            f"runs={r['runs']} mode={r['mode']} prompts≤{r['icl_prompts']} mdl_scorings={r['mdl_scorings']} "
            + (f"answered={done} " if r["kind"] == "accuracy" else "")
            + f"dir={r['eval_dir']}"
        )
    totals = plan_totals(rows)
    texts = "an unknown number of" if totals["embed_texts"] is None else totals["embed_texts"]
    typer.echo(
        f"\n{len(rows)} cells; at most {totals['icl_prompts']} ICL prompts and {totals['mdl_scorings']} MDL "
        f"subset scorings after sharing between cells of one configuration (deterministic modes also answer "
        f"a repeated prompt once; MDL+UCS reuses MDL's subset scores), {totals['embed_passes']} pool "
        f"embedding pass(es) over {texts} texts unless cached; {totals['icl_prompts_left']} of the prompts "
        f"are not yet recorded in --work-dir (the answer store may hold some of those)"
    )
    for problem in dict.fromkeys(r["load_error"] for r in rows if r.get("load_error")):
        typer.echo(
            "warning: a dataset cannot be loaded (its sizes are unknown above, and a run would stop at it): "
            f"{problem}"
        )
    for line in machine_lines(names, opts):
        typer.echo(line)


def _run(names: List[str], opts: Any, work_dir: Path, wait: bool) -> None:
    """Run (or, with ``--render-only``, only render) the experiments and write an HTML report per folder."""
    from ucs.commands._report import try_write_report
    from ucs.experiments.registry import get_experiment
    from ucs.experiments.reproduce import reproduce

    if opts.render_only:
        kinds = sorted({get_experiment(n).kind for n in names} - {"accuracy"})
        if kinds:
            raise typer.BadParameter(
                f"only accuracy experiments can be rendered without computing; --only "
                f"names {kinds} experiments too",
                param_hint="--render-only",
            )
        done = reproduce(
            names, opts, log=lambda s: typer.echo(s, err=True)
        )  # reads only: torn last lines skipped
    else:
        with run_folder(work_dir, wait=wait):
            done = reproduce(names, opts, log=lambda s: typer.echo(s, err=True))
    for r in done:
        extra = f" + {r.figure_path}" if r.figure_path else ""
        state = "computed" if r.computed else "all cached"
        if r.kept:
            typer.echo(
                f"{r.experiment.name}: {r.markdown_path} kept as it was ({state}; it shows {len(r.kept)} "
                "result(s) this run lacks)"
            )
        else:
            typer.echo(f"{r.experiment.name}: {r.markdown_path}{extra} ({state})")
    evals = dict.fromkeys(
        Path(res["dir"])
        for r in done
        for res in r.results
        if res.get("dir") and (Path(res["dir"]) / "results.json").is_file()
    )
    for d in evals:  # one HTML report per evaluation folder
        try_write_report(d)

"""``ucs compare``: which selector should my prompts use, for my model and my data?"""

from __future__ import annotations

import contextlib
import random
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import typer

from ucs import defaults as D
from ucs.commands._compare_generate import MAX_NEW_TOKENS_HELP, METRIC_HELP, MODE_HELP
from ucs.commands._runs import FRESH_HELP, WAIT_HELP, run_folder

HELP = """Rank selectors for YOUR model on YOUR labelled examples, against TopK, with paired intervals.

EXAMPLES is a .csv/.tsv/.jsonl/.json table with a text and a label column. Without --test-file, --queries of
its rows (seeded) are held out as the queries and the rest is the pool. Each selector chooses --k
demonstrations per query; the model (--model: smollm2, gemma3, a GGUF file, a hub id, or an OpenAI-compatible
endpoint http://host:port/v1#model) picks the label with the highest likelihood after the prompt. Before
running it measures two prompts and prints the cost (prompts, minutes on this machine) and asks when it is
long (--yes skips the question; --dry-run stops there). Then a ranked table (accuracy, Δ vs TopK [paired 95 %
CI], own-label share, ms per query), compare.md/.json/.html, and index/: the recommended selector fitted on
every example, which SelectorIndex.load, UCSExampleSelector.load and UCSFewShot.attach open. Rerun the same
command to resume; --out of other inputs (examples, queries, --k, --seed, model, embedder) or of another
command is refused (--fresh moves it aside). Blank texts or labels and a table of one label are refused before
anything is written; held-out queries also among the examples are counted and warned about, and a query is
never shown an example with exactly its own text. --mode generate: the model writes each answer instead (tasks
beyond labels: the label column holds the answer), scored in [0, 1] with --metric beside a no-model copy of
the nearest demonstration's answer.
"""

#: A run estimated longer than this many minutes asks before it starts (or needs --yes without a terminal).
ASK_ABOVE_MINUTES = 5.0


_LINE = "\x00line"  # the read rows' line numbers, under a name no table has


def _read(path: Path, text_column: str, label_column: str, param: str) -> List[Dict[str, str]]:
    """The rows of a table, each with a non-blank text and label (a blank one is refused with its file and
    line: a CSV's header is line 1)."""
    from ucs.data.table import read_table

    try:
        table = read_table(path, text_column, label_column, line_column=_LINE)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None
    for text, line in zip(table[text_column], table[_LINE]):
        if not text.strip():
            raise typer.BadParameter(
                f"{path}, line {line}: the text (column {text_column!r}) is "
                f"{'empty' if not text else 'only whitespace'}; give every row a text, or "
                "remove the row",
                param_hint=param,
            )
    return [
        {text_column: str(t), label_column: str(y)} for t, y in zip(table[text_column], table[label_column])
    ]


def _inputs(
    examples: Path, test_file: Optional[Path], text_column: str, label_column: str, queries: int, seed: int
) -> Tuple[List[Dict[str, str]], List[Dict[str, str]]]:
    """``(pool, held-out queries)`` read and checked before anything is loaded or written."""
    from ucs.experiments.compare import split_examples

    rows = _read(examples, text_column, label_column, "EXAMPLES")
    labels = sorted({r[label_column] for r in rows})
    if len(labels) < 2:
        raise typer.BadParameter(
            f"{examples} holds one distinct label ({labels[0]!r}) in the label column "
            f"{label_column!r}; a comparison needs at least two labels (with one, every "
            "selector scores 100 %): add examples of other labels, or check --label-column",
            param_hint="EXAMPLES",
        )
    if test_file is not None:
        if test_file.resolve() == examples.resolve():
            raise typer.BadParameter(
                f"{test_file} is EXAMPLES itself, so every query would be among the "
                "examples; give held-out rows, or no --test-file (then --queries rows of "
                "EXAMPLES are held out)",
                param_hint="--test-file",
            )
        return rows, _read(test_file, text_column, label_column, "--test-file")[:queries]
    try:
        return split_examples(rows, queries, seed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--queries") from None


def _measure(
    predict: Any, pool: List[Dict[str, str]], queries: List[Dict[str, str]], k: int, workers: int = 1
) -> float:
    """Wall seconds per prediction: ``2 × workers`` predictions side by side (each with ``k`` demonstrations
    drawn from the pool), after ``workers`` untimed ones that load the model (in every worker)."""
    rng = random.Random(0)

    def some(n: int) -> None:
        list(
            predict.many([(queries[i % len(queries)], rng.sample(pool, min(k, len(pool)))) for i in range(n)])
        )

    some(workers)
    t0 = time.perf_counter()
    some(2 * workers)
    return (time.perf_counter() - t0) / (2 * workers)


def estimate_line(n_prompts: int, seconds: float, n_labels: int, workers: int = 1) -> str:
    side = f" with {workers} workers side by side" if workers > 1 else ""
    return (
        f"cost: {n_prompts} prompts ({n_labels} labels scored in each), {seconds:.2f} s per prompt measured "
        f"here{side} → about {n_prompts * seconds / 60:.1f} minutes"
    )


def _confirm(minutes: float, yes: bool) -> None:
    if yes or minutes <= ASK_ABOVE_MINUTES:
        return
    if sys.stdin is not None and sys.stdin.isatty():
        if not typer.confirm(f"about {minutes:.0f} minutes; start?", default=True):
            raise typer.Exit(1)
        return
    raise typer.BadParameter(
        f"the comparison would take about {minutes:.0f} minutes; pass --yes to start it, or "
        "fewer --queries / --selectors",
        param_hint="--yes",
    )


def compare_cmd(
    examples: Path = typer.Argument(..., exists=True, dir_okay=False, help="Labelled examples (a table)."),
    model: str = typer.Option(
        "smollm2", "--model", "-m", help="smollm2 | gemma3 | GGUF file | hub id | http://host:port/v1#model."
    ),
    engine: Optional[str] = typer.Option(None, "--engine", help="llama | transformers (in-process models)."),
    workers: Optional[int] = typer.Option(
        None,
        "--workers",
        min=1,
        help="Processes answering side by side, "
        "each with its own copy of the model on one core (default: the "
        "cores available; a served model: 1).",
    ),
    weights: str = typer.Option(
        D.COMPARE_WEIGHTS,
        "--weights",
        help="llama engine: f32 (a float32 copy of "
        "the GGUF file, made once: faster on CPUs), f16, or file (as given).",
    ),
    test_file: Optional[Path] = typer.Option(
        None,
        "--test-file",
        exists=True,
        dir_okay=False,
        help="Held-out labelled queries (default: --queries rows of EXAMPLES).",
    ),
    text_column: str = typer.Option("text", "--text-column", help="The text column."),
    label_column: str = typer.Option("label", "--label-column", help="The label column."),
    selectors: str = typer.Option(
        ",".join(D.COMPARE_SELECTORS),
        "--selectors",
        "-s",
        help="Comma-separated methods; TopK is the reference of every Δ.",
    ),
    k: str = typer.Option("8", "--k", help="Demonstrations per prompt; several make grid cells: 4,8,16."),
    order: Optional[str] = typer.Option(
        None,
        "--order",
        help="Demonstration orders, comma-separated: selected, similar_first, similar_last, "
        "vote_last (default vote_last, what a saved index gives an application).",
    ),
    reference: Optional[str] = typer.Option(
        None,
        "--reference",
        help="The cell of every Δ, selector:k:order (default topk:8:selected; TopK at the "
        "first --k when 8 is not in it).",
    ),
    test_share: float = typer.Option(
        0.5,
        "--test-share",
        help="Share of the held-out queries that confirms "
        "the validated cell (the rest validates), in (0, 1).",
    ),
    round_size: int = typer.Option(20, "--round-size", help="Validation queries per round of the race."),
    alpha: float = typer.Option(0.05, "--alpha", help="Chance of eliminating the best cell, in (0, 1)."),
    no_early_stop: bool = typer.Option(
        False, "--no-early-stop", help="Answer every cell on every validation query."
    ),
    max_minutes: Optional[float] = typer.Option(
        None, "--max-minutes", help="Stop the race (between rounds) after this much model time."
    ),
    max_queries: Optional[int] = typer.Option(
        None, "--max-queries", help="Use at most this many validation queries."
    ),
    queries: int = typer.Option(
        200, "--queries", min=1, help="Held-out queries (the first N of --test-file)."
    ),
    embedder: str = typer.Option(
        "all-minilm-l6-v2", "--embedder", help="Retrieval embedder of every selector."
    ),
    chat_template: Optional[str] = typer.Option(
        None,
        "--chat-template",
        help="chatml: render prompts through the ChatML template (served SmolLM2/Qwen; "
        "llama-cpp-python's server needs prompts that start with the model's BOS token).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (rerun to resume)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache."),
    seed: int = typer.Option(0, "--seed", help="Seed of the held-out draw and of Random."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Start a long comparison without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the cost estimate and stop."),
    wait: bool = typer.Option(False, "--wait", help=WAIT_HELP),
    fresh: bool = typer.Option(False, "--fresh", help=FRESH_HELP),
    mode: str = typer.Option("likelihood", "--mode", help=MODE_HELP),
    metric: Optional[str] = typer.Option(None, "--metric", help=METRIC_HELP),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", min=1, help=MAX_NEW_TOKENS_HELP),
) -> None:
    from ucs.commands._compare_generate import check_mode, generate_estimate_line
    from ucs.experiments.compare import comparison_key, query_overlap, warn_overlap
    from ucs.pipeline.config import parse_methods

    try:
        names = list(parse_methods(selectors))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--selectors") from None
    _check_chat_template(chat_template)
    grid = _grid(names, k, order, reference, round_size, alpha, max_minutes, max_queries)
    if not 0.0 < test_share < 1.0:
        raise typer.BadParameter(
            f"give a share strictly between 0 and 1 (0.5: half the held-out queries "
            f"confirm the validated cell); got {test_share}",
            param_hint="--test-share",
        )
    scorer = check_mode(mode, metric, max_new_tokens)  # None: likelihood mode
    pool, held = _inputs(examples, test_file, text_column, label_column, queries, seed)
    split = _split(len(held), test_share, seed)
    _check_out(out, None, fresh)
    warn_overlap(query_overlap(pool, held, text_column), len(held))
    labels = sorted({r[label_column] for r in pool + held})
    gen = None if scorer is None else ([r[label_column] for r in pool], max_new_tokens)
    backbone = _backbone(model, engine, workers, weights)
    predictor, emb = _predictor(backbone, labels, text_column, label_column, chat_template, embedder, gen)
    n_workers = getattr(backbone, "workers", 1)
    with contextlib.closing(backbone) if hasattr(backbone, "close") else contextlib.nullcontext():
        key = comparison_key(
            pool,
            held,
            k=grid["ks"],
            seed=seed,
            predictor=predictor,
            embedder=emb,
            text_key=text_column,
            label_key=label_column,
            metric=None if scorer is None else scorer.name,
            selectors=grid["selectors"],
            orders=grid["orders"],
            reference=grid["reference"].id,
            test_share=test_share,
        )
        _check_out(out, key, fresh)
        n_prompts, done, plan = _plan(out, fresh, grid, split, round_size, max_queries, len(held))
        seconds = (
            _measure(
                _as_predictor(predictor, text_column, label_column), pool, held, max(grid["ks"]), n_workers
            )
            if n_prompts
            else 0.0
        )
        line = (
            estimate_line(n_prompts, seconds, len(labels), n_workers)
            if scorer is None
            else generate_estimate_line(n_prompts, seconds, predictor.max_new_tokens, scorer.name, n_workers)
        )
        typer.echo(
            line
            + (f" ({done} answered in {out} already)" if done else "")
            + plan
            + (f"; the race stops after {max_minutes:g} minutes of model time" if max_minutes else "")
        )
        if dry_run:
            raise typer.Exit()
        _confirm(n_prompts * seconds / 60, yes)
        race = {
            "k": grid["ks"],
            "orders": grid["orders"],
            "reference": grid["reference"].id,
            "test_share": test_share,
            "round_size": round_size,
            "alpha": alpha,
            "early_stop": not no_early_stop,
            "max_minutes": max_minutes,
            "max_queries": max_queries,
        }
        result = _run(
            pool,
            held,
            predictor,
            emb,
            names,
            race,
            text_column,
            label_column,
            out,
            seed,
            cache_dir,
            wait,
            fresh,
            scorer,
        )
        typer.echo(result.to_markdown())
        typer.echo(f"results: {out / 'compare.md'} (+ compare.json, compare.html, records.jsonl)")


def register(app: typer.Typer) -> None:
    app.command("compare", help=HELP)(compare_cmd)


def _check_chat_template(chat_template: Optional[str]) -> None:
    from ucs.evaluation.prompts import CHAT_TEMPLATES

    if chat_template is not None and chat_template not in CHAT_TEMPLATES:
        raise typer.BadParameter(
            f"choose one of {sorted(CHAT_TEMPLATES)}; got {chat_template!r}", param_hint="--chat-template"
        )


def _backbone(model: str, engine: Optional[str], workers: Optional[int], weights: str) -> Any:
    """The model: a plugin's backbone, a served model, or ``workers`` in-process copies side by side
    (:class:`~ucs.models.pool.BackbonePool`; one worker: the backbone itself); the llama.cpp engine with
    ``weights``."""
    from ucs.models import load_backbone
    from ucs.models.gguf_weights import check_weights
    from ucs.models.pool import BackbonePool, default_workers
    from ucs.models.registry import DEFAULT_ENGINE
    from ucs.pipeline.backbones import plugin_backbone
    from ucs.models.http_spec import looks_like_url

    try:
        check_weights(weights)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--weights") from None
    plugin = plugin_backbone(model)
    if plugin is not None:
        return plugin
    if looks_like_url(model):
        return load_backbone(model, engine=engine)
    opts = {"weights": weights} if (engine or DEFAULT_ENGINE) == "llama" else {}
    n = workers or default_workers()
    if n == 1:
        return load_backbone(model, engine=engine, **opts)
    return BackbonePool(model, engine=engine, workers=n, **opts)


def _predictor(
    backbone: Any,
    labels: List[str],
    text_column: str,
    label_column: str,
    chat_template: Optional[str],
    embedder: str,
    gen: Optional[Tuple[List[str], Optional[int]]] = None,
) -> Tuple[Any, Any]:
    """The model as a predictor over ``labels`` (``gen``: the pool's answers and ``--max-new-tokens``, the
    model writing answers), and the retrieval embedder (both keep the folder's key)."""
    from ucs.commands._compare_generate import generate_predictor
    from ucs.embedding import load_retrieval_embedder
    from ucs.experiments.predictors import backbone_predictor

    if gen is None:
        predictor = backbone_predictor(
            backbone, labels, text_key=text_column, label_key=label_column, chat_template=chat_template
        )
    else:
        predictor = generate_predictor(backbone, gen[0], text_column, label_column, chat_template, gen[1])
    try:
        emb = load_retrieval_embedder(embedder)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--embedder") from None
    return predictor, emb


def _as_predictor(predictor: Any, text_column: str, label_column: str) -> Any:
    from ucs.experiments.predictors import as_predictor

    return as_predictor(predictor, text_key=text_column, label_key=label_column)


def _check_out(out: Path, key: Optional[Dict[str, Any]], fresh: bool) -> None:
    """Refuse (naming ``--out``, writing nothing) a file, another command's run folder, or a comparison of
    other inputs (the differing fields named; ``key=None``: not checked yet); with ``--fresh`` only a file."""
    from ucs.experiments.compare import check_folder

    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{out} is a file; give a folder for the results", param_hint="--out")
    if fresh:  # the old contents are moved aside, not used
        return
    try:
        check_folder(out, key)
    except ValueError as exc:
        raise typer.BadParameter(f"{exc}", param_hint="--out") from None


def _grid(
    names: List[str],
    k: str,
    order: Optional[str],
    reference: Optional[str],
    round_size: int,
    alpha: float,
    max_minutes: Optional[float],
    max_queries: Optional[int],
) -> Dict[str, Any]:
    """The grid and the race's settings, checked before anything is read (each refusal names its option)."""
    from ucs.experiments.compare import check_race, plan_grid
    from ucs.experiments.compare_grid import parse_cell, parse_ks, parse_orders

    for value, param, parse in (
        (k, "--k", parse_ks),
        (order, "--order", parse_orders),
        (reference, "--reference", parse_cell),
    ):
        try:
            if value is not None:
                parse(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=param) from None
    for param, value in (
        ("--round-size", round_size),
        ("--alpha", alpha),
        ("--max-minutes", max_minutes),
        ("--max-queries", max_queries),
    ):
        try:
            check_race(
                **{
                    "round_size": 1,
                    "alpha": 0.05,
                    "max_minutes": None,
                    "max_queries": None,
                    param[2:].replace("-", "_"): value,
                }
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=param) from None
    return plan_grid(names, k, order, reference)


def _split(n: int, test_share: float, seed: int) -> Tuple[List[int], List[int]]:
    from ucs.experiments.compare_grid import split_parts

    try:
        return split_parts(n, test_share, seed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--test-share") from None


def _plan(
    out: Path,
    fresh: bool,
    grid: Dict[str, Any],
    split: Tuple[List[int], List[int]],
    round_size: int,
    max_queries: Optional[int],
    n_held: int,
) -> Tuple[int, int, str]:
    """``(prompts at most still to ask, prompts answered in out, the line's plan)``: every cell on the planned
    validation queries plus the validated cell and the reference on the test ones (early stopping asks
    fewer)."""
    from ucs.experiments.compare import answered
    from ucs.experiments.compare_grid import planned_rounds

    cells = grid["cells"]
    planned, rounds = planned_rounds(len(split[0]), round_size, max_queries)
    worst = len(cells) * planned + 2 * len(split[1])
    done, finished = (0, False) if fresh else answered(out, [c.id for c in cells])
    plan = (
        f"; at most {worst}: {len(cells)} cells × {planned} validation queries ({rounds} rounds of "
        f"{round_size}) + the validated cell and the reference × {len(split[1])} test queries, fewer as "
        f"cells leave the race (every cell on all {n_held} queries: {len(cells) * n_held})"
    )
    return (0 if finished else max(worst - done, 0)), done, plan


def _run(
    pool: List[Dict[str, str]],
    held: List[Dict[str, str]],
    predictor: Any,
    emb: Any,
    names: List[str],
    race: Dict[str, Any],
    text_column: str,
    label_column: str,
    out: Path,
    seed: int,
    cache_dir: Optional[Path],
    wait: bool,
    fresh: bool,
    metric: Any = None,
) -> Any:
    """The comparison, in ``out`` held under its lock (``--fresh`` moves the old contents aside first);
    ``metric``: generate mode's answer metric."""
    import warnings

    from ucs.data.dataset import DatasetWarning
    from ucs.experiments.compare import compare

    with run_folder(out, wait=wait, fresh=fresh, kind="ucs compare"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DatasetWarning)  # the overlap was warned about before the estimate
        return compare(
            pool,
            predictor,
            queries=held,
            selectors=names,
            n_queries=len(held),
            **race,
            text_key=text_column,
            label_key=label_column,
            embedder=emb,
            out=out,
            seed=seed,
            cache_dir=cache_dir,
            metric=metric,
            progress=True,
        )

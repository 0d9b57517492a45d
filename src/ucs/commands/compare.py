"""``ucs compare``: which selector should my prompts use, for my model and my data?"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ucs import defaults as D

HELP = """Rank selectors for YOUR model on YOUR labelled examples, against TopK, with paired intervals.

EXAMPLES is a .csv/.tsv/.jsonl/.json table with a text and a label column. Without --test-file, --queries of its
rows (seeded) are held out as the queries and the rest is the pool. Each selector chooses --k demonstrations per
query; the model (--model: smollm2, gemma3, a GGUF file, a hub id, or an OpenAI-compatible endpoint
http://host:port/v1#model) picks the label with the highest likelihood after the prompt. Before running it
measures two prompts and prints the cost (prompts, minutes on this machine) and asks when it is long (--yes skips
the question; --dry-run stops there). Then a ranked table (accuracy, Δ vs TopK [paired 95 % CI], own-label
share, ms per query), compare.md/.json/.html, and index/: the recommended selector fitted on every example,
which SelectorIndex.load, UCSExampleSelector.load and UCSFewShot.attach open. Rerun the same command to resume.
"""

#: A run estimated longer than this many minutes asks before it starts (or needs --yes without a terminal).
ASK_ABOVE_MINUTES = 5.0


def _rows(path: Path, text_column: str, label_column: str, param: str) -> List[Dict[str, str]]:
    from ucs.data.table import read_table

    try:
        table = read_table(path, text_column, label_column)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None
    return [{text_column: str(t), label_column: str(y)} for t, y in zip(table[text_column], table[label_column])]


def _measure(predict: Any, pool: List[Dict[str, str]], queries: List[Dict[str, str]], k: int) -> float:
    """Seconds per prediction: the mean of two calls, each with ``k`` demonstrations drawn from the pool, after
    one untimed call that loads the model."""
    rng = random.Random(0)
    predict(queries[0], rng.sample(pool, min(k, len(pool))))
    t0 = time.perf_counter()
    for q in queries[:2]:
        predict(q, rng.sample(pool, min(k, len(pool))))
    return (time.perf_counter() - t0) / max(min(2, len(queries)), 1)


def estimate_line(n_prompts: int, seconds: float, n_labels: int) -> str:
    return (f"cost: {n_prompts} prompts ({n_labels} labels scored in each), {seconds:.2f} s per prompt measured "
            f"here on 2 prompts → about {n_prompts * seconds / 60:.1f} minutes of model time")


def _confirm(minutes: float, yes: bool) -> None:
    if yes or minutes <= ASK_ABOVE_MINUTES:
        return
    if sys.stdin is not None and sys.stdin.isatty():
        if not typer.confirm(f"about {minutes:.0f} minutes; start?", default=True):
            raise typer.Exit(1)
        return
    raise typer.BadParameter(f"the comparison would take about {minutes:.0f} minutes; pass --yes to start it, or "
                             "fewer --queries / --selectors", param_hint="--yes")


def register(app: typer.Typer) -> None:
    @app.command("compare", help=HELP)
    def compare_cmd(
        examples: Path = typer.Argument(..., exists=True, dir_okay=False, help="Labelled examples (a table)."),
        model: str = typer.Option("smollm2", "--model", "-m",
                                  help="smollm2 | gemma3 | GGUF file | hub id | http://host:port/v1#model."),
        engine: Optional[str] = typer.Option(None, "--engine", help="llama | transformers (in-process models)."),
        test_file: Optional[Path] = typer.Option(None, "--test-file", exists=True, dir_okay=False,
                                                 help="Held-out labelled queries (default: --queries rows of EXAMPLES)."),
        text_column: str = typer.Option("text", "--text-column", help="The text column."),
        label_column: str = typer.Option("label", "--label-column", help="The label column."),
        selectors: str = typer.Option(",".join(D.COMPARE_SELECTORS), "--selectors", "-s",
                                      help="Comma-separated methods; TopK is the reference of every Δ."),
        k: int = typer.Option(8, "--k", min=1, help="Demonstrations per prompt."),
        queries: int = typer.Option(200, "--queries", min=1, help="Held-out queries (the first N of --test-file)."),
        embedder: str = typer.Option("all-minilm-l6-v2", "--embedder", help="Retrieval embedder of every selector."),
        chat_template: Optional[str] = typer.Option(
            None, "--chat-template", help="chatml: render prompts through the ChatML template (served SmolLM2/Qwen; "
            "llama-cpp-python's server needs prompts that start with the model's BOS token)."),
        out: Path = typer.Option(..., "--out", "-o", help="Results folder (rerun to resume)."),
        cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache."),
        seed: int = typer.Option(0, "--seed", help="Seed of the held-out draw and of Random."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Start a long comparison without asking."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the cost estimate and stop."),
    ) -> None:
        from ucs.experiments.compare import answered, compare, split_examples
        from ucs.experiments.predictors import as_predictor, backbone_predictor
        from ucs.models import load_backbone
        from ucs.pipeline.config import parse_methods

        try:
            names = list(parse_methods(selectors))
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--selectors") from None
        rows = _rows(examples, text_column, label_column, "EXAMPLES")
        if test_file is not None:
            pool, held = rows, _rows(test_file, text_column, label_column, "--test-file")[:queries]
        else:
            try:
                pool, held = split_examples(rows, queries, seed)
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--queries") from None
        labels = sorted({r[label_column] for r in rows + held})
        from ucs.evaluation.prompts import CHAT_TEMPLATES

        if chat_template is not None and chat_template not in CHAT_TEMPLATES:
            raise typer.BadParameter(f"choose one of {sorted(CHAT_TEMPLATES)}; got {chat_template!r}",
                                     param_hint="--chat-template")
        backbone = load_backbone(model, engine=engine)
        predictor = backbone_predictor(backbone, labels, text_key=text_column, label_key=label_column,
                                       chat_template=chat_template)
        done = answered(out, names, len(held))
        n_prompts = len(held) * len(names) - done
        seconds = _measure(as_predictor(predictor, text_key=text_column, label_key=label_column), pool, held, k) \
            if n_prompts else 0.0
        typer.echo(estimate_line(n_prompts, seconds, len(labels))
                   + (f" ({done} answered in {out} already)" if done else ""))
        if dry_run:
            raise typer.Exit()
        _confirm(n_prompts * seconds / 60, yes)
        result = compare(pool, predictor, queries=held, selectors=names, k=k, n_queries=len(held),
                         text_key=text_column, label_key=label_column, embedder=embedder, out=out, seed=seed,
                         cache_dir=cache_dir)
        typer.echo(result.to_markdown())
        typer.echo(f"results: {out / 'compare.md'} (+ compare.json, compare.html, records.jsonl)")

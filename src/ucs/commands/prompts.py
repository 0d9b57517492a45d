"""``ucs prompts``: a table of labelled examples (or a saved index) and a file of new queries → one JSON line per
query with the chosen demonstrations and the rendered prompt."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Iterator, Optional

import typer

from ucs import defaults as D

HELP = """Write the few-shot prompt of every query: its demonstrations and the rendered prompt, one JSON line each.

EXAMPLES is a .csv/.tsv/.jsonl/.json table with a text and a label column (or a folder saved by
SelectorIndex.save); QUERIES is a .txt file (one query a line) or a table with --query-column (multi-line texts
in quoted CSV fields or JSON strings). The prompt is the evaluation's intent layout, OpenAI chat messages
(--format chat) or your Jinja template (--template: variables demonstrations, query, labels). Queries stream
through in batches, so the file may be any size.
"""


def _queries(path: Path, column: str) -> Iterator[str]:
    """The queries of a .txt file (one a line) or a table's ``column``, streamed; an empty one is an error."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        csv.field_size_limit(2**31 - 1)
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh, delimiter="\t" if suffix == ".tsv" else ",")
            if column not in (reader.fieldnames or []):
                raise ValueError(f"--query-column: {path} has no column {column!r}; its header is {reader.fieldnames}")
            for row in reader:
                yield _checked(row[column], path, reader.line_num)
    elif suffix == ".jsonl":
        with open(path, encoding="utf-8-sig") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                    except ValueError as exc:
                        raise ValueError(f"{path}, line {n} is not JSON ({exc})") from None
                    if not isinstance(row, dict) or column not in row:
                        raise ValueError(f"--query-column: {path}, line {n} has no field {column!r}")
                    yield _checked(row[column], path, n)
    else:
        with open(path, encoding="utf-8-sig") as fh:
            for n, line in enumerate(fh, 1):
                yield _checked(line.rstrip("\r\n"), path, n)


def _checked(text: object, path: Path, line: int) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{path}, line {line}: the query is empty or not text; give every query a non-empty text")
    return text


def register(app: typer.Typer) -> None:
    @app.command("prompts", help=HELP)
    def prompts_cmd(
        examples: Path = typer.Argument(..., exists=True, help="Labelled examples: a table, or a saved index folder."),
        queries: Path = typer.Argument(..., exists=True, dir_okay=False, help="New queries: .txt, .csv/.tsv or .jsonl."),
        out: Path = typer.Option(..., "--out", "-o", help="Output .jsonl (written whole, then moved into place)."),
        text_column: str = typer.Option("text", "--text-column", help="Examples' text column."),
        label_column: str = typer.Option("label", "--label-column", help="Examples' label column."),
        query_column: str = typer.Option("text", "--query-column", help="Queries' text column (tables)."),
        method: str = typer.Option(D.METHOD, "--method", help="Selector (topk, mmr, labelaware, bsr, dpp+ucs ...)."),
        k: int = typer.Option(4, "--k", min=0, help="Demonstrations per prompt."),
        embedder: Optional[str] = typer.Option(
            None, "--embedder", help="all-minilm-l6-v2, all-mpnet-base-v2 or a sentence-transformers folder "
            "(default: the index's, or the embedded SmolLM2 backbone)."),
        fmt: str = typer.Option("text", "--format", help="text | chat (OpenAI-style messages)."),
        template: Optional[Path] = typer.Option(None, "--template", exists=True, dir_okay=False, help="A Jinja template."),
        order: Optional[str] = typer.Option(None, "--order", help="selected | similar_first | similar_last | vote_last (grouped by label, the most frequent last); default vote_last where the examples have labels, else selected (ucs.defaults.application_order)."),
        cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache."),
    ) -> None:
        from ucs.index import SelectorIndex
        from ucs.index.prompting import prompt_records
        from ucs.utils.progress import advance, stage

        if out.suffix.lower() != ".jsonl":
            raise typer.BadParameter(f"write a .jsonl file; got {out.name!r}", param_hint="--out")
        emb = None
        if embedder is not None:
            from ucs.embedding import load_retrieval_embedder

            emb = load_retrieval_embedder(embedder)
        tmpl = None
        if template is not None:
            from ucs.utils.optional import require

            jinja2 = require("jinja2", "jinja2", "--template")
            tmpl = jinja2.Environment(autoescape=False, keep_trailing_newline=True).from_string(
                template.read_text(encoding="utf-8"))
        if examples.is_dir():
            index = SelectorIndex.load(examples, embedder=emb)
            text_key, label_key = index.input_keys_[0], index.output_key_
            if label_key is None:
                raise typer.BadParameter("this index has no output_key (labels); refit it with one", param_hint="EXAMPLES")
        else:
            from ucs.data.table import read_table

            table = read_table(examples, text_column, label_column)
            rows = [{text_column: t, label_column: y} for t, y in zip(table[text_column], table[label_column])]
            index = SelectorIndex(emb, method, input_keys=[text_column], output_key=label_column,
                                  cache_dir=cache_dir).fit(rows)
            text_key, label_key = text_column, label_column
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        n = 0
        try:
            with open(tmp, "w", encoding="utf-8") as fh, stage(f"writing prompts to {out}", kind="prompts"):
                for record in prompt_records(index, _queries(queries, query_column), k, text_key=text_key,
                                             label_key=label_key, fmt=fmt, template=tmpl, order=order):
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    n += 1
                    advance(1, kind="prompts")
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        typer.echo(f"{n} prompts ({index.method_}, k = {k}) → {out}")

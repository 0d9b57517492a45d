"""``ucs prompts``: a table of labelled examples (or a saved index) and a file of new queries → one JSON line
per query with the chosen demonstrations and the rendered prompt."""

from __future__ import annotations

import csv
import itertools
import json
import os
from pathlib import Path
from typing import Any, Iterator, Optional, Tuple

import typer

from ucs import defaults as D

HELP = """Write the few-shot prompt of every query: its demonstrations and the rendered prompt, one JSON line
each.

EXAMPLES is a .csv/.tsv/.jsonl/.json table with a text and a label column (or a folder saved by
SelectorIndex.save); QUERIES is a .txt file (one query a line) or a table with --query-column (multi-line
texts in quoted CSV fields or JSON strings). The prompt is the evaluation's intent layout, OpenAI chat
messages (--format chat) or your Jinja template (--template: variables demonstrations, query, labels). Queries
stream through in batches, so the file may be any size.
"""


#: The variables a --template may use.
TEMPLATE_VARIABLES = frozenset({"demonstrations", "query", "labels"})


def _queries(path: Path, column: str) -> Iterator[str]:
    """The queries of ``path``, streamed (:func:`_read_queries`); a file that is not UTF-8 text is an error
    naming QUERIES and the file."""
    try:
        yield from _read_queries(path, column)
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(
            f"{path} is not UTF-8 text ({exc.reason}); give a .txt, .csv, .tsv or .jsonl file of UTF-8 text",
            param_hint="QUERIES",
        ) from None
    except csv.Error as exc:  # e.g. "line contains NUL": a binary file named .csv
        raise typer.BadParameter(
            f"{path} is not a readable CSV/TSV text table ({exc})", param_hint="QUERIES"
        ) from None


def _read_queries(path: Path, column: str) -> Iterator[str]:
    """The queries of a .txt file (one a line) or a table's ``column``, streamed; an empty one is an error."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        csv.field_size_limit(2**31 - 1)
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh, delimiter="\t" if suffix == ".tsv" else ",")
            if column not in (reader.fieldnames or []):
                raise ValueError(
                    f"--query-column: {path} has no column {column!r}; its header is {reader.fieldnames}"
                )
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
        raise ValueError(
            f"{path}, line {line}: the query is empty or not text; give every query a non-empty text"
        )
    if "\x00" in text:
        raise typer.BadParameter(
            f"{path}, line {line} holds a NUL byte: the file is binary, not UTF-8 text; "
            "give one query a line",
            param_hint="QUERIES",
        )
    return text


def _nonempty(queries: Iterator[str], path: Path) -> Iterator[str]:
    """``queries`` with its first query read now: a file without any (or unreadable) fails before any work."""
    first = next(queries, None)
    if first is None:
        raise typer.BadParameter(
            f"{path} has no queries; write one query a line (or one table row each)", param_hint="QUERIES"
        )
    return itertools.chain([first], queries)


def _check_out(out: Path) -> None:
    """``--out`` must be a .jsonl file in an existing folder (checked before anything is computed)."""
    if out.suffix.lower() != ".jsonl":
        raise typer.BadParameter(f"write a .jsonl file; got {out.name!r}", param_hint="--out")
    if out.is_dir():
        raise typer.BadParameter(f"{out} is a folder; give the path of a .jsonl file", param_hint="--out")
    folder = out.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise typer.BadParameter(
            f"the folder {folder} {what}; create it first or write the prompts elsewhere", param_hint="--out"
        )


def _check_choices(fmt: str, order: Optional[str]) -> None:
    """--format and --order are checked before the examples are embedded, not at the first prompt."""
    from ucs.index.prompting import FORMATS
    from ucs.selectors.base import ORDERS

    if fmt not in FORMATS:
        raise typer.BadParameter(
            f"one of {', '.join(FORMATS)}; got {fmt!r} (or give --template)", param_hint="--format"
        )
    if order is not None and order not in ORDERS:
        raise typer.BadParameter(f"one of {', '.join(ORDERS)}; got {order!r}", param_hint="--order")


class _Template:
    """A compiled ``--template`` whose render errors name the file and line (one line, exit 2)."""

    def __init__(self, compiled: Any, path: Path) -> None:
        self.compiled, self.path = compiled, path

    def render(self, **variables: Any) -> str:
        try:
            return self.compiled.render(**variables)
        except Exception as exc:  # noqa: BLE001 - any error of the user's template (undefined field, 1/0 ...)
            line = _template_line(exc)
            where = f"{self.path}, line {line}" if line else str(self.path)
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise typer.BadParameter(
                f"{where}: {message} (rendering the template)", param_hint="--template"
            ) from None


def _template_line(exc: BaseException) -> Optional[int]:
    """The template line of ``exc``'s deepest frame in the template (Jinja rewrites its traceback so)."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _template(path: Path) -> _Template:
    """Compile ``--template`` with StrictUndefined: a syntax error, or a variable other than
    :data:`TEMPLATE_VARIABLES`, is an error naming the file and line before anything runs."""
    from ucs.utils.optional import require

    jinja2 = require("jinja2", "jinja2", "--template")
    from jinja2 import meta, nodes

    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(
            f"{path} is not UTF-8 text ({exc.reason})", param_hint="--template"
        ) from None
    env = jinja2.Environment(autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    try:
        ast = env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise typer.BadParameter(
            f"{path}, line {exc.lineno}: {exc.message}", param_hint="--template"
        ) from None
    unknown = sorted(meta.find_undeclared_variables(ast) - TEMPLATE_VARIABLES - set(env.globals))
    if unknown:
        line = min(n.lineno for n in ast.find_all(nodes.Name) if n.name == unknown[0])
        names = ", ".join(sorted(TEMPLATE_VARIABLES))
        raise typer.BadParameter(
            f"{path}, line {line}: {unknown[0]!r} is undefined; the template's variables are {names}",
            param_hint="--template",
        )
    return _Template(env.from_string(ast), path)


def _saved_index(
    folder: Path,
    emb: Any,
    method: Optional[str],
    text_column: Optional[str],
    label_column: Optional[str],
    cache_dir: Optional[Path],
) -> Tuple[Any, str]:
    """The index saved in ``folder`` and the method it was saved with. Options it would override are refused,
    not ignored: a --text-column or --label-column other than its fields, and --cache-dir (it embeds only the
    queries, never cached); a --method other than its own refits only its selector
    (:meth:`SelectorIndex.set_method`)."""
    from ucs.index import SelectorIndex

    if cache_dir is not None:
        raise typer.BadParameter(
            f"{folder} is a saved index: it embeds only the queries, which are never "
            "cached; drop --cache-dir (it serves fitting from a table)",
            param_hint="--cache-dir",
        )
    index = SelectorIndex.load(folder, embedder=emb, warmup=False)
    if index.output_key_ is None:
        raise typer.BadParameter(
            f"the index at {folder} has no output_key (labels); refit it with one", param_hint="EXAMPLES"
        )
    keys = {
        "--text-column": (text_column, index.input_keys_[0]),
        "--label-column": (label_column, index.output_key_),
    }
    for opt, (given, stored) in keys.items():
        if given is not None and given != stored:
            raise typer.BadParameter(
                f"the index at {folder} was fitted with field {stored!r}, not {given!r}; drop {opt}, or pass "
                "a table as EXAMPLES to fit on other fields",
                param_hint=opt,
            )
    saved = index.method_
    if method is not None:
        index.set_method(method)
    return index, saved


def prompts_cmd(
    examples: Path = typer.Argument(
        ..., exists=True, help="Labelled examples: a table, or a saved index folder."
    ),
    queries: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="New queries: .txt, .csv/.tsv or .jsonl."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output .jsonl (written whole, then moved into place)."
    ),
    text_column: Optional[str] = typer.Option(
        None, "--text-column", help="Examples' text column (default text; a saved index's own)."
    ),
    label_column: Optional[str] = typer.Option(
        None, "--label-column", help="Examples' label column (default label; a saved index's own)."
    ),
    query_column: str = typer.Option("text", "--query-column", help="Queries' text column (tables)."),
    method: Optional[str] = typer.Option(
        None,
        "--method",
        help=f"Selector (topk, mmr, labelaware, bsr, dpp+ucs ...); default {D.METHOD}, "
        "or a saved index's own (another one refits only its selector, on the stored embeddings).",
    ),
    k: int = typer.Option(4, "--k", min=0, help="Demonstrations per prompt."),
    embedder: Optional[str] = typer.Option(
        None,
        "--embedder",
        help="all-minilm-l6-v2, all-mpnet-base-v2 or a sentence-transformers folder "
        "(default: the index's, or the embedded SmolLM2 backbone).",
    ),
    fmt: str = typer.Option("text", "--format", help="text | chat (OpenAI-style messages)."),
    template: Optional[Path] = typer.Option(
        None, "--template", exists=True, dir_okay=False, help="A Jinja template."
    ),
    order: Optional[str] = typer.Option(
        None,
        "--order",
        help="selected | similar_first | similar_last | vote_last (grouped by label, the most frequent "
        "last); default vote_last where the examples have labels, else selected "
        "(ucs.defaults.application_order).",
    ),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Embedding cache (fitting from a table)."
    ),
) -> None:
    from ucs.index import SelectorIndex
    from ucs.index.prompting import prompt_records
    from ucs.utils.progress import advance, stage

    _check_out(out)
    _check_choices(fmt, order)
    tmpl = None if template is None else _template(template)
    stream = _nonempty(_queries(queries, query_column), queries)
    emb = None
    if embedder is not None:
        from ucs.embedding import load_retrieval_embedder

        emb = load_retrieval_embedder(embedder)
    saved = None
    if examples.is_dir():
        index, saved = _saved_index(examples, emb, method, text_column, label_column, cache_dir)
        text_key, label_key = index.input_keys_[0], index.output_key_
    else:
        from ucs.data.table import read_table

        text_key, label_key = text_column or "text", label_column or "label"
        table = read_table(examples, text_key, label_key)
        rows = [{text_key: t, label_key: y} for t, y in zip(table[text_key], table[label_key])]
        index = SelectorIndex(
            emb, method or D.METHOD, input_keys=[text_key], output_key=label_key, cache_dir=cache_dir
        ).fit(rows)
    n = _write(
        out,
        prompt_records(
            index, stream, k, text_key=text_key, label_key=label_key, fmt=fmt, template=tmpl, order=order
        ),
        stage,
        advance,
    )
    note = f"; the index was saved with {saved}" if saved and saved != index.method_ else ""
    typer.echo(f"{n} prompts ({index.method_}, k = {k}{note}) → {out}")


def register(app: typer.Typer) -> None:
    app.command("prompts", help=HELP)(prompts_cmd)


def _write(out: Path, records: Iterator[dict], stage: Any, advance: Any) -> int:
    """Write ``records`` to a temporary file beside ``out``, then move it into place; returns their count."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        fh = open(tmp, "w", encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot write in the folder {out.parent} ({exc.strerror}); choose another path",
            param_hint="--out",
        ) from None
    n = 0
    try:
        with fh, stage(f"writing prompts to {out}", kind="prompts"):
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                n += 1
                advance(1, kind="prompts")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return n

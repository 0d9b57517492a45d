"""Every ``ucs`` command shown in README.md and docs/ names a real sub-command and real options.

Documentation drifts when an option is renamed; a reader who copies a command then gets a usage
error. This reads every command line of the Markdown files (inline code spans and the lines of
fenced ``bash`` blocks), walks the real command tree built by :mod:`ucs.cli`, and checks each
``--option`` against the parameters of the command it reaches, and the names given to
``reproduce --only`` and ``--selectors`` against the experiment registry and the selector names.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from collections.abc import Iterator

import pytest
import typer

from ucs.cli import app
from ucs.experiments.registry import experiment_names
from ucs.selectors.factory import parse_method

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_SPAN = re.compile(r"`(ucs [^`]+)`")
_ALWAYS = {"--help"}


def _command_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, command) for inline ``ucs ...`` spans and the ``ucs ...`` commands of fenced blocks
    (continuation lines ending in ``\\`` joined)."""
    fenced, pending, start = False, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced, pending = not fenced, ""
            continue
        if fenced:
            code = line.split(" #", 1)[0].strip().removeprefix("$ ")
            if pending:  # a continuation line of the command above
                code = pending + " " + code
            elif code.startswith("ucs "):
                start = number
            else:
                continue
            if code.endswith("\\"):
                pending = code[:-1].rstrip()
            else:
                pending = ""
                yield start, code
        else:
            for match in _SPAN.finditer(line):
                yield number, match.group(1)


def _documented() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        for number, command in _command_lines(path.read_text(encoding="utf-8")):
            out.append((f"{path.relative_to(ROOT)}:{number}", command))
    return out


DOCUMENTED = _documented()


def _resolve(tokens: list[str]):
    """The command a token list reaches, the path to it, and the remaining tokens."""
    command = typer.main.get_command(app)
    path = ["ucs"]
    rest = tokens[1:]
    while hasattr(command, "commands") and rest and rest[0] in command.commands:
        command = command.commands[rest[0]]
        path.append(rest.pop(0))
    return command, path, rest


def _values(rest: list[str], option: str) -> list[str]:
    values = []
    for i, token in enumerate(rest):
        if token == option and i + 1 < len(rest):
            values.append(rest[i + 1])
        elif token.startswith(option + "="):
            values.append(token.split("=", 1)[1])
    return values


def test_the_docs_show_commands():
    assert len(DOCUMENTED) > 50, "the scanner found almost no commands: has the Markdown layout changed?"


@pytest.mark.parametrize("where, command", DOCUMENTED, ids=[w for w, _ in DOCUMENTED])
def test_documented_command_exists(where, command):
    try:
        tokens = shlex.split(command)
    except ValueError:
        pytest.skip("not a shell line (unbalanced quotes in prose)")
    cmd, path, rest = _resolve(tokens)
    if hasattr(cmd, "commands"):  # a group: the next word must be one of its commands
        if rest and not rest[0].startswith("-") and rest[0] != "...":
            pytest.skip(f"prose that starts with 'ucs' ({command[:40]!r})")
        return
    known = {name for p in cmd.params for name in (*p.opts, *p.secondary_opts)} | _ALWAYS
    unknown = sorted({t.split("=", 1)[0] for t in rest if t.startswith("--")} - known)
    assert not unknown, f"{where}: `{' '.join(path)}` has no option {', '.join(unknown)}: {command!r}"
    if path[-1] == "reproduce":
        names = set(experiment_names())
        for value in _values(rest, "--only"):
            missing = [n for n in value.split(",") if n and n not in names]
            assert not missing, f"{where}: no experiment named {missing}: {command!r}"
    for value in _values(rest, "--selectors"):
        for name in value.split(","):
            parse_method(name)  # raises on an unknown selector name

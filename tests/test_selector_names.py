"""Selectors declare what they need (``needs_scorer``, ``needs_cluster_ids``, …); code outside
``ucs/selectors/`` reads those declarations and never tests a selector's name."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

from ucs.selectors.factory import BASE_SELECTORS

SRC = Path(__file__).resolve().parents[1] / "src" / "ucs"
NAMES = set(BASE_SELECTORS) | {f"{b}+ucs" for b in BASE_SELECTORS}


def _literal_names(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for elt in node.elts:
            yield from _literal_names(elt)


def name_tests(tree: ast.AST) -> Iterator[Tuple[int, str]]:
    """(line, name) of each comparison (``==``, ``!=``, ``in``, ``not in``) against a selector's name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                for name in _literal_names(side):
                    if name.lower() in NAMES:
                        yield node.lineno, name


def test_the_check_finds_a_name_test():
    assert list(name_tests(ast.parse('if base == "mdl" or m in ("bsr", "x"):\n    pass'))) == [
        (1, "mdl"),
        (1, "bsr"),
    ]
    assert list(name_tests(ast.parse('for b in ("topk", "dpp"):\n    x = {"mdl": 1}'))) == []


def test_no_selector_name_is_tested_outside_the_selectors_package():
    found = [
        f"{path.relative_to(SRC.parent)}:{line}: {name!r}"
        for path in sorted(SRC.rglob("*.py"))
        if "selectors" not in path.relative_to(SRC).parts
        for line, name in name_tests(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not found, "read the selector's declared needs instead of testing its name:\n" + "\n".join(found)

"""A method name becomes a :class:`~ucs.selectors.MethodSpec` once, where it enters the package: only the
edges below call ``MethodSpec.parse``; everything inward passes the spec."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

SRC = Path(__file__).resolve().parents[2] / "src" / "ucs"

#: (module, function) → where the string it parses comes from. Keep ucs.selectors.method's docstring in step.
EDGES: Dict[Tuple[str, str], str] = {
    ("ucs.selectors.factory", "parse_method"): "a caller's name (public helper)",
    ("ucs.selectors.factory", "canonical_method"): "a caller's name (public helper)",
    ("ucs.selectors.factory", "make_selector"): "a caller's method argument",
    ("ucs.pipeline.config", "_method_spec"): "selector.method, lam_by_selector / dbscan_q_by_selector keys, "
    "a caller's name given to lam_for / dbscan_q_for",
    ("ucs.pipeline.pipeline", "Pipeline.run"): "run(methods=)",
    ("ucs.pipeline.pipeline", "_stage_spec"): "a name given to a public stage method, or one a resumed run "
    "folder's manifest lists",
    ("ucs.index.index", "SelectorIndex._check_params"): "SelectorIndex(method=), checked when it fits",
    ("ucs.index.index", "SelectorIndex.set_method"): "set_method(method)",
    ("ucs.experiments.compare_grid", "parse_cell"): "the grid's --reference cell",
    ("ucs.experiments.compare_grid", "grid_cells"): "the grid's selectors given by name",
    ("ucs.experiments.compare", "plan_grid"): "compare(selectors=)",
}


def parse_sites(tree: ast.AST) -> Iterator[Tuple[str, int]]:
    """(enclosing function's qualified name, line) of each use of ``MethodSpec.parse`` (called or passed,
    as in ``map(MethodSpec.parse, names)``); ``""`` at module level."""

    def visit(node: ast.AST, scope: List[str]) -> Iterator[Tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from visit(child, scope + [child.name])
                continue
            if (
                isinstance(child, ast.Attribute)
                and child.attr == "parse"
                and isinstance(child.value, ast.Name)
                and child.value.id == "MethodSpec"
            ):
                yield ".".join(scope), child.lineno
            yield from visit(child, scope)

    yield from visit(tree, [])


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sites() -> List[Tuple[str, str, int]]:
    return [
        (_module(path), scope, line)
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "method.py" or path.parent.name != "selectors"  # MethodSpec's own module
        for scope, line in parse_sites(ast.parse(path.read_text(encoding="utf-8")))
    ]


def test_the_check_finds_each_use():
    code = (
        "x = MethodSpec.parse('dpp')\n"
        "class A:\n"
        "    def f(self, names):\n"
        "        return list(map(MethodSpec.parse, names))\n"
        "def g(m):\n"
        "    return m.parse(), MethodSpec(m).name\n"
    )
    assert list(parse_sites(ast.parse(code))) == [("", 1), ("A.f", 4)]


def test_names_are_parsed_only_at_the_edges():
    found = [
        f"{module}:{line} in {scope or 'module level'}"
        for module, scope, line in _sites()
        if (module, scope) not in EDGES
    ]
    assert not found, (
        "MethodSpec.parse outside the package's edges:\n"
        + "\n".join(found)
        + "\npass the MethodSpec inward (PipelineConfig.method_specs, Cell.method_specs, a spec argument) "
        "instead of its name; if a user's or a file's string enters the package there, add the function to "
        "EDGES in tests/selectors/test_method_edges.py and to ucs.selectors.method's docstring"
    )


def test_every_edge_still_parses():
    used = {(module, scope) for module, scope, _ in _sites()}
    stale = sorted(f"{m}.{f}" for m, f in EDGES if (m, f) not in used)
    assert not stale, f"these edges no longer parse a name; remove them from EDGES: {stale}"

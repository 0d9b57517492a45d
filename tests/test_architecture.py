"""The drawn structure of the package: imports point down the floors, and no module imports itself back.

Every ``import`` of ``src/ucs`` is read (top level and inside functions). A package may import from its own
floor or a lower one, never from a higher one, and the module graph has no cycle at all, so no import
inside a function is there to hide a circle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ucs"

#: Floors, lowest first (DEVELOPERS' guide): estimators/lm → clustering/selectors/embedding/data →
#: models/evaluation/distributed → pipeline → experiments → commands → cli.
FLOORS = [
    {"_version", "defaults", "estimators", "lm", "utils"},
    {"clustering", "selectors", "embedding", "data"},
    {"models", "evaluation", "distributed", "index", "report"},
    {"pipeline"},
    {"experiments"},
    {"commands", "integrations", "testing"},
    {"cli", "ucs"},
]
FLOOR = {pkg: i for i, pkgs in enumerate(FLOORS) for pkg in pkgs}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, modules: set) -> set:
    """The ucs modules ``path`` imports (a ``from package import name`` counts as the submodule if it is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return {m for m in out if m in modules and m != name}


def _graph() -> dict:
    paths = {_module_name(p): p for p in SRC.rglob("*.py")}
    return {m: _imports(p, m, set(paths)) for m, p in paths.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "ucs"


def test_every_package_has_a_floor():
    missing = sorted({_package(m) for m in _graph()} - set(FLOOR))
    assert not missing, f"place {missing} on a floor of FLOORS"


def test_no_import_runs_back_up_a_floor():
    upward = sorted(f"{a} → {b}" for a, bs in _graph().items() for b in bs
                    if FLOOR[_package(b)] > FLOOR[_package(a)])
    assert not upward, "imports from a higher floor:\n" + "\n".join(upward)


def _cycles(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_module_circles():
    assert _cycles(_graph()) == []


def test_the_checks_can_fail():
    graph = {"ucs.a.x": {"ucs.b.y"}, "ucs.b.y": {"ucs.a.x"}}
    assert _cycles(graph) == [["ucs.a.x", "ucs.b.y"]]
    assert FLOOR["pipeline"] > FLOOR["selectors"]
    # a package-level import of a submodule name resolves to the submodule
    assert "ucs.selectors.factory" in _graph()["ucs.pipeline.config"]

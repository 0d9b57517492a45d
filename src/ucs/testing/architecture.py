"""The drawn structure of the package: which package imports which, and on what floor each one sits.

Every ``import`` under ``src/ucs`` is read (top level and inside functions), so the picture is the code's.
:data:`FLOORS` orders the packages from the bottom up; a package may import from its own floor or a lower one.
``python -m ucs.testing.architecture`` prints the Mermaid diagram of ``docs/architecture.md`` (a test keeps
that page equal to this output). Cost: one parse of every source file (well under a second).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

__all__ = ["FLOORS", "cycles", "import_graph", "mermaid", "package_of", "upward_imports"]

#: Floors, lowest first: estimators/lm → clustering/selectors/embedding/data → models/evaluation/distributed →
#: pipeline → experiments → commands → cli (plus the helpers each floor may read).
FLOORS: List[Set[str]] = [
    {"_version", "defaults", "estimators", "lm", "utils"},
    {"clustering", "selectors", "embedding", "data"},
    {"models", "evaluation", "distributed", "index", "report"},
    {"pipeline"},
    {"experiments"},
    {"commands", "integrations", "testing"},
    {"cli", "ucs"},
]
FLOOR: Dict[str, int] = {pkg: i for i, pkgs in enumerate(FLOORS) for pkg in pkgs}
SRC = Path(__file__).resolve().parents[1]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, modules: Set[str]) -> Set[str]:
    """The ucs modules ``path`` imports (``from package import name`` counts as the submodule if it is
    one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: Set[str] = set()
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


def import_graph(root: Optional[Path] = None) -> Dict[str, Set[str]]:
    """Module → the ucs modules it imports, for every module under ``root`` (default: this package)."""
    root = root or SRC
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    return {m: _imports(p, m, set(paths)) for m, p in paths.items()}


def package_of(module: str) -> str:
    """``ucs.selectors.dpp`` → ``selectors``; the root package is ``ucs``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "ucs"


def upward_imports(graph: Dict[str, Set[str]]) -> List[str]:
    """``a → b`` for every import from a package to one on a higher floor."""
    return sorted(
        f"{a} → {b}" for a, bs in graph.items() for b in bs if FLOOR[package_of(b)] > FLOOR[package_of(a)]
    )


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative), O(V + E)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on: Set[str] = set()
    stack: List[str] = []
    out: List[List[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        work = [(root, iter(sorted(graph.get(root, ()))))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
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


def mermaid(graph: Optional[Dict[str, Set[str]]] = None) -> str:
    """The package-level import graph as a Mermaid flowchart, one subgraph per floor (top floor first)."""
    graph = import_graph() if graph is None else graph
    edges = sorted(
        {
            (package_of(a), package_of(b))
            for a, bs in graph.items()
            for b in bs
            if package_of(a) != package_of(b)
        }
    )
    present = {package_of(m) for m in graph}
    lines = ["flowchart TD"]
    for i in reversed(range(len(FLOORS))):
        members = sorted(FLOORS[i] & present)
        if members:
            lines.append(f'  subgraph floor{i}["floor {i}"]')
            lines += [f"    {p}" for p in members]
            lines.append("  end")
    lines += [f"  {a} --> {b}" for a, b in edges]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - prints the diagram of docs/architecture.md
    print(mermaid(), end="")

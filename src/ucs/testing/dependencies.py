"""Which third-party packages each module imports, and whether ``pyproject.toml`` declares them.

Every ``import`` under ``src/ucs`` is read from the source (nothing is imported). An import *at load time* is
one that runs when the module is imported: at module level, outside ``if TYPE_CHECKING:`` and outside a
``try`` whose handler catches ``ImportError``. Such an import is a dependency of every profile that loads the
module, so it must be in ``[project.dependencies]`` or in an extra that the module's docstring names (``the
``report`` extra``). Imports inside functions are optional: they must be declared in some extra and stay
behind
:func:`ucs.utils.optional.require` or a message that names the install. Cost: one parse of every source file.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set

from ucs.testing.architecture import SRC, import_graph

__all__ = [
    "declared_groups",
    "distribution_names",
    "load_time_imports",
    "all_imports",
    "module_extras",
    "undeclared_load_time",
    "undeclared_anywhere",
]

_STD = set(sys.stdlib_module_names) | {"__future__", "ucs"}
_EXTRA_RE = re.compile(r"``([a-z0-9_-]+)`` extra")


def _names(node: ast.AST) -> Set[str]:
    """Top-level module names an import statement brings in (relative imports are ucs's own)."""
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return {node.module.split(".")[0]}
    return set()


def _catches_import_error(node: ast.Try) -> bool:
    return any(
        h.type is None or re.search(r"\b(ImportError|ModuleNotFoundError)\b", ast.unparse(h.type))
        for h in node.handlers
    )


def _load_time(stmts: Iterable[ast.stmt]) -> Set[str]:
    out: Set[str] = set()
    for node in stmts:
        out |= _names(node)
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                out |= _load_time(node.body) | _load_time(node.orelse)
        elif isinstance(node, ast.Try):
            if not _catches_import_error(node):
                out |= _load_time(node.body)
            out |= _load_time(node.orelse) | _load_time(node.finalbody)
        elif isinstance(node, ast.With):
            out |= _load_time(node.body)
    return out


def load_time_imports(path: Path) -> Set[str]:
    """Third-party top-level names imported when the module at ``path`` loads."""
    return _load_time(ast.parse(path.read_text(encoding="utf-8")).body) - _STD


def all_imports(path: Path) -> Set[str]:
    """Third-party top-level names imported anywhere in the module at ``path`` (functions included)."""
    return {n for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) for n in _names(node)} - _STD


def module_extras(path: Path) -> Set[str]:
    """The extras a module's docstring names (``the ``report`` extra``)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return set(_EXTRA_RE.findall(doc))


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_groups(pyproject: Path) -> Dict[str, Set[str]]:
    """``{"core": {...}, extra: {...}}``: normalized distribution names of each dependency group."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]

    def dists(reqs: Iterable[str]) -> Set[str]:
        return {_normalize(re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]) for r in reqs}

    groups = {"core": dists(project.get("dependencies", []))}
    groups.update({k: dists(v) for k, v in project.get("optional-dependencies", {}).items()})
    return groups


def distribution_names(module: str, index: Optional[Dict[str, List[str]]] = None) -> Set[str]:
    """Normalized names of the installed distributions that provide top-level ``module``; where none is
    installed (a dependency of another Python version, such as ``tomli``), the module's own name."""
    index = metadata.packages_distributions() if index is None else index
    return {_normalize(d) for d in index.get(module, [])} or {_normalize(module)}


def _module_paths(root: Path) -> Dict[str, Path]:
    return {
        (".".join(p.relative_to(root.parent).with_suffix("").parts)).removesuffix(".__init__"): p
        for p in root.rglob("*.py")
    }


def _load_closure(graph: Dict[str, Set[str]], paths: Dict[str, Path]) -> Dict[str, Set[str]]:
    """Module → the ucs modules loaded with it, through load-time imports only."""
    loaded = {m: _load_time_names(paths[m]) for m in graph}  # one parse per module
    direct = {
        m: {d for d in graph[m] if d in loaded[m] or any(f.startswith(d + ".") for f in loaded[m])}
        for m in graph
    }
    out: Dict[str, Set[str]] = {}
    for m in graph:
        seen, todo = {m}, [m]
        while todo:
            for d in direct[todo.pop()]:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        out[m] = seen
    return out


def _load_time_names(path: Path) -> Set[str]:
    """Every dotted name ``path`` imports at load time (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found: Set[str] = set()

    def visit(stmts: Iterable[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try) and not _catches_import_error(node):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def undeclared_load_time(pyproject: Path, root: Path = SRC) -> List[str]:
    """``module: name (dist) needs extra …`` for every load-time third-party import, direct or through the ucs
    modules it loads, that ``[project.dependencies]`` and the module's named extras do not declare."""
    groups, index = declared_groups(pyproject), metadata.packages_distributions()
    paths = _module_paths(root)
    closure = _load_closure(import_graph(root), paths)
    problems = []
    for module in sorted(paths):
        allowed = set(groups["core"])
        for extra in module_extras(paths[module]):
            allowed |= groups.get(extra, set())
        for dep in sorted(closure[module]):
            for name in sorted(load_time_imports(paths[dep]) - {root.name}):
                dists = distribution_names(name, index)
                if not dists & allowed:
                    where = "" if dep == module else f" (through {dep})"
                    problems.append(
                        f"{module}: imports {name!r}{where} when it loads, provided by "
                        f"{sorted(dists)}, not declared for it"
                    )
    return problems


def undeclared_anywhere(pyproject: Path, root: Path = SRC) -> List[str]:
    """``module: name`` for every third-party import (optional ones included) that no dependency group
    declares."""
    groups, index = declared_groups(pyproject), metadata.packages_distributions()
    everything = set().union(*groups.values())
    return [
        f"{m}: imports {name!r}, provided by {sorted(distribution_names(name, index))}"
        for m, p in sorted(_module_paths(root).items())
        for name in sorted(all_imports(p) - {root.name})
        if not distribution_names(name, index) & everything
    ]

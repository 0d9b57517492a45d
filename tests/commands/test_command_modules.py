"""The shape of ``ucs.commands``: each command is a module-level function that ``register(app)`` adds, and no
command module imports another (shared pieces live in the underscore helper modules)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Dict, List

import typer

import ucs.commands as commands
from ucs.cli import app

PACKAGE = Path(commands.__file__).parent
COMMAND_MODULES = sorted(
    m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")
)


def _tree(name: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))


def nested_functions(tree: ast.Module) -> List[str]:
    """Functions defined inside ``register`` (a handler that is not at module level)."""
    return [
        f"register.{inner.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "register"
        for inner in ast.walk(node)
        if inner is not node and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def command_imports(tree: ast.Module, modules: List[str]) -> List[str]:
    """The command modules (of ``modules``) that ``tree`` imports, at any depth."""
    found = []
    for node in ast.walk(tree):
        names: List[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found += [
            n for n in names if n.rpartition(".")[0] == "ucs.commands" and n.rpartition(".")[2] in modules
        ]
    return sorted(set(found))


def _callbacks(typer_app: typer.Typer, prefix: str = "") -> Dict[str, object]:
    out: Dict[str, object] = {}
    for info in typer_app.registered_commands:
        out[f"{prefix}{info.name}"] = info.callback
    for group in typer_app.registered_groups:
        out.update(_callbacks(group.typer_instance, f"{prefix}{group.name} "))
    return out


def test_no_command_handler_is_nested_in_register():
    nested = {m: nested_functions(_tree(m)) for m in COMMAND_MODULES}
    assert not {m: n for m, n in nested.items() if n}, nested


def test_no_command_module_imports_another():
    imports = {m: command_imports(_tree(m), COMMAND_MODULES) for m in COMMAND_MODULES}
    assert not {m: i for m, i in imports.items() if i}, imports


def test_every_registered_command_is_a_module_level_function():
    callbacks = _callbacks(app)
    assert {"cluster", "compare", "distributed cluster", "report", "serve"} <= set(callbacks)
    for name, callback in callbacks.items():
        fn = getattr(callback, "__wrapped__", callback)  # the error policy's wrapper keeps the handler
        module = importlib.import_module(fn.__module__)
        assert "<locals>" not in fn.__qualname__ and getattr(module, fn.__name__) is fn, (
            f"ucs {name}: {fn.__module__}.{fn.__qualname__} is not a module-level function"
        )


def test_the_checks_can_fail():
    nested = ast.parse("def register(app):\n    @app.command('x')\n    def x_cmd():\n        pass\n")
    assert nested_functions(nested) == ["register.x_cmd"]
    lifted = ast.parse("def x_cmd():\n    pass\n\n\ndef register(app):\n    app.command('x')(x_cmd)\n")
    assert nested_functions(lifted) == []
    tree = ast.parse(
        "from ucs.commands.report import MISSING\nfrom ucs.commands._report import MISSING\n"
        "from ucs.commands import select\nimport ucs.commands.tune\n"
    )
    assert command_imports(tree, ["report", "select", "tune"]) == [
        "ucs.commands.report",
        "ucs.commands.select",
        "ucs.commands.tune",
    ]

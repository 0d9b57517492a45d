"""Every third-party import is declared: load-time imports in the profile that loads the module, the rest in
an extra (ucs.testing.dependencies reads the package's own import graph)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ucs.testing.dependencies import (
    declared_groups,
    load_time_imports,
    module_extras,
    undeclared_anywhere,
    undeclared_load_time,
)

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_load_time_imports_are_declared():
    assert undeclared_load_time(PYPROJECT) == []


def test_every_import_is_declared_somewhere():
    assert undeclared_anywhere(PYPROJECT) == []


def _package(tmp_path: Path, files: dict) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _pyproject(tmp_path: Path, core: str, extras: str = "") -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        f'[project]\nname = "x"\ndependencies = [{core}]\n[project.optional-dependencies]\n{extras}\n'
    )
    return path


def test_an_undeclared_load_time_import_is_found_directly_and_through_another_module(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "import click\nimport numpy\n",
            "cli.py": "from pkg import errors\n",
            "lazy.py": "def f():\n    import click\n",
        },
    )
    problems = undeclared_load_time(_pyproject(tmp_path, '"numpy>=1"'), root)
    assert any(p.startswith("pkg.errors: imports 'click'") for p in problems)
    assert any(p.startswith("pkg.cli: imports 'click' (through pkg.errors)") for p in problems)
    assert not any("numpy" in p or p.startswith("pkg.lazy") for p in problems)
    assert undeclared_load_time(_pyproject(tmp_path, '"numpy>=1", "click>=8"'), root) == []


def test_guarded_imports_are_not_load_time_and_docstring_extras_are_read(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "m.py": '''\
            """Plots; needs the ``plot`` extra."""
            from typing import TYPE_CHECKING
            import matplotlib
            if TYPE_CHECKING:
                import torch
            try:
                import faiss
            except ImportError:
                faiss = None
            ''',
        },
    )
    assert load_time_imports(root / "m.py") == {"matplotlib"}
    assert module_extras(root / "m.py") == {"plot"}
    pyproject = _pyproject(tmp_path, '"numpy"', 'plot = ["matplotlib>=3"]\nfast = ["faiss-cpu"]\n')
    assert undeclared_load_time(pyproject, root) == []
    assert [p.split(":")[1].strip() for p in undeclared_anywhere(pyproject, root)] == [
        "imports 'torch', provided by ['torch']"
    ]
    assert declared_groups(pyproject)["fast"] == {"faiss-cpu"}

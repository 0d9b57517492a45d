"""The drawn structure of the package: imports point down the floors, no module imports itself back, and
docs/architecture.md draws the structure the code has."""

from __future__ import annotations

import re
from pathlib import Path

from ucs.testing.architecture import FLOOR, cycles, import_graph, mermaid, package_of, upward_imports

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def test_every_package_has_a_floor():
    missing = sorted({package_of(m) for m in import_graph()} - set(FLOOR))
    assert not missing, f"place {missing} on a floor of ucs.testing.architecture.FLOORS"


def test_no_import_runs_back_up_a_floor():
    upward = upward_imports(import_graph())
    assert not upward, "imports from a higher floor:\n" + "\n".join(upward)


def test_no_module_circles():
    assert cycles(import_graph()) == []


def test_the_checks_can_fail():
    graph = {"ucs.a.x": {"ucs.b.y"}, "ucs.b.y": {"ucs.a.x"}, "ucs.b.z": set()}
    assert cycles(graph) == [["ucs.a.x", "ucs.b.y"]]
    assert upward_imports({"ucs.selectors.x": {"ucs.pipeline.y"}, "ucs.pipeline.y": set()}) == [
        "ucs.selectors.x → ucs.pipeline.y"
    ]
    # a package-level import of a submodule name resolves to the submodule
    assert "ucs.selectors.factory" in import_graph()["ucs.pipeline.config"]


def test_the_architecture_page_draws_the_code():
    drawn = re.search(r"```mermaid\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert drawn is not None and drawn.group(1) == mermaid(), (
        "docs/architecture.md is stale: paste the output of `python -m ucs.testing.architecture`"
    )

"""The
```python blocks of the index and integration pages run as written (in order, one namespace per page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = {
    "index.md": (None, True),
    "integrations/langchain.md": ("langchain_core", False),
    "integrations/dspy.md": ("dspy", True),
}


def code_blocks(page: Path) -> list:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize(
    "page",
    [pytest.param(name, marks=[pytest.mark.slow] if slow else []) for name, (_, slow) in PAGES.items()],
)
def test_page_code_runs(page, tmp_path, monkeypatch):
    needs, _ = PAGES[page]
    if needs:
        pytest.importorskip(needs)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    blocks = code_blocks(DOCS / page)
    assert blocks, f"{page} has no python blocks"
    namespace: dict = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page}[block {i}]", "exec"), namespace)  # noqa: S102 - our own documentation

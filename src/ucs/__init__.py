"""ucs — Unseen Coverage Selection for in-context demonstration selection.

The public API is re-exported here; submodules hold the implementations. :class:`SelectorIndex` (the
persisted demonstration index, :mod:`ucs.index`) is imported on first access, so ``import ucs`` stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["SelectorIndex", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "SelectorIndex":
        from ucs.index import SelectorIndex

        return SelectorIndex
    raise AttributeError(f"module 'ucs' has no attribute {name!r}")

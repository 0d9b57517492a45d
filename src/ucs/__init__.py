"""ucs — Unseen Coverage Selection for in-context demonstration selection.

The public API is re-exported here; submodules hold the implementations.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

"""A native engine that crashes, for tests of crash isolation: ``python -m ucs.testing.crashing_engine
[ARGS]``.

Reads address 0 through :mod:`ctypes`, so the process dies with a real SIGSEGV, as a llama.cpp build for the
wrong CPU does inside ``decode``. Set ``UCS_LLAMA_PROBE_CHILD=ucs.testing.crashing_engine`` to make the engine
probe (:mod:`ucs.models.probe`) see a crashing engine; call :func:`crash` inside a test to crash its process.
"""

from __future__ import annotations

import ctypes
import faulthandler

__all__ = ["crash"]


def crash() -> None:
    """Die with SIGSEGV (no Python exception, no clean-up: what a native crash looks like)."""
    faulthandler.disable()
    ctypes.string_at(0)


if __name__ == "__main__":  # pragma: no cover - run as a child process
    crash()

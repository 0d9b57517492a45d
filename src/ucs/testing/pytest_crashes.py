"""A pytest plug-in: a test whose process crashed is one failed test that says what to do, not a dead run.

The suite runs its tests in a pytest-xdist worker process (``-n 1`` in ``pyproject.toml``); when a native
library kills that worker (a llama.cpp build for another CPU dies with SIGSEGV inside ``decode``), xdist
reports the test as failed, starts a new worker and goes on. This plug-in adds to that report which native
engine is the usual suspect and the command that rebuilds it. Loaded with ``-p ucs.testing.pytest_crashes``;
needs the ``dev`` extra (pytest, pytest-xdist).
"""

from __future__ import annotations

import pytest

from ucs.utils.optional import LLAMA_REBUILD

__all__ = ["CRASH_HINT"]

CRASH_HINT = (
    "the test process crashed (a native library: SIGSEGV, SIGILL or SIGABRT). If the test uses the "
    f"llama.cpp engine (llama-cpp-python), rebuild it for this CPU with {LLAMA_REBUILD}; "
    "`python -m ucs.models.probe --refresh` checks the engine in a child process."
)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Append :data:`CRASH_HINT` to the report of a test during which its worker process died."""
    if report.failed and isinstance(report.longrepr, str) and "crashed while running" in report.longrepr:
        report.longrepr = f"{report.longrepr}\n{CRASH_HINT}"

"""A test that crashes its process (a native SIGSEGV) is one failed test that names the engine and the rebuild
command; the rest of the run still runs and reports (pytest-xdist worker + ucs.testing.pytest_crashes)."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_segfaulting_test_fails_alone_and_the_run_goes_on(tmp_path):
    (tmp_path / "test_native.py").write_text(
        "from ucs.testing.crashing_engine import crash\n\n"
        "def test_engine_crashes():\n    crash()\n\n"
        "def test_after_the_crash():\n    assert 1 + 1 == 2\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "xdist",
            "-n",
            "1",
            "-p",
            "ucs.testing.pytest_crashes",
            "-p",
            "no:cacheprovider",
            "-q",
            "test_native.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "crashed while running 'test_native.py::test_engine_crashes'" in out
    assert "bash scripts/install.sh --rebuild-llama" in out

"""The code has no syntax errors, undefined names, unused imports or unused variables, and no line longer than
110 columns (ruff's E9, F and E501 rules, configured in pyproject.toml). ruff comes with the dev extra; CI
must have it."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_no_errors():
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is missing in CI: the dev extra installs it (pip install -e '.[dev]')")
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "benchmarks", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr

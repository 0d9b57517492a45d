"""``ucs evaluate --dry-run``: the cost of an evaluation before it runs, measured on this machine."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from ucs.cli import app


def test_counts_every_prompt_and_mdl_scoring_and_writes_nothing(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--dataset",
            "sample",
            "--model",
            "dummy",
            "--selectors",
            "topk,mdl,mdl+ucs",
            "--runs",
            "2",
            "--limit",
            "7",
            "--mode",
            "likelihood",
            "--out",
            str(tmp_path / "o"),
            "--dry-run",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "7 queries × 3 methods × 2 run(s) = 42 ICL prompts" in r.output
    assert "+ 70 MDL subset scorings" in r.output  # 7 queries × 2 runs × 5 subsets, shared by MDL and MDL+UCS
    assert "measured here on 2 prompts" in r.output and not (tmp_path / "o").exists()


@pytest.mark.slow  # loads SmolLM2
def test_a_real_model_is_timed(shared_data, tmp_path):
    pytest.importorskip("llama_cpp")
    r = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--preset",
            "cpu",
            "--dataset",
            "banking77",
            "--data-dir",
            str(shared_data),
            "--model",
            "smollm2",
            "--engine",
            "llama",
            "--selectors",
            "topk",
            "--runs",
            "1",
            "--limit",
            "10",
            "--out",
            str(tmp_path / "o"),
            "--dry-run",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "10 queries × 1 methods × 1 run(s) = 10 ICL prompts (77 labels scored in each" in r.output
    seconds = float(re.search(r"([0-9.]+) s per model call", r.output).group(1))
    assert seconds > 0.0

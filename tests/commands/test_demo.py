import re

import pytest
from typer.testing import CliRunner

from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})

pytest.importorskip("ucs.clustering")
pytest.importorskip("ucs.selectors")


def _check_demo_output(out: str, methods):
    assert "Now answer the following question." in out  # at least one full prompt
    assert out.count("Example:\nText:") >= 1
    assert "unique clusters" in out and "mean cluster size" in out and "Φ" in out
    relevance = out.split("relevance of the chosen prompts")[1]
    for m in methods:
        assert re.search(rf"\| {re.escape(m)} \| \d+\.\d ± \d+\.\d \|", out), m  # its accuracy row
        assert f"[{m}] demonstrations for query 0" in out
        assert re.search(rf"\| {re.escape(m)} \| \d+\.\d \| \[", relevance), m  # its same-label share


def test_demo_with_the_dummy_backbone(tmp_path):
    res = runner.invoke(
        app,
        [
            "demo",
            "--backbone",
            "dummy",
            "--queries",
            "4",
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 0, res.output
    _check_demo_output(res.output, ["dpp", "dpp+ucs", "votek", "votek+ucs"])
    assert (tmp_path / "o" / "results.md").is_file()


def test_demo_rejects_bad_options(tmp_path):
    res = runner.invoke(
        app, ["demo", "--backbone", "dummy", "--selectors", "kmeans", "--cache-dir", str(tmp_path)]
    )
    assert res.exit_code == 2


@pytest.mark.slow
def test_demo_with_the_real_backbone(tmp_path):
    """The real SmolLM2 backbone end to end on the shipped sample (a handful of queries)."""
    pytest.importorskip("llama_cpp")
    res = runner.invoke(app, ["demo", "--queries", "4", "--budget", "4", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    _check_demo_output(res.output, ["dpp", "dpp+ucs", "votek", "votek+ucs"])
    assert "SmolLM2" in res.output or "smollm2" in res.output.lower()

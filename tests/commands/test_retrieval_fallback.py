"""A first-time user without sentence-transformers (the README's main-job install) can run ``ucs evaluate``:
the preset's retrieval embedder falls back to the backbone's ℓ2-normalised embeddings, saying so in one
line."""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

from ucs.cli import app

ARGS = [
    "evaluate",
    "--model",
    "dummy",
    "--dataset",
    "sample",
    "--test-size",
    "4",
    "--runs",
    "1",
    "--selectors",
    "random,topk",
    "--mode",
    "likelihood",
    "--no-progress",
]


def test_missing_sentence_transformers_falls_back_to_the_backbone(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed
    res = CliRunner().invoke(app, [*ARGS, "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    notes = [ln for ln in res.output.splitlines() if ln.startswith("note: the retrieval embedder")]
    assert len(notes) == 1 and "pip install -e '.[torch]'" in notes[0]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["key"]["config"]["pipeline"]["retrieval_embedder"] == "backbone"  # recorded as used


def test_an_explicit_retrieval_embedder_is_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    res = CliRunner().invoke(app, [*ARGS, "--retrieval", "all-minilm-l6-v2", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "sentence" in res.output and "pip install -e '.[torch]'" in res.output


def test_installed_sentence_transformers_keeps_the_preset(tmp_path):
    import importlib.util

    import pytest

    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed")
    from ucs.pipeline import PipelineConfig
    from ucs.pipeline.backbones import retrieval_fallback

    cfg = PipelineConfig.resolve("default")
    assert retrieval_fallback(cfg) == (cfg, None)

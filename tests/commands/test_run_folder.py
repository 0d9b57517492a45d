"""The output folder of ``ucs evaluate``: another configuration is refused naming the field, ``--fresh``
starts over (the old folder moved aside), and a folder another process is writing to is refused naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ucs.cli import app

SRC = Path(__file__).resolve().parents[2] / "src"
ARGS = [
    "evaluate",
    "--model",
    "dummy",
    "--retrieval",
    "backbone",
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


def _evaluate(out, *extra, env=None):
    return CliRunner().invoke(app, [*ARGS, "--out", str(out), *extra], env=env)


def test_other_configuration_is_refused_then_fresh_starts_over(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert _evaluate(out).exit_code == 0
    res = _evaluate(out, "--budget", "3")
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "Error: --out:" in res.output and "config.pipeline.budget: 10 → 3" in res.output
    assert "--fresh" in res.output
    res = _evaluate(out, "--budget", "3", "--fresh")
    assert res.exit_code == 0, res.output
    (old,) = list(tmp_path.glob("out.old-*"))
    assert (old / "records.jsonl").is_file() and (out / "records.jsonl").is_file()
    assert '"budget": 3' in (out / "pipeline" / "config.json").read_text()


def test_a_folder_in_use_is_refused_naming_the_process(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "busy"
    code = (
        f"import sys, time; sys.path.insert(0, {str(SRC)!r}); from ucs.utils.lock import folder_lock\n"
        f"with folder_lock({str(out)!r}, command='ucs evaluate ...'):\n"
        "    print('held', flush=True); sys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stdin=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"held"
        res = _evaluate(out)
        assert res.exit_code == 2 and "Traceback" not in res.output
        assert f"in use by process {proc.pid}" in res.output and "--wait" in res.output
        assert not (out / "records.jsonl").exists()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert _evaluate(out).exit_code == 0

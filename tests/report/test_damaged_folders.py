"""``ucs report`` on folders it did not expect: each case is one line naming the file and field (exit 2), or a
correct page; never a traceback."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})


def _edit_json(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _first_line(path, change):
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    change(row)
    path.write_text("\n".join([json.dumps(row)] + lines[1:]) + "\n", encoding="utf-8")


CASES = {
    "manifest-methods-not-a-list": (
        lambda p: _edit_json(p / "manifest.json", lambda d: d.update(methods=7)),
        "manifest.json: field 'methods'",
    ),
    "manifest-seeds-a-string": (
        lambda p: _edit_json(p / "manifest.json", lambda d: d.update(seeds="42")),
        "manifest.json: field 'seeds'",
    ),
    "results-methods-a-list": (
        lambda p: _edit_json(p / "results.json", lambda d: d.update(methods=[])),
        "results.json: field 'methods'",
    ),
    "results-truncated": (lambda p: _truncate(p / "results.json"), "results.json is not readable JSON"),
    "manifest-a-list": (lambda p: (p / "manifest.json").write_text("[1, 2]"), "manifest.json holds a list"),
    "projection-truncated": (
        lambda p: _truncate(p / "pipeline" / "projection.npy"),
        "projection.npy is not a readable",
    ),
    "projection-wrong-shape": (
        lambda p: np.save(p / "pipeline" / "projection.npy", np.zeros((3, 5))),
        "projection.npy has shape (3, 5)",
    ),
    "pool-line-without-text": (
        lambda p: _first_line(p / "pipeline" / "pool.jsonl", lambda r: r.pop("text")),
        "pool.jsonl, line 1: expected an object with the field(s) ['text', 'label']",
    ),
    "coverage-a-list": (
        lambda p: _edit_json(p / "coverage.json", lambda d: d.update(coverage=[1])),
        "coverage.json: field 'coverage'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_or_unexpected_file_is_one_line_naming_it(run_dir, tmp_path, case):
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    damage, expected = CASES[case]
    damage(folder)
    res = runner.invoke(app, ["report", str(folder), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2, res.output
    assert expected in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output and not (tmp_path / "r.html").exists()


def test_an_old_record_whose_selection_is_out_of_range_still_renders(run_dir, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    records = folder / "records.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row.pop("_check", None)  # an old-format record (written before records carried a checksum)
    row["selected"] = [10**6, -3] + list(row["selected"])[2:]
    records.write_text("\n".join([json.dumps(row)] + lines[1:]) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["report", str(folder), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "not in this pool" in (tmp_path / "r.html").read_text(encoding="utf-8")

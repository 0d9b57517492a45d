"""Fingerprints in run manifests: equal for equal runs, different when a selection or an answer differs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import make_lm, two_methods
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation import evaluate, read_records
from ucs.evaluation.compare import main
from ucs.evaluation.fingerprints import (
    compare_fingerprints,
    compare_records,
    load_fingerprints,
    record_fingerprints,
)

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two folders of the same run, made by separate evaluate calls."""
    sample = load_dataset("sample")
    out = []
    for name in ("a", "b"):
        folder = tmp_path_factory.mktemp(name)
        evaluate(
            sample,
            make_lm(),
            ["oracle", "random"],
            two_methods(sample),
            folder,
            mode="greedy",
            progress=False,
            protocol=TestProtocol(test_size=12),
        )
        out.append(folder)
    return out


def test_manifest_records_fingerprints_of_every_method(runs):
    manifest = json.loads((runs[0] / "manifest.json").read_text())
    fp = manifest["fingerprints"]
    assert set(fp) == {"oracle", "random"}
    assert fp["oracle"]["n"] == 3 * 12 and len(fp["oracle"]["selections"]) == 64
    assert fp == record_fingerprints(read_records(runs[0] / "records.jsonl"))


def test_equal_runs_have_equal_fingerprints(runs):
    a, b = (load_fingerprints(r / "manifest.json")[""] for r in runs)
    assert all(all(v for v in row.values()) for row in compare_fingerprints(a, b).values())
    assert main([str(runs[0]), str(runs[1] / "manifest.json")]) == 0


def test_two_folders_are_compared_record_by_record(runs, capsys):
    assert main([str(runs[0]), str(runs[1])]) == 0
    assert (
        "random: 36 records in both; 0 with other demonstrations, 0 with another answer"
        in capsys.readouterr().out
    )


def test_a_changed_answer_or_selection_is_found(runs):
    recs = read_records(runs[0] / "records.jsonl")
    base = record_fingerprints(recs)
    changed = [dict(r) for r in recs]
    i = next(i for i, r in enumerate(changed) if r["method"] == "random")
    changed[i]["parsed_id"] = (changed[i]["parsed_id"] or 0) + 1
    j = next(i for i, r in enumerate(changed) if r["method"] == "oracle")
    changed[j]["selected"] = list(reversed(changed[j]["selected"]))
    cmp = compare_fingerprints(base, record_fingerprints(changed))
    assert cmp["random"] == {"n": True, "selections": True, "answers": False}
    assert cmp["oracle"] == {"n": True, "selections": False, "answers": True}
    counts = compare_records(recs, changed)
    assert counts["random"]["answers_differ"] == 1 and counts["random"]["selections_differ"] == 0
    assert counts["oracle"]["selections_differ"] == 1 and counts["oracle"]["common"] == 36


def test_record_order_does_not_matter(runs):
    recs = read_records(runs[0] / "records.jsonl")
    assert record_fingerprints(recs) == record_fingerprints(list(reversed(recs)))


def test_command_line_reports_difference_and_usage_errors(runs, tmp_path):
    manifest = json.loads((runs[1] / "manifest.json").read_text())
    manifest["fingerprints"]["random"]["answers"] = "0" * 64
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ucs.evaluation.compare",
            str(runs[0] / "manifest.json"),
            str(tmp_path / "manifest.json"),
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC)},
    )
    assert proc.returncode == 1 and "random: n equal, selections equal, answers DIFFER" in proc.stdout
    old = tmp_path / "old"
    old.mkdir()
    del manifest["fingerprints"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert main([str(runs[0]), str(old)]) == 2
    assert main([str(runs[0])]) == 2


def test_page_manifests_are_compared_cell_by_cell(runs, tmp_path):
    fp = json.loads((runs[0] / "manifest.json").read_text())
    page = {"cells": [{"cell": "sample__dummy__default", "runner_manifest": fp}]}
    (tmp_path / "page.manifest.json").write_text(json.dumps(page))
    assert set(load_fingerprints(tmp_path / "page.manifest.json")) == {"sample__dummy__default"}
    assert main([str(tmp_path / "page.manifest.json"), str(tmp_path / "page.manifest.json")]) == 0

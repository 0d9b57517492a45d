"""The command line around the report: ``ucs report``, what ``ucs evaluate`` ends with, ``ucs demo``'s report,
the kept timings and the help texts. Real pipeline, dummy backbone."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
SMALL = [
    "--dataset",
    "sample",
    "--model",
    "dummy",
    "--mode",
    "likelihood",
    "--test-size",
    "5",
    "--runs",
    "2",
    "--budget",
    "3",
    "--retrieval",
    "backbone",
    "--dbscan-q",
    "0.1",
    "--no-progress",
]


def test_report_command(run_dir, tmp_path):
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"report: {out}" in res.output and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("make_bad", [lambda p: p / "missing", lambda p: p])
def test_report_command_rejects_what_is_not_a_run_folder(tmp_path, make_bad):
    res = runner.invoke(app, ["report", str(make_bad(tmp_path))])
    assert res.exit_code == 2 and "RUN_DIR" in res.output and "Traceback" not in res.output


def test_evaluate_shows_its_work_and_keeps_every_calls_timings(tmp_path):
    out = tmp_path / "out"
    args = ["evaluate", *SMALL, "--out", str(out), "--cache-dir", str(tmp_path / "c")]
    res = runner.invoke(app, [*args, "--selectors", "dpp,dpp+ucs", "--limit", "2"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*args, "--selectors", "dpp,dpp+ucs,votek"])
    assert res.exit_code == 0, res.output
    o = res.output
    assert re.search(r"stage timings \(s\), this call: .*evaluate \d+\.\d\d", o)
    assert "2 call(s) recorded in pipeline/timings.jsonl" in o
    assert re.search(r"cluster health \(seed 42\): \d+ clusters over 150 items; largest \d+ ", o)
    assert "label AMI" in o and "| votek |" in o
    assert f"report: {out / 'report.html'}" in o and (out / "report.html").is_file()
    for m in ("dpp", "dpp+ucs", "votek"):  # one query's demonstrations per method, with texts and clusters
        block = o.split(f"[{m}] demonstrations for query 0", 1)[1]
        assert re.search(r"\n  - '.+' → \w+  \[cluster \d+, size \d+\]", block)
    lines = [json.loads(x) for x in (out / "pipeline" / "timings.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and all("evaluate" in x["timings"] for x in lines)
    assert "votek" not in json.dumps(lines[0]) and "select:votek" in lines[1]["timings"]


def test_evaluate_progress_lines_in_a_log(tmp_path):
    """Output that is not a terminal gets plain progress lines for every long stage."""
    args = [
        "evaluate",
        *SMALL[:-1],
        "--selectors",
        "dpp,mdl",
        "--out",
        str(tmp_path / "o"),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    for stage in (
        "embedding 150 texts",
        "clustering 150 pool items (seed 42",
        "MDL scoring mdl (seed 42)",
        "evaluating sample",
    ):
        assert re.search(rf"\[ucs\] {re.escape(stage)}.*: started", res.output), stage
        assert re.search(rf"\[ucs\] {re.escape(stage)}.*done in \d+s", res.output), stage


def test_demo_writes_a_report(tmp_path):
    res = runner.invoke(
        app,
        [
            "demo",
            "--backbone",
            "dummy",
            "--queries",
            "3",
            "--selectors",
            "dpp,dpp+ucs",
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (
        f"report: {tmp_path / 'o' / 'report.html'}" in res.output
        and (tmp_path / "o" / "report.html").is_file()
    )


@pytest.mark.parametrize("command", ["demo", "evaluate"])
def test_dataset_help_names_tables_and_their_columns(command):
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())  # rich's boxes and wrapping removed
    assert "Registry name" in text and ".csv/.tsv/.jsonl table" in text and "'text' and 'label'" in text


def test_reproduce_writes_a_report_per_evaluation_folder(tmp_path):
    tiny = [
        x
        for kv in (
            "clusterer.pca_dim=16",
            "clusterer.n_atoms=8",
            "clusterer.dbscan_k=5",
            "clusterer.dbscan_q=0.1",
            "retrieval_embedder=backbone",
            "budget=3",
            *(f"selector.params.{b}.candidate_num=20" for b in ("topk", "labelaware", "dpp", "mdl")),
        )
        for x in ("--set", kv)
    ]
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--only",
            "ablation_rarity",
            "--preset",
            "cpu",
            "--datasets",
            "sample",
            "--backbones",
            "dummy",
            "--runs",
            "1",
            "--test-size",
            "4",
            "--work-dir",
            str(tmp_path / "w"),
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
            *tiny,
        ],
    )
    assert res.exit_code == 0, res.output
    reports = sorted((tmp_path / "w" / "evals").glob("*/report.html"))
    assert reports and all(f"report: {p}" in res.output for p in reports)


def test_demo_without_a_folder_keeps_its_report(tmp_path):
    from pathlib import Path

    res = runner.invoke(
        app,
        [
            "demo",
            "--backbone",
            "dummy",
            "--queries",
            "2",
            "--selectors",
            "dpp",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    path = Path(re.search(r"report: (\S+ucs-demo-report-\S+\.html)", res.output).group(1))
    try:
        assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # the run folder itself is gone
    finally:
        path.unlink()

"""RunFolder: the names of a run folder's files, its lock, and its verified readers, on folders the pipeline
wrote and on folders laid out by hand as earlier versions wrote them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ucs.evaluation.run_folder import RunFolder
from ucs.utils.lock import read_holder

SRC = Path(__file__).resolve().parents[2] / "src"
METHODS = ("random", "dpp+ucs")


def test_the_names_earlier_folders_use(tmp_path):
    f = RunFolder(tmp_path / "run")
    assert (
        f.records == tmp_path / "run" / "records.jsonl" and f.manifest == tmp_path / "run" / "manifest.json"
    )
    assert f.results.name == "results.json" and f.results_markdown.name == "results.md"
    assert (f.coverage.name, f.coverage_markdown.name) == ("coverage.json", "coverage.md")
    d = tmp_path / "run" / "pipeline"
    assert (f.config, f.pool, f.queries, f.clusters, f.projection, f.timings, f.legacy_timings) == (
        d / "config.json",
        d / "pool.jsonl",
        d / "queries.jsonl",
        d / "clusters.json",
        d / "projection.npy",
        d / "timings.jsonl",
        d / "timings.json",
    )
    assert f.cluster_file(42, 0.1) == d / "clusters" / "seed42_q0.1.npy"
    assert f.coverage_file("dpp+ucs", 42, 8) == d / "coverage" / "dpp_plus_ucs__seed42__8q.json"
    assert f.selection_record("dpp+ucs", 42, 8) == d / "selections" / "dpp_plus_ucs__seed42__8q.json"
    sel = f.runner_selection("dpp+ucs", 42, ["a", "b"])
    assert sel.parent == tmp_path / "run" / "selections" and sel.name.startswith("dpp_ucs__seed42__2q_")
    assert f.lock_file.name == ".ucs.lock" and not (tmp_path / "run").exists()  # naming creates nothing
    assert RunFolder(str(tmp_path / "run")) == f and os.fspath(f) == str(f.path)


def test_the_old_module_names_are_the_run_folders():
    from ucs.evaluation import file_names, manifest, runner

    assert file_names.RECORDS == RunFolder.RECORDS and manifest.MANIFEST == RunFolder.MANIFEST
    assert manifest.read_manifest is runner.read_manifest
    assert file_names.method_file_stem("dpp+ucs") == "dpp_plus_ucs"


def test_the_lock_refuses_a_second_process_and_names_the_holder(tmp_path):
    folder = RunFolder(tmp_path / "run")
    code = (
        f"import sys; sys.path.insert(0, {str(SRC)!r}); from ucs.utils.lock import FolderLockedError\n"
        f"from ucs.evaluation.run_folder import RunFolder\n"
        f"try:\n    RunFolder({str(folder.path)!r}).lock().__enter__()\n"
        f"except FolderLockedError as e:\n    print('refused', e)\n"
    )
    with folder.lock(command="ucs test") as info:
        assert folder.lock_file.is_file() and info["command"] == "ucs test"
        with folder.lock():  # re-entrant within a process
            pass
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
        assert out.startswith("refused") and "ucs test" in out
        assert read_holder(folder.path)["command"] == "ucs test"
    assert read_holder(folder.path) == {}  # released: the lock file is emptied on the way out
    with folder.lock(wait=False):
        pass


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.write_text('{"key": {"dataset"'), r"manifest\.json is damaged .*--fresh"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00"), r"manifest\.json is damaged"),
        (lambda p: p.write_text("[1, 2]"), r"manifest\.json is not a run manifest.*--fresh"),
        (lambda p: p.write_text('{"key": 3}'), r"manifest\.json is not a run manifest"),
    ],
)
def test_a_damaged_manifest_is_refused_naming_the_file(tmp_path, damage, message):
    folder = RunFolder(tmp_path)
    damage(folder.manifest)
    with pytest.raises(ValueError, match=message):
        folder.read_manifest()


def test_a_folder_without_a_manifest_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no manifest.json"):
        RunFolder(tmp_path).read_manifest()
    assert RunFolder(tmp_path).read_records() == []


def test_a_folder_laid_out_by_an_earlier_version_is_read(tmp_path):
    """Records without checksums and a manifest without fingerprints, spelled as the files were named
    before."""
    rows = [
        {"method": "random", "seed": 42, "query": q, "correct": q % 2 == 0, "selected": [q, q + 1]}
        for q in range(3)
    ]
    (tmp_path / "records.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows) + '{"method": "ran', encoding="utf-8"
    )  # an interrupted last line
    (tmp_path / "manifest.json").write_text(
        json.dumps({"key": {"dataset": {"name": "x"}}, "methods": ["random"], "status": "partial"}),
        encoding="utf-8",
    )
    folder = RunFolder(tmp_path)
    assert folder.read_records() == rows and folder.read_manifest()["status"] == "partial"
    with folder.record_writer() as w:  # the partial line is cut before appending
        w.write([{"method": "random", "seed": 42, "query": 3, "correct": True, "selected": [0, 1]}])
    assert [r["query"] for r in folder.read_records()] == [0, 1, 2, 3]


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory):
    """A run folder written by the pipeline (``ucs demo``'s path, the weight-free backbone, two run seeds)."""
    from ucs.commands.demo import run_demo

    root = tmp_path_factory.mktemp("pipe")
    res = run_demo(
        backbone="dummy",
        selectors=",".join(METHODS),
        queries=5,
        budget=3,
        runs=2,
        out=root / "out",
        cache_dir=root / "cache",
        show_prompts=0,
    )
    return res, RunFolder(root / "out")


def test_a_folder_the_pipeline_wrote_is_read_through_it(pipeline_run):
    res, folder = pipeline_run
    manifest = folder.read_manifest()
    seeds, n_q = manifest["seeds"]["run_seeds"], int(res.evaluation.summary["n_queries_requested"])
    assert manifest["status"] == "complete" and manifest["methods"] == list(METHODS) and len(seeds) == 2
    records = folder.read_records()
    assert len(records) == manifest["n_records"] == len(METHODS) * len(seeds) * n_q
    assert {(r["method"], r["seed"]) for r in records} == {(m, s) for m in METHODS for s in seeds}
    assert res.evaluation.records_path == folder.records and res.evaluation.manifest_path == folder.manifest
    assert json.loads(folder.results.read_text())["methods"].keys() == set(METHODS)
    assert folder.results_markdown.is_file() and folder.coverage_markdown.is_file()
    assert set(json.loads(folder.coverage.read_text())["coverage"]) == set(METHODS)
    assert folder.config.is_file() and len(folder.timings.read_text().splitlines()) == 1
    assert not folder.legacy_timings.exists()
    n_pool = len(folder.pool.read_text().splitlines())
    assert n_pool > 0 and np.load(folder.projection).shape == (n_pool, 2)
    texts = [json.loads(x)["text"] for x in folder.queries.read_text().splitlines()]
    assert len(texts) == n_q
    clusters = json.loads(folder.clusters.read_text())
    q = clusters["default_q"]
    for s in seeds:
        path = folder.cluster_file(s, q)
        assert folder.diagnostics_dir / clusters["files"][str(s)][repr(float(q))] == path
        assert np.load(path).shape == (n_pool,)
        for m in METHODS:
            assert json.loads(folder.coverage_file(m, s, n_q).read_text())["n_queries"] == n_q
            assert folder.selection_records(m, s) == [folder.selection_record(m, s, n_q)]
            assert list(folder.runner_selections(m, s)) == [(n_q, folder.runner_selection(m, s, texts))]
    assert read_holder(folder.path) == {}  # the lock was released after the run

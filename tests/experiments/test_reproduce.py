"""Every registered experiment end to end on the shipped sample dataset with weight-free backbones.

The clusterer, selectors, estimators and the runner are the real ones; only the models are doubles."""

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("ucs.clustering")
pytest.importorskip("ucs.selectors")

from ucs.experiments.cells import Models  # noqa: E402
from ucs.experiments.registry import experiment_names, get_experiment  # noqa: E402
from ucs.experiments.reproduce import ReproduceOptions, describe_cells, plan, plan_totals, reproduce  # noqa: E402
from ucs.pipeline import load_backbone_for  # noqa: E402

TINY = {
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1},
    "selector.params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
    "retrieval_embedder": "backbone",
    "budget": 3,
}


def options(tmp, **kw):
    base = dict(
        preset="cpu",
        datasets=["sample"],
        backbones=["dummy", "dummy-1"],
        test_size=4,
        runs=2,
        settings=TINY,
        work_dir=str(tmp / "work"),
        results_dir=str(tmp / "results"),
        cache_dir=str(tmp / "cache"),
    )
    return ReproduceOptions(**{**base, **kw})


class Counting:
    """A factory that remembers the backbones it built, to count their model calls."""

    def __init__(self):
        self.built = []

    def __call__(self, cfg):
        bb = load_backbone_for(cfg)
        self.built.append(bb)
        return bb

    def calls(self):
        return sum(b._emb.n_calls_ + b._lm.n_score_calls_ + b._lm.n_generate_calls_ for b in self.built)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("repro")
    runs = reproduce(None, options(tmp), models=Models(Counting()))
    return tmp, runs


def test_every_experiment_writes_markdown_figure_and_manifest(first_run):
    tmp, runs = first_run
    assert [r.experiment.name for r in runs] == experiment_names()
    res = tmp / "results"
    for r in runs:
        e = r.experiment
        md = (res / f"{e.name}.md").read_text()
        assert md.startswith(f"# {e.title}") and e.paper_ref in md
        assert (res / f"{e.name}.png").is_file() == ("png" in e.outputs)
        man = json.loads((res / f"{e.name}.manifest.json").read_text())
        assert man["experiment"]["name"] == e.name and man["preset"] == "cpu" and "numpy" in man["versions"]
        assert len(man["cells"]) == len(r.cells) > 0
        for cell in man["cells"]:
            assert cell["data"]["fingerprint"] and cell["config"]["dataset"] == "sample"
            if e.kind == "accuracy":
                runner = cell["runner_manifest"]
                assert runner["status"] == "complete" and runner["platform"]["cpu_count"] >= 1
                assert set(runner["fingerprints"]) >= set(cell["methods"])  # a folder may serve several cells
        if e.kind == "accuracy":
            for c, out in zip(r.cells, r.results):
                assert set(out["methods"]) == set(c.methods)
                assert all(m["n_queries"] == 4 and len(m["runs"]) == 2 for m in out["methods"].values())
    assert (res / "cluster_sizes.png").read_bytes()[:4] == b"\x89PNG"


def test_tables_hold_every_cell(first_run):
    tmp, runs = first_run
    md = (tmp / "results" / "estimator_study.md").read_text()
    for label in ("paper SGT", "OSW binomial", "OSW Poisson", "Efron–Thisted", "K_seen only"):
        assert md.count(label) >= 2, label  # accuracy and coverage tables, per backbone
    assert "| K_seen only (no estimator) | dpp+ucs | " in md and "[" in md  # bootstrap CI in the cells
    budget = (tmp / "results" / "sensitivity_budget.md").read_text()
    assert all(f"| budget {b} | dpp+ucs |" in budget for b in (0, 1, 5, 10, 20))
    joint = (tmp / "results" / "joint_dictionary.md").read_text()
    assert "| joint dictionary | dpp+ucs |" in joint
    audit = (tmp / "results" / "cluster_sizes.md").read_text()
    assert "## Audit: sample × `dummy`" in audit and "purity" in audit
    runtime = (tmp / "results" / "runtime.md").read_text()
    assert "dictionary fit" in runtime and "| sample | dummy | dpp+ucs |" in runtime


def test_cells_of_one_configuration_share_a_runner_folder(first_run):
    tmp, runs = first_run
    by = {r.experiment.name: r for r in runs}
    main = {c.id: res["dir"] for c, res in zip(by["main_table"].cells, by["main_table"].results)}
    cov = by["coverage_exposure"]
    for c, res in zip(cov.cells, cov.results):
        assert res["dir"] == main[c.id]
        assert res["selections_computed"] == 0  # the main table's evaluation left them there
    design = by["ablation_design"]
    full = [res for c, res in zip(design.cells, design.results) if c.variant.name == "full"]
    assert all(r["new_records"] == 0 for r in full)  # the main table answered these prompts already


def test_second_invocation_recomputes_nothing(first_run):
    tmp, _ = first_run
    before = {p: p.stat().st_mtime_ns for p in (tmp / "cache").rglob("*") if p.is_file()}
    counting = Counting()
    again = reproduce(None, options(tmp), models=Models(counting))
    assert not any(r.computed for r in again)
    assert counting.calls() == 0  # no embedding, no scoring
    assert all(r.get("new_records", 0) == 0 for run in again for r in run.results)
    after = {p: p.stat().st_mtime_ns for p in (tmp / "cache").rglob("*") if p.is_file()}
    assert after == before  # no cache entry written again


def test_limit_and_resume_into_the_full_run(tmp_path):
    opts = options(tmp_path, backbones=["dummy"], runs=1)
    first, cov = reproduce(
        ["main_table", "coverage_exposure"], ReproduceOptions(**{**opts.__dict__, "limit": 2})
    )
    assert all(m["n_queries"] == 2 for m in first.results[0]["methods"].values())
    for page in (first, cov):  # an accuracy page and a selections-only page both say they are partial
        assert (
            "2 test queries (the first of 4 drawn once, seed 42: a `--limit` run"
            in page.markdown_path.read_text()
        )
    full, cov = reproduce(["main_table", "coverage_exposure"], opts)
    for page in (full, cov):
        assert "4 test queries (drawn once, seed 42)" in page.markdown_path.read_text()
    assert full.results[0]["new_records"] == 6 * 2  # six methods × the two queries the limited run left out


def test_dry_run_rows_estimate_model_calls(tmp_path):
    rows = describe_cells(["main_table", "cluster_sizes"], options(tmp_path, backbones=["dummy"]))
    main = [r for r in rows if r["experiment"] == "main_table"][0]
    assert (
        main["icl_prompts"] == 6 * 2 * 4 and main["mdl_scorings"] == 2 * 4 * 5
    )  # MDL+UCS reuses MDL's scorings
    assert [r for r in rows if r["experiment"] == "cluster_sizes"][0]["icl_prompts"] == 0
    assert not (tmp_path / "work").exists()  # planning runs nothing


def test_dry_run_totals_count_shared_work_once(tmp_path):
    opts = options(tmp_path, backbones=["dummy"], runs=1, selectors=["mdl", "mdl+ucs", "votek", "votek+ucs"])
    rows = describe_cells(["healthy_ucs"], opts)
    totals = plan_totals(rows)
    # base (mdl, votek), paper (mdl+ucs, votek+ucs), paper_binomial (mdl+ucs), default (mdl+ucs, votek+ucs),
    # default_relevance (mdl+ucs): 8 methods answer 4 queries each; MDL+UCS in every variant reuses the base
    # MDL's subset scores (5 subsets per query)
    assert [len(r["methods"]) for r in rows] == [2, 2, 1, 2, 1]
    assert totals["icl_prompts"] == 8 * 4 and totals["mdl_scorings"] == 4 * 5
    assert totals["embed_passes"] == 1 and totals["embed_texts"] == rows[0]["pool"]
    assert plan_totals(rows + rows) == totals  # the same cells twice cost nothing more
    unknown = [{**rows[0], "queries": None}]
    assert plan_totals(unknown)["icl_prompts"] is None
    assert totals["icl_prompts_left"] == totals["icl_prompts"]  # nothing recorded yet
    reproduce(["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "variants": ["base"]}))  # mdl and votek
    after = describe_cells(["healthy_ucs"], opts)
    assert after[0]["answered"] == {"mdl": 4, "votek": 4}
    assert plan_totals(after)["icl_prompts_left"] == 6 * 4


def test_plan_rejects_bad_settings(tmp_path):
    with pytest.raises(ValueError, match="main_table / default: .*mode"):
        plan(["main_table"], options(tmp_path, mode="telepathy"))
    assert get_experiment("runtime").kind == "runtime"


def test_runtime_times_every_prompt_and_restarts_an_interrupted_method(first_run):
    from ucs.evaluation.records import read_records

    tmp, runs = first_run
    rt = {r.experiment.name: r for r in runs}["runtime"]
    for res in rt.results:
        for m, t in res["online"].items():
            recs = read_records(Path(res["dir"]) / "eval" / m.replace("+", "_plus_") / "records.jsonl")
            assert len(recs) == t["records"]
            # the model answered each distinct prompt of this method once: nothing came from the main
            # table's answers in the shared store or from another method's folder
            assert t["answered"] == len({r["prompt_sha256"] for r in recs})
            assert len(t["load_1min"]) == 2 and all(v is None or v >= 0 for v in t["load_1min"])
    page = rt.markdown_path.read_text()
    assert "| load, start → end |" in page and " → " in page.split("## Online")[1]
    # interrupt dpp+ucs: drop its timing and half of its records; the rerun times it whole
    cell_dir = next(p for p in (tmp / "work" / "runtime").iterdir() if p.is_dir())
    (cell_dir / "online" / "dpp_plus_ucs.json").unlink()
    rec_path = cell_dir / "eval" / "dpp_plus_ucs" / "records.jsonl"
    lines = rec_path.read_text().splitlines(keepends=True)
    rec_path.write_text("".join(lines[: len(lines) // 2]))
    again = reproduce(["runtime"], options(tmp))[0]
    res = next(r for r in again.results if r["dir"] == str(cell_dir))
    assert res["online"]["dpp+ucs"]["records"] == len(lines)


def test_render_only_writes_the_page_of_a_run_under_way_and_computes_nothing(tmp_path):
    opts = options(tmp_path, backbones=["dummy"], runs=1, selectors=["votek", "votek+ucs", "cover"])
    reproduce(
        ["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "variants": ["base"]})
    )  # the base part only
    counting = Counting()
    page = reproduce(
        ["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "render_only": True}), models=Models(counting)
    )[0]
    assert counting.calls() == 0 and not page.computed
    by = {c.variant.name: r for c, r in zip(page.cells, page.results)}
    assert by["base"]["methods"]["votek"]["n_queries"] == 4 and by["base"]["pending"] == []
    assert by["default"]["pending"] == ["votek+ucs"] and by["paper"]["pending"] == ["votek+ucs"]
    fingerprints = by["base"]["runner_manifest"]["fingerprints"]  # of the records the page shows
    assert set(fingerprints) == {"votek", "cover"} and fingerprints["votek"]["n"] == 4
    md = page.markdown_path.read_text()
    assert "**Under way.**" in md and "sample / paper: votek+ucs" in md
    assert "| (b) default | votek+ucs | — |" in md
    assert "| (b) default | votek+ucs | 0 | 0 | 0 | 1 |" in md  # significance summary: not measured yet
    cover = next(line for line in md.splitlines() if line.startswith("| base selector | cover |"))
    assert re.search(r"\([+-]\d+\.\d \[", cover), cover  # its paired Δ against VoteK
    full = reproduce(["healthy_ucs"], opts)[0]  # the same cells: the base part is not evaluated again
    assert {c.variant.name: r["new_records"] for c, r in zip(full.cells, full.results)} == {
        "base": 0,
        "paper": 4,
        "default": 4,
    }
    done = full.markdown_path.read_text()
    assert "Under way" not in done
    assert (
        "Relevance of the same prompts" in done
    )  # the label agreement of the selections, beside their coverage
    share = next(
        line
        for line in done.splitlines()
        if line.startswith("| (b) default | votek+ucs | ") and re.search(r"\| \d+\.\d \(", line)
    )
    assert re.search(r"\([+-]\d+\.\d \[", share), share  # its paired Δ against VoteK's share
    row = next(
        line
        for line in done.splitlines()
        if line.startswith("| (b) default | votek+ucs | ") and line.count("|") == 7
    )
    assert [int(x) for x in row.split("|")[3:6]] != [0, 0, 0] and row.endswith(
        "| 0 |"
    )  # measured on the one dataset
    with pytest.raises(ValueError, match="only accuracy experiments"):
        reproduce(["cluster_sizes"], ReproduceOptions(**{**opts.__dict__, "render_only": True}))


def test_a_part_run_never_replaces_a_fuller_page(tmp_path):
    import shutil

    opts = options(tmp_path, backbones=["dummy"], runs=1, selectors=["votek", "votek+ucs"])
    full = reproduce(["healthy_ucs"], opts)[0]
    page, manifest = full.markdown_path.read_bytes(), full.manifest_path.read_bytes()
    assert full.kept == []
    from ucs.utils.cpu import machine_signature

    assert f"- answers computed on: {machine_signature()} (12)" in page.decode()  # 3 methods × 4 queries
    logged = []
    part = reproduce(
        ["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "variants": ["base"]}), log=logged.append
    )[0]
    assert part.kept == ["sample__dummy__paper/votek+ucs", "sample__dummy__default/votek+ucs"]
    assert any("kept" in line and "--results-dir" in line for line in logged)
    smoke = reproduce(["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "limit": 2}))[0]
    assert len(smoke.kept) == 3  # fewer queries than the page shows
    shutil.rmtree(tmp_path / "work")
    empty = reproduce(["healthy_ucs"], ReproduceOptions(**{**opts.__dict__, "render_only": True}))[0]
    assert len(empty.kept) == 3  # a fresh checkout's render-only run has nothing to show
    assert full.markdown_path.read_bytes() == page and full.manifest_path.read_bytes() == manifest
    elsewhere = reproduce(
        ["healthy_ucs"],
        ReproduceOptions(**{**opts.__dict__, "variants": ["base"], "results_dir": str(tmp_path / "part")}),
    )[0]
    assert elsewhere.kept == [] and elsewhere.markdown_path.is_file()


def test_the_invocation_that_computed_a_cell_stays_on_its_page(tmp_path):
    """Re-running or re-rendering a page keeps, per cell, the command, CPU and timings of the run that did the
    work; a generation page in the paper's mode also reads its outputs with the strict matcher."""
    opts = options(tmp_path, backbones=["dummy"], runs=1, selectors=["dpp", "dpp+ucs"], mode="paper")
    first = reproduce(["main_table"], ReproduceOptions(**{**opts.__dict__, "command": "first"}))[0]
    assert first.results[0]["computed"] and first.results[0]["strict_matcher"]
    assert "matched by the strict matcher" in first.markdown_path.read_text()
    wall = first.results[0]["wall_s"]
    for command, render_only in (("second", False), ("third", True)):
        run = reproduce(
            ["main_table"],
            ReproduceOptions(**{**opts.__dict__, "command": command, "render_only": render_only}),
        )[0]
        entry = json.loads(run.manifest_path.read_text())["cells"][0]
        assert not entry["computed_in_this_invocation"] and entry["computed_by"]["command"] == "first"
        assert entry["computed_by"]["wall_s"] == wall and entry["computed_by"]["timings"]
        assert "matched by the strict matcher" in run.markdown_path.read_text()


def test_earlier_timings_are_dropped_when_the_records_changed():
    from ucs.experiments.provenance import earlier_computation

    old = {
        "command": "c",
        "created_at": "t",
        "platform": {"cpu": "x"},
        "cells": [
            {"cell": "a", "computed_in_this_invocation": True, "runner_manifest": {"fingerprints": {"m": 1}}},
            {"cell": "b", "computed_in_this_invocation": False},
        ],
        "results": [{"wall_s": 5.0, "timings": {"evaluate": 4.0}, "new_records": 3}, {"wall_s": 0.1}],
    }
    assert earlier_computation(old, "a", {"m": 1})["wall_s"] == 5.0
    assert earlier_computation(old, "a", None)["cpu"] == "x"
    assert earlier_computation(old, "a", {"m": 2}) is None  # other records: those timings are not theirs
    assert earlier_computation(old, "b", None) is None  # computed nowhere on record
    assert earlier_computation(None, "a", None) is None and earlier_computation(old, "z", None) is None

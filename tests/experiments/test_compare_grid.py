"""ucs.compare as a search: the grid selector × k × order, raced on validation queries in rounds with early
stopping, the validated cell confirmed on test queries against the reference. Fake predictors and the
hash-seeded embedder double (ucs.testing): these tests check the orchestration, not any accuracy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ucs.experiments.compare_grid import Cell, grid_cells, parse_cell, parse_ks, parse_orders, split_parts
from ucs.testing.doubles import DummyEmbedder

LABELS = ("card", "loan", "fee", "atm")


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))


def _examples(n: int = 120):
    return [
        {"text": f"question {i} about my {LABELS[i % 4]} number {i % 5}", "label": LABELS[i % 4]}
        for i in range(n)
    ]


def _by_k(text, demos):
    """Right exactly when it sees 4 demonstrations: the k = 4 cells win clearly, every other cell scores 0."""
    return "card" if len(demos) != 4 else text.split(" about my ")[1].split(" ")[0]


def _run(tmp_path, name="o", **kw):
    from ucs import compare

    args = dict(
        selectors=["topk"],
        k=[2, 4, 6],
        orders=["selected"],
        n_queries=80,
        round_size=10,
        embedder=DummyEmbedder(dim=16),
        out=tmp_path / name,
    )
    args.update(kw)
    predictor = args.pop("predictor", _by_k)
    return compare(_examples(), predictor, **args)


def test_the_grid_spells_its_cells_and_parses_its_options():
    assert parse_ks("4,8,16") == [4, 8, 16] and parse_ks(8) == [8]
    assert parse_orders("selected,vote_last") == ["selected", "vote_last"]
    assert parse_cell("TopK:8:selected") == Cell("topk", 8, "selected")
    for bad in ("0", "a", "4,-1"):
        with pytest.raises(ValueError, match="k must"):
            parse_ks(bad)
    with pytest.raises(ValueError, match="unknown order 'nosuch'"):
        parse_orders("nosuch")
    with pytest.raises(ValueError, match="selector:k:order"):
        parse_cell("topk")
    cells = grid_cells(["topk", "random"], [4, 8], ["selected", "vote_last"], Cell("topk", 8, "selected"))
    # the reference first, once; random (query-independent) one cell per k, in order "selected"
    assert [c.id for c in cells] == [
        "topk:8:selected",
        "topk:4:selected",
        "topk:4:vote_last",
        "topk:8:vote_last",
        "random:4:selected",
        "random:8:selected",
    ]


def test_the_split_is_disjoint_seeded_and_the_same_in_another_process():
    val, test = split_parts(20, 0.5, seed=3)
    assert len(val) == len(test) == 10 and not set(val) & set(test) and set(val) | set(test) == set(range(20))
    assert split_parts(20, 0.5, seed=3) == (val, test) and split_parts(20, 0.5, seed=4) != (val, test)
    code = "from ucs.experiments.compare_grid import split_parts; print(split_parts(20, 0.5, seed=3))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert other.strip() == str((val, test))
    for share in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="test_share"):
            split_parts(20, share, 0)


def test_early_stopping_decides_early_and_recommends_what_the_full_grid_recommends(tmp_path):
    early = _run(tmp_path, "early")
    full = _run(tmp_path, "full", early_stop=False)
    race, whole = early.info["race"], full.info["race"]
    assert (
        race["stopped"] == "decided"
        and race["rounds"] < race["planned_rounds"]
        and race["asked"] < race["full"]
    )
    assert whole["stopped"] == "validation used up" and whole["asked"] == whole["full"] == 3 * 40
    assert early.info["validated"]["k"] == 4 and early.info["validated"] == full.info["validated"]
    assert early.recommended_cell == full.recommended_cell == early.info["validated"]["cell"]
    rows = {r["cell"]: r for r in early.rows}
    assert (
        rows["topk:2:selected"]["delta"] is None
    )  # the reference k is the grid's first k when 8 is not in it
    assert rows["topk:6:selected"]["left_round"] is not None and rows["topk:4:selected"]["delta"] > 0
    saved = json.loads((tmp_path / "early" / "compare.json").read_text())
    assert saved["race"]["left"] and saved["recommended"]["cell"] == early.recommended_cell
    assert "left at round" in (tmp_path / "early" / "compare.md").read_text()


def test_the_reference_stays_unless_the_test_interval_lies_above_zero(tmp_path):
    from ucs import SelectorIndex

    # the reference is topk:2:selected (it scores 0); the k=4 cell wins on validation AND test
    res = _run(tmp_path, reference="topk:2:selected", orders=["similar_last"])
    test = {r["role"]: r for r in res.test_rows}
    assert test["validated"]["delta_ci"][0] > 0 and res.recommended_cell == test["validated"]["cell"]
    index = SelectorIndex.load(tmp_path / "o" / "index", embedder=DummyEmbedder(dim=16))
    assert index.method_ == res.recommended and index.order == res.info["recommended"]["order"]
    # every cell equal: the validated cell's interval cannot lie above 0, so the reference is recommended
    flat = _run(tmp_path, "flat", predictor=lambda text, demos: "card")
    assert flat.recommended_cell == "topk:2:selected" and "reference" in flat.info["why"]


def test_a_budget_stops_the_race(tmp_path):
    res = _run(tmp_path, max_queries=15, early_stop=False)
    race = res.info["race"]
    assert race["planned_rounds"] == 2 and race["queries_used"] == 15 and race["stopped"] == "max queries"
    timed = _run(tmp_path, "timed", max_minutes=1e-9, early_stop=False)
    assert timed.info["race"]["rounds"] == 1 and timed.info["race"]["stopped"] == "max minutes"


def test_an_interrupted_round_resumes_and_a_changed_grid_is_refused(tmp_path):
    calls, fail_at = [], [25]

    def answerer(text, demos):  # one predictor (its identity is in the folder's key), interrupted once
        calls.append(text)
        if len(calls) == fail_at[0]:  # in the middle of a round
            raise KeyboardInterrupt
        return _by_k(text, demos)

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, predictor=answerer, early_stop=False)
    n = len((tmp_path / "o" / "records.jsonl").read_text().splitlines())
    assert n == 24
    calls.clear()
    fail_at[0] = -1
    done = _run(tmp_path, predictor=answerer, early_stop=False)
    whole = _run(tmp_path, "whole", early_stop=False)
    assert len(calls) == 3 * 40 + 2 * 40 - 24  # only the answers the interruption did not record

    def strip(rows):  # the same answers; only the measured milliseconds differ
        return [{k: v for k, v in r.items() if not k.endswith("_ms")} for r in rows]

    assert strip(done.rows) == strip(whole.rows) and done.recommended_cell == whole.recommended_cell
    with pytest.raises(ValueError, match="differs in: .*k: \\[2, 4, 6\\] → \\[2, 8\\]"):
        _run(tmp_path, k=[2, 8])
    with pytest.raises(ValueError, match="orders"):
        _run(tmp_path, orders=["vote_last"])

from __future__ import annotations

import pytest

from ucs.evaluation import grid_markdown, summarize, to_markdown


def _rec(method, seed, query, correct, parsed="a"):
    return {"method": method, "seed": seed, "query": query, "correct": correct, "parsed": parsed, "n_dropped": 0}


def test_summarize_per_run_mean_std_and_ci():
    recs = [_rec("m", s, q, (q + s) % 2 == 0) for s in (42, 43) for q in range(10)]
    recs.append(_rec("m", 44, 0, False, parsed=None))
    s = summarize(recs, run_seeds=(42, 43, 44), n_boot=200)
    m = s["methods"]["m"]
    assert m["runs"]["42"]["accuracy"] == 0.5 and m["runs"]["44"]["n"] == 1
    assert m["runs"]["44"]["unmatched"] == 1
    assert m["mean"] == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert m["n_queries"] == 1 and not m["complete"]  # run 44 answered only query 0
    md = to_markdown(s, title="t")
    assert "(incomplete)" in md and md.startswith("## t")


def test_grid_markdown_rows_methods_columns_datasets():
    a = summarize([_rec("x", 1, 0, True), _rec("y", 1, 0, False)], n_boot=10)
    b = summarize([_rec("x", 1, 0, False)], n_boot=10)
    g = grid_markdown({"banking77": a, "hwu64": b})
    assert g.splitlines()[0] == "| method | banking77 | hwu64 |"
    assert "| x | 100.0 ± 0.0 | 0.0 ± 0.0 |" in g and "| y | 0.0 ± 0.0 | — |" in g

from __future__ import annotations

import numpy as np
import pytest

from ucs.evaluation import grid_markdown, summarize, to_markdown


def _rec(method, seed, query, correct, parsed="a"):
    return {
        "method": method,
        "seed": seed,
        "query": query,
        "correct": correct,
        "parsed": parsed,
        "n_dropped": 0,
    }


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


def _sel(method, seed, query, gold, selected):
    return {"method": method, "seed": seed, "query": query, "gold_id": gold, "selected": selected}


def test_label_agreement_is_the_share_of_demonstrations_with_the_query_label():
    from ucs.evaluation.summary import label_agreement

    pool = [0, 0, 1, 1, 2]
    recs = [
        _sel("m", 1, 0, 0, [0, 1, 2, 4]),  # 2 of 4 carry label 0
        _sel("m", 1, 1, 1, [2, 3]),  # 2 of 2
        _sel("m", 2, 0, 0, [4, 2]),  # 0 of 2
        _sel("m", 2, 1, 1, [0, 2, 4, 3]),  # 2 of 4
        _sel("m", 1, 2, None, [0]),  # a generative record: no gold label id, skipped
        _sel("v", 1, 0, 0, []),
    ]  # no demonstrations, skipped
    a = label_agreement(recs, pool, run_seeds=(1, 2), n_boot=50)
    assert set(a) == {"m"}  # query 2 lacks a label, and it is not in every run anyway
    m = a["m"]
    assert m["per_query"]["query"] == [0, 1]
    assert m["per_query"]["share"] == pytest.approx([(0.5 + 0.0) / 2, (1.0 + 0.5) / 2])
    assert m["mean"] == pytest.approx((0.5 + 1.0 + 0.0 + 0.5) / 4) and m["n_queries"] == 2
    assert m["ci"][0] <= m["mean"] <= m["ci"][1]


def test_paired_delta_compares_label_agreement_query_by_query():
    from ucs.evaluation.summary import label_agreement, paired_delta

    pool = [0, 1, 2, 3]
    near = [_sel("near", 1, q, q % 4, [q % 4, q % 4]) for q in range(40)]  # always the query's label
    far = [_sel("far", 1, q, q % 4, [(q + 1) % 4, q % 4]) for q in range(40)]  # half of the time
    a = label_agreement(near + far, pool, n_boot=50)
    d = paired_delta(a["far"], a["near"], field="share")
    assert (
        d["delta"] == pytest.approx(-0.5) and d["ci"] == pytest.approx([-0.5, -0.5]) and d["n_queries"] == 40
    )


def _gen(method, seed, query, raw, gold_id):
    return {
        "method": method,
        "seed": seed,
        "query": query,
        "raw_output": raw,
        "gold_id": gold_id,
        "parsed": None,
        "parsed_id": None,
        "correct": False,
        "n_dropped": 0,
    }


def test_rematch_reads_the_same_outputs_with_another_rule():
    from ucs.evaluation.matching import PaperMatcher, StrictMatcher
    from ucs.evaluation.summary import rematch

    labels = ["Ambiguous", "No", "Yes"]
    recs = [
        _gen("m", 42, 0, " cannot be determined\nQ: next", 1),
        _gen("m", 42, 1, " Yes.\n\nQ: x", 2),
        {"method": "m", "seed": 42, "query": 2, "correct": True, "parsed": "No"},
    ]  # likelihood: no output
    lenient = rematch(recs, labels, PaperMatcher(markers=("A:",)))
    strict = rematch(recs, labels, StrictMatcher(markers=("A:",)))
    assert len(lenient) == len(strict) == 2  # the record without a generated output is left out
    assert [r["correct"] for r in lenient] == [True, True]  # "cannot" holds "no": the paper's rule counts it
    assert [r["correct"] for r in strict] == [False, True] and strict[0]["parsed"] is None
    assert strict[1]["parsed"] == "Yes" and strict[1]["parsed_id"] == 2
    assert recs[0]["correct"] is False  # the input records are not changed


def test_strict_matcher_summary_is_a_summary_of_the_strict_reading():
    from ucs.evaluation.summary import strict_matcher_summary

    labels = ["No", "Yes"]
    recs = [_gen("m", s, q, " No" if q % 2 else " not sure", 0) for s in (42, 43) for q in range(10)]
    s = strict_matcher_summary(recs, labels, "A:", run_seeds=(42, 43), n_boot=100)
    assert s["m"]["mean"] == 0.5 and s["m"]["runs"]["42"]["unmatched"] == 5 and s["m"]["complete"]
    assert (
        strict_matcher_summary([{"method": "m", "seed": 42, "query": 0, "correct": True}], labels, "A:") == {}
    )
    md = to_markdown({"methods": summarize(recs)["methods"], "strict_matcher": s})
    assert "strict matcher" in md and md.count("| m |") == 2


def test_the_no_lm_vote_is_the_majority_label_of_each_prompts_demonstrations():
    from ucs.evaluation.summary import demonstration_vote, majority_label, paired_delta

    assert majority_label([3, 1, 1, 3]) == 3  # a tie goes to the label shown first
    assert majority_label([2, 1, 1]) == 1
    pool = np.array([0, 0, 1, 1, 2])
    recs = [  # two queries (gold 0 and 1), one run; the model is right on both, the vote on the first only
        {"method": "topk", "seed": 42, "query": 0, "gold_id": 0, "selected": [0, 1, 2], "correct": True},
        {"method": "topk", "seed": 42, "query": 1, "gold_id": 1, "selected": [0, 4, 2], "correct": True},
    ]
    vote = demonstration_vote(recs, pool, run_seeds=[42])
    assert vote["topk"]["mean"] == 0.5 and vote["topk"]["per_query"] == {
        "query": [0, 1],
        "accuracy": [1.0, 0.0],
    }
    model = {"per_query": {"query": [0, 1], "accuracy": [1.0, 1.0]}}
    assert paired_delta(model, vote["topk"])["delta"] == 0.5

"""The significance summary of accuracy pages: which side of 0 each paired interval of Δ lies on."""

import pytest

from ucs.evaluation.report import summarize
from ucs.experiments.render import _significance_table, delta_verdict


def _summary(correct_by_query, method="m"):
    records = [{"method": method, "seed": 0, "query": q, "correct": c} for q, c in enumerate(correct_by_query)]
    return summarize(records)["methods"][method]


@pytest.mark.parametrize("ucs, base, verdict", [
    ([True] * 40, [False] * 40, "better"),
    ([False] * 40, [True] * 40, "worse"),
    ([True, False] * 20, [True, False] * 20, "noise"),
    ([True] * 21 + [False] * 19, [True] * 19 + [False] * 21, "noise"),  # two answers apart in 40: inside the interval
])
def test_verdict_follows_the_paired_interval(ucs, base, verdict):
    assert delta_verdict(_summary(ucs), _summary(base)) == verdict


def test_a_missing_side_is_not_measured():
    s = _summary([True] * 10)
    assert delta_verdict(None, s) is None and delta_verdict(s, None) is None and delta_verdict({}, s) is None


def test_table_counts_each_verdict_per_row():
    lines = _significance_table({("(b) default", "mdl+ucs"): ["better", "noise", None],
                                 ("(a) paper", "dpp+ucs"): ["worse", "worse", "better"]}, 3)
    assert "| (b) default | mdl+ucs | 1 | 0 | 1 | 1 |" in lines
    assert "| (a) paper | dpp+ucs | 1 | 2 | 0 | 0 |" in lines

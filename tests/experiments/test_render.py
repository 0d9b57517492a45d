"""The significance summary of accuracy pages: which side of 0 each paired interval of Δ lies on."""

import pytest

from ucs.evaluation.summary import summarize
from ucs.experiments.render import _significance_table, delta_verdict
from ucs.selectors import MethodSpec


def _summary(correct_by_query, method="m"):
    records = [
        {"method": method, "seed": 0, "query": q, "correct": c} for q, c in enumerate(correct_by_query)
    ]
    return summarize(records)["methods"][method]


@pytest.mark.parametrize(
    "ucs, base, verdict",
    [
        ([True] * 40, [False] * 40, "better"),
        ([False] * 40, [True] * 40, "worse"),
        ([True, False] * 20, [True, False] * 20, "noise"),
        (
            [True] * 21 + [False] * 19,
            [True] * 19 + [False] * 21,
            "noise",
        ),  # two answers apart in 40: inside the interval
    ],
)
def test_verdict_follows_the_paired_interval(ucs, base, verdict):
    assert delta_verdict(_summary(ucs), _summary(base)) == verdict


def test_a_missing_side_is_not_measured():
    s = _summary([True] * 10)
    assert delta_verdict(None, s) is None and delta_verdict(s, None) is None and delta_verdict({}, s) is None


def test_table_counts_each_verdict_per_row():
    lines = _significance_table(
        {
            ("(b) default", "mdl+ucs"): ["better", "noise", None],
            ("(a) paper", "dpp+ucs"): ["worse", "worse", "better"],
        },
        3,
    )
    assert "| (b) default | mdl+ucs | 1 | 0 | 1 | 1 |" in lines
    assert "| (a) paper | dpp+ucs | 1 | 2 | 0 | 0 |" in lines


def _cell(ds, methods=("dpp", "dpp+ucs")):
    from types import SimpleNamespace

    return SimpleNamespace(
        dataset=ds,
        backbone="smollm2",
        variant=SimpleNamespace(name="default", label=""),
        methods=list(methods),
        method_specs=tuple(MethodSpec.parse(m) for m in methods),
    )


def _result(dropped_by_method):
    return {
        "methods": {m: {"runs": {"42": {"n": 4, "demos_dropped": d}}} for m, d in dropped_by_method.items()}
    }


def test_dropped_demonstrations_are_shown_only_where_some_were_dropped():
    from types import SimpleNamespace

    from ucs.experiments.render import _dropped_side_table

    variants = [SimpleNamespace(name="default", label="")]
    cells = [_cell("a"), _cell("b")]
    none = _dropped_side_table(
        cells, [_result({"dpp": 0, "dpp+ucs": 0})] * 2, "smollm2", variants, ["a", "b"], True
    )
    assert none == []
    some = _dropped_side_table(
        cells,
        [_result({"dpp": 0, "dpp+ucs": 0}), _result({"dpp": 34, "dpp+ucs": 30})],
        "smollm2",
        variants,
        ["a", "b"],
        True,
    )
    assert "| dpp | 0.0 | 8.5 |" in some and "| dpp+ucs | 0.0 | 7.5 |" in some


def test_the_strict_reading_gets_a_table_with_the_same_deltas():
    from types import SimpleNamespace

    from ucs.experiments.render import _Summaries, _strict_matcher_table

    exp = SimpleNamespace(options={})
    variants = [SimpleNamespace(name="default", label="")]
    cells = [_cell("a")]
    strict = {"dpp": _summary([True] * 40, "dpp"), "dpp+ucs": _summary([False] * 40, "dpp+ucs")}
    results = [{"methods": {}, "strict_matcher": strict}]
    lines = _strict_matcher_table(
        _Summaries(exp, cells, results, variants, key="strict_matcher"),
        cells,
        "smollm2",
        variants,
        ["a"],
        True,
    )
    assert "| dpp | 100.0 ± 0.0 [100.0, 100.0] |" in lines
    assert any(
        line.startswith("| dpp+ucs | 0.0 ± 0.0 [0.0, 0.0] (-100.0 [-100.0, -100.0]*)") for line in lines
    )


def _variant_cell(ds, variant, methods):
    from types import SimpleNamespace

    return SimpleNamespace(
        dataset=ds,
        backbone="smollm2",
        variant=SimpleNamespace(name=variant, label=variant),
        methods=list(methods),
        method_specs=tuple(MethodSpec.parse(m) for m in methods),
    )


def test_one_reference_cell_serves_every_row_and_the_vote_sits_beside_it():
    """delta_vs_cell: each row of every variant is compared with TopK of the reference variant (TopK itself in
    another variant too); the no-LM vote table shows each prompt's vote and the model's gain over it."""
    from types import SimpleNamespace

    from ucs.experiments.render import _accuracy

    exp = SimpleNamespace(options={"delta_vs_cell": {"variant": "topk", "method": "topk"}, "show_vote": True})
    exp.variants = [SimpleNamespace(name=n, label=n) for n in ("topk", "last", "mmr")]
    cells = [
        _variant_cell("a", "topk", ["topk"]),
        _variant_cell("a", "last", ["topk"]),
        _variant_cell("a", "mmr", ["mmr"]),
    ]
    top = _summary([True] * 30 + [False] * 10, "topk")
    results = [
        {"methods": {"topk": top}, "vote": {"topk": _summary([True] * 40, "topk")}},
        {"methods": {"topk": _summary([True] * 30 + [False] * 10, "topk")}, "vote": {}},
        {"methods": {"mmr": _summary([False] * 40, "mmr")}, "vote": {"mmr": _summary([False] * 40, "mmr")}},
    ]
    page = "\n".join(_accuracy(exp, cells, results))
    assert "Δ vs `topk` (topk)" in page
    assert "| topk | topk | 75.0 ± 0.0 [" in page and "| topk | topk | 75.0 ± 0.0 [62.5, 87.5] (" not in page
    assert "| last | topk | 75.0 ± 0.0 [62.5, 87.5] (+0.0 [+0.0, +0.0]) |" in page
    assert "| mmr | mmr | 0.0 ± 0.0 [0.0, 0.0] (-75.0 [" in page
    assert "The no-LM baseline of the same prompts" in page
    assert (
        "| topk | topk | 100.0 (model -25.0 [" in page
        and "| mmr | mmr | 0.0 (model +0.0 [+0.0, +0.0]) |" in page
    )
    assert "| last | topk | — |" in page

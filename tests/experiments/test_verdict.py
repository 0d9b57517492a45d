"""The plain verdict of a page's rows against its reference cell, and the bar a row must clear."""

from types import SimpleNamespace

import pytest

from ucs.evaluation.summary import summarize
from ucs.experiments.verdict import PairVerdict, clears_bar, row_sentence, verdict_section
from ucs.selectors import MethodSpec


def _pairs(spec, backbone="b1"):
    return [PairVerdict(f"d{i}", backbone, acc, vote) for i, (acc, vote) in enumerate(spec)]


@pytest.mark.parametrize(
    "accs, headline",
    [
        (["better", "better"], "better than TopK everywhere measured"),
        (["worse", "worse"], "worse than TopK everywhere measured"),
        (["noise", "noise"], "no difference from TopK beyond noise"),
        (["better", "noise"], "better than TopK on some pairs, never worse"),
        (["worse", "noise"], "worse than TopK on some pairs, never better"),
        (["better", "worse"], "mixed: better than TopK on some pairs, worse on others"),
        ([None, None], "not measured yet"),
    ],
)
def test_the_headline_follows_the_intervals(accs, headline):
    line = row_sentence("row", "m", _pairs([(a, None) for a in accs]), "TopK")
    assert line.startswith(f"- **row** (`m`): {headline}")


def test_the_sentence_names_where_and_counts_the_vote_and_the_pairs_to_measure():
    line = row_sentence(
        "MMR",
        "mmr",
        _pairs([("better", "noise"), ("worse", "better"), ("noise", None), (None, None)]),
        "TopK",
    )
    assert "better on d0 · b1" in line and "worse on d1 · b1" in line and "within noise on 1" in line
    assert "3 pairs measured" in line
    assert "the model above the no-LM vote on 1 of 2" in line
    assert "not measured yet: d3 · b1" in line


def test_the_bar_needs_a_majority_of_datasets_with_every_backbone():
    win, lose = ("better", "better"), ("noise", "better")
    assert clears_bar(_pairs([win, win, lose], "b1") + _pairs([win, lose, win], "b2")) is True
    # a win against TopK that the no-LM vote matches does not count
    assert clears_bar(_pairs([win, ("better", "noise"), lose], "b1")) is False
    # one backbone short of a majority fails it, however good the other is
    assert clears_bar(_pairs([win, win, win], "b1") + _pairs([win, lose, lose], "b2")) is False
    # still reachable while pairs are missing; settled once they cannot give a majority
    assert clears_bar(_pairs([win, (None, None), lose], "b1")) is None
    assert clears_bar(_pairs([lose, (None, None), lose], "b1")) is False
    assert clears_bar([]) is None


def test_the_section_says_plainly_when_no_row_clears_the_bar():
    rows = {
        ("MMR", "mmr"): _pairs([("noise", "worse")] * 3),
        ("BSR", "bsr"): _pairs([("worse", "worse")] * 3),
    }
    text = "\n".join(verdict_section(rows, "TopK"))
    assert "## Verdict per selector" in text and "**not met** by any row" in text
    rows[("last", "topk")] = _pairs([("better", "better")] * 2 + [("noise", "worse")])
    assert "cleared by last." in "\n".join(verdict_section(rows, "TopK"))


def _summary(correct, method):
    records = [{"method": method, "seed": 0, "query": q, "correct": c} for q, c in enumerate(correct)]
    return summarize(records)["methods"][method]


def test_a_page_with_a_reference_cell_ends_with_the_verdicts_from_its_own_intervals():
    """Through the renderer: the vote counts only when the model beats both its own vote and TopK's k-NN
    vote."""
    from ucs.experiments.render import _accuracy

    exp = SimpleNamespace(
        options={
            "delta_vs_cell": {"variant": "topk", "method": "topk"},
            "show_vote": True,
            "verdict": {"reference": "TopK"},
        }
    )
    exp.variants = [SimpleNamespace(name=n, label=n) for n in ("topk", "last")]
    topk = {"methods": ["topk"], "method_specs": (MethodSpec("topk"),)}
    cells = [
        SimpleNamespace(dataset="a", backbone="b", variant=exp.variants[0], **topk),
        SimpleNamespace(dataset="a", backbone="b", variant=exp.variants[1], **topk),
    ]
    half = [True] * 20 + [False] * 20
    results = [
        {"methods": {"topk": _summary(half, "topk")}, "vote": {"topk": _summary([False] * 40, "topk")}},
        {"methods": {"topk": _summary([True] * 40, "topk")}, "vote": {"topk": _summary(half, "topk")}},
    ]
    page = "\n".join(_accuracy(exp, cells, results))
    assert "- **last** (`topk`): better than TopK everywhere measured" in page
    assert "the model above the no-LM vote on 1 of 1" in page and "cleared by last." in page
    results[0]["vote"]["topk"] = _summary([True] * 40, "topk")  # TopK's k-NN vote as good as the model
    page = "\n".join(_accuracy(exp, cells, results))
    assert "the model above the no-LM vote on 0 of 1" in page and "**not met** by any row" in page

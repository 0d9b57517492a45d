from __future__ import annotations

import pytest

from ucs.evaluation import PaperMatcher, StrictMatcher, extract_answer, get_matcher

LABELS = ["card_arrival", "card_linking", "exchange_rate", "pin_blocked"]


def test_extract_answer_after_last_marker_first_line():
    assert extract_answer(" card_arrival\nText: x\nLabel: pin_blocked") == "pin_blocked"
    assert extract_answer("\n\n  exchange_rate  \nmore") == "exchange_rate"
    assert extract_answer("label: pin_blocked") == "pin_blocked"
    assert extract_answer("") == ""


@pytest.mark.parametrize(
    "output, paper, strict",
    [
        (" card_arrival", 0, 0),
        (" Card Arrival.", 0, 0),  # case, '_' <-> space, trailing period: both
        ("The label is exchange_rate", 2, None),  # prefix stripping: paper only
        (" I think it is card linking", 1, None),
        (" card", 0, None),  # answer inside a label: paper substring rule
        (" my pin got blocked", 3, None),  # token overlap >= 50%
        (" the weather is nice", None, None),  # matches nothing: counted wrong
        ("", None, None),
    ],
)
def test_paper_and_strict_matchers(output, paper, strict):
    assert PaperMatcher()(output, LABELS) == paper
    assert StrictMatcher()(output, LABELS) == strict


def test_bbeh_leniency_no_inside_cannot():
    """The paper's substring rule reads "cannot" as the answer "No"; the strict matcher does not."""
    labels = ["Ambiguous", "No", "Yes"]
    out = " I cannot tell from the story."
    assert get_matcher("paper", markers=("A:",))(out, labels) == 1
    assert get_matcher("strict", markers=("A:",))(out, labels) is None
    assert get_matcher("strict", markers=("A:",))(" no", labels) == 1


def test_longest_contained_label_wins():
    labels = ["card", "card_arrival"]
    assert PaperMatcher()(" my card arrival is late", labels) == 1
    with pytest.raises(ValueError, match="matcher must be"):
        get_matcher("fuzzy")
    with pytest.raises(ValueError, match="min_overlap"):
        PaperMatcher(min_overlap=0)


def test_answer_followed_by_empty_turns_is_unmatched():
    """SPEC §5 reads after the *last* marker: an option followed by empty ``A:`` turns leaves no answer.

    The shape of 27 of 240 sampled BBEH Shuffled Objects outputs (docs/evaluation.md, "The last-marker rule").
    """
    options = [f"({c})" for c in "ABCDEFG"]
    out = " (D)\n\nA:\n\nA:\n\nA:\n"
    for name in ("paper", "strict"):
        matcher = get_matcher(name, markers=("A:",))
        assert matcher(out, options) is None
        assert matcher(" (D)\n\nQ: Alice, Bob", options) == 3

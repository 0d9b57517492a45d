from __future__ import annotations

import numpy as np
import pytest

from fakes import RecordingLM
from ucs.evaluation import MODES, PredictionMode, generate_answers, get_mode, likelihood_predict


def test_named_modes_have_the_paper_settings():
    p = get_mode("paper")
    assert (p.kind, p.temperature, p.top_p, p.max_new_tokens, p.matcher) == (
        "generate",
        0.1,
        1.0,
        16,
        "paper",
    )
    assert p.sampled and not get_mode("greedy").sampled
    assert get_mode("greedy-strict").matcher == "strict"
    assert get_mode("likelihood").kind == "likelihood" and get_mode("likelihood").answer_tokens() == 0
    assert get_mode("greedy", matcher="strict").matcher == "strict"
    assert set(MODES) == {"paper", "greedy", "greedy-strict", "likelihood"}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "beam"}, "kind"),
        ({"matcher": "fuzzy"}, "matcher"),
        ({"reduction": "max"}, "reduction"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
    ],
)
def test_mode_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PredictionMode("x", **kwargs)
    with pytest.raises(ValueError, match="mode must be one of"):
        get_mode("beam")


def test_generate_passes_decoding_settings_and_seed_only_when_sampling():
    lm = RecordingLM()
    generate_answers(lm, ["Label: a"], get_mode("paper"), seed=7)
    generate_answers(lm, ["Label: a"], get_mode("greedy"), seed=7)
    assert lm.calls == [("generate", 1, 0.1, 7), ("generate", 1, 0.0, None)]


def test_likelihood_picks_the_best_label_with_margin():
    lm = RecordingLM()
    prompts = ["Example:\nText: x\nLabel: b\n\nText: q\nLabel:", "Text: q\nLabel: c\nLabel:"]
    pred, margin = likelihood_predict(lm, prompts, [" a", " b", " c"])
    assert pred.tolist() == [1, 2] and np.all(margin > 0)
    pred_mean, _ = likelihood_predict(lm, prompts, [" a", " b", " c"], reduction="mean")
    assert pred_mean.tolist() == [1, 2]
    assert lm.calls == [("score", 3)] * 4  # one shared-prefix scoring call per prompt


def test_likelihood_rejects_non_finite_scores():
    class Broken(RecordingLM):
        def score_continuations_detailed(self, prefix, continuations):
            s = super().score_continuations_detailed(prefix, continuations)
            s.logprob[0] = np.nan
            return s

    with pytest.raises(RuntimeError, match="finite"):
        likelihood_predict(Broken(), ["p"], [" a", " b"])

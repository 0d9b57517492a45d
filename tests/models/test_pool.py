"""Worker processes answer exactly what one process answers, and branch and bound finds the scored argmax."""

import numpy as np
import pytest

from tests.models.test_llamacpp import LABELS, PROMPT
from ucs.models.pool import BackbonePool

PROMPTS = [
    PROMPT.replace("where is the card you sent me?", q)
    for q in (
        "where is the card you sent me?",
        "how much is a dollar in euros today?",
        "my top up did not go through",
        "someone took my card",
        "I want to link my card to the app",
        "the card has still not come",
    )
]


def test_bad_workers_and_served_models_are_refused():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        BackbonePool("smollm2", workers=0)
    with pytest.raises(ValueError, match="answers requests in parallel already"):
        BackbonePool("http://127.0.0.1:8080/v1#m", workers=2)


@pytest.mark.slow
def test_two_workers_score_choose_and_generate_like_one_process(smollm2_path):
    from ucs.models import load_backbone

    opts = dict(engine="llama", context_length=512, batch_tokens=256)
    one = load_backbone("smollm2", n_threads=1, **opts)
    with BackbonePool("smollm2", workers=2, **opts) as pool:
        assert pool.identity == one.identity and pool.chooses
        scored = list(pool.score_many(PROMPTS, LABELS))
        chosen = list(pool.choose_many(PROMPTS, LABELS))
        written = pool.generate(PROMPTS[:3], max_new_tokens=6, temperature=0.0, stop=["\n"])
    for p, (s, seconds), ((j, lp), _) in zip(PROMPTS, scored, chosen):
        np.testing.assert_array_equal(s, one.score_continuations(p, LABELS))  # bit for bit
        assert seconds > 0 and j == int(np.argmax(s)) and (j, lp) == one.choose_continuation(p, LABELS)
        assert abs(lp - s[j]) < 0.1  # other batches, other rounding: the same label
    assert written == one.generate(PROMPTS[:3], max_new_tokens=6, temperature=0.0, stop=["\n"])
    one.close()

"""The persistent score store: a damaged or edited line is skipped with a warning and scored again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ucs.lm.cache import CachedScorer
from ucs.testing.doubles import DummyLM
from ucs.utils.integrity import DamagedFileWarning
from ucs.utils.store import signed_line

LABELS = ["card arrival", "card linking", "exchange rate", "top up"]


@pytest.mark.parametrize("damage", ["edited-value", "wrong-length", "flipped-byte", "no-checksum"])
def test_a_damaged_score_line_is_scored_again(tmp_path, damage):
    ident = {"model": "dummy", "seed": 1}
    CachedScorer(DummyLM(seed=1), store=tmp_path, identity=ident).score_continuations_detailed("p", LABELS)
    (path,) = list(tmp_path.rglob("*.jsonl"))
    line = path.read_text(encoding="utf-8")
    entry = {k: v for k, v in json.loads(line).items() if k != "_check"}
    if damage == "edited-value":
        bad = json.dumps(dict(json.loads(line), logprob=[0.0] * len(LABELS))) + "\n"
    elif damage == "wrong-length":
        bad = signed_line(dict(entry, n_tokens=entry["n_tokens"][:-1]))  # checksum fine, schema not
    elif damage == "flipped-byte":
        bad = line.replace('"logprob": [-', '"logprob": [+', 1)
    else:
        bad = json.dumps(entry) + "\n"
    path.write_text(bad, encoding="utf-8")
    lm = DummyLM(seed=1)
    cs = CachedScorer(lm, store=tmp_path, identity=ident)
    with pytest.warns(DamagedFileWarning, match=str(path)):
        got = cs.score_continuations_detailed("p", LABELS)
    assert lm.n_score_calls_ == 1 and cs.misses == 1  # scored again, not read from the damaged line
    ref = DummyLM(seed=1).score_continuations_detailed("p", LABELS)
    assert got.logprob.tobytes() == ref.logprob.tobytes()
    again = CachedScorer(DummyLM(seed=1), store=tmp_path, identity=ident)
    with pytest.warns(
        DamagedFileWarning
    ):  # the damaged line stays in the file (appended to, never rewritten)
        np.testing.assert_array_equal(again.score_continuations_detailed("p", LABELS).logprob, ref.logprob)
    assert again.hits == 1  # the appended line verifies

"""CachedScorer: the wrapped model's scores, computed once per input, shared through a store on disk."""

import json

import numpy as np
import pytest

from ucs.lm.cache import CachedScorer, scoring_key
from ucs.testing.doubles import DummyLM

LABELS = ["card arrival", "card linking", "exchange rate", "top up"]


def test_scores_equal_the_model_bit_for_bit_and_run_once():
    lm = DummyLM(seed=3)
    cs = CachedScorer(lm)
    ref = DummyLM(seed=3).score_continuations_detailed("Text: hello\nLabel:", LABELS)
    for _ in range(3):
        got = cs.score_continuations_detailed("Text: hello\nLabel:", LABELS)
        assert got.logprob.tobytes() == ref.logprob.tobytes()
        np.testing.assert_array_equal(got.n_tokens, ref.n_tokens)
    assert lm.n_score_calls_ == 1 and (cs.hits, cs.misses) == (2, 1)
    np.testing.assert_array_equal(
        cs.score_continuations("Text: hello\nLabel:", LABELS, reduction="mean"), ref.mean
    )


def test_another_prefix_or_order_of_continuations_is_another_input():
    lm = DummyLM()
    cs = CachedScorer(lm)
    a = cs.score_continuations("p", LABELS)
    b = cs.score_continuations("p", LABELS[::-1])
    cs.score_continuations("q", LABELS)
    assert lm.n_score_calls_ == 3
    np.testing.assert_array_equal(a[::-1], b)
    assert scoring_key("ab", ["c"]) != scoring_key("a", ["bc"])


def test_returned_arrays_cannot_corrupt_the_cache():
    cs = CachedScorer(DummyLM())
    first = cs.score_continuations_detailed("p", LABELS)
    first.logprob[:] = 0.0
    assert np.all(cs.score_continuations_detailed("p", LABELS).logprob < 0)


def test_store_is_shared_by_later_instances_and_processes(tmp_path):
    a = CachedScorer(DummyLM(seed=1), store=tmp_path)
    ref = [a.score_continuations_detailed(f"prefix {i}", LABELS) for i in range(4)]
    lm = DummyLM(seed=1)
    b = CachedScorer(lm, store=tmp_path)
    for i in range(4):
        got = b.score_continuations_detailed(f"prefix {i}", LABELS)
        assert got.logprob.tobytes() == ref[i].logprob.tobytes()
        np.testing.assert_array_equal(got.n_tokens, ref[i].n_tokens)
    assert lm.n_score_calls_ == 0 and b.hits == 4
    other = DummyLM(seed=2)  # another identity never reads these scores
    CachedScorer(other, store=tmp_path).score_continuations("prefix 0", LABELS)
    assert other.n_score_calls_ == 1


def test_a_torn_line_spoils_only_itself(tmp_path):
    a = CachedScorer(DummyLM(), store=tmp_path)
    a.score_continuations("one", LABELS)
    path = a._store.path
    with open(path, "ab") as fh:
        fh.write(b'{"key": "abc", "logprob": [0.1, ')  # an interrupted write
    b = CachedScorer(DummyLM(), store=tmp_path)
    b.score_continuations("two", LABELS)
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[-1])["key"] == scoring_key("two", LABELS)
    lm = DummyLM()
    c = CachedScorer(lm, store=tmp_path)
    c.score_continuations("one", LABELS)
    c.score_continuations("two", LABELS)
    assert lm.n_score_calls_ == 0


def test_delegates_the_rest_of_the_model():
    lm = DummyLM(context_length=77)
    cs = CachedScorer(lm)
    assert cs.context_length == 77 and cs.identity == lm.identity
    assert cs.generate(["x"]) == lm.generate(["x"])


def test_bad_input_names_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="lm must provide score_continuations_detailed"):
        CachedScorer(object())

    class NoIdentity:
        def score_continuations_detailed(self, prefix, continuations):
            return DummyLM().score_continuations_detailed(prefix, continuations)

    with pytest.raises(ValueError, match="identity is required"):
        CachedScorer(NoIdentity(), store=tmp_path)
    cs = CachedScorer(NoIdentity(), store=tmp_path, identity={"model": "mine"})
    assert cs.score_continuations("p", LABELS).shape == (4,)

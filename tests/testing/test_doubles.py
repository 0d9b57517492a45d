import numpy as np
import pytest

from ucs.embedding import Embedder
from ucs.lm import LanguageModel
from ucs.testing.doubles import DummyEmbedder, DummyLM


def test_dummy_embedder_contract_and_determinism():
    e = DummyEmbedder(dim=8, seed=3)
    assert isinstance(e, Embedder)
    x = e.embed(["a", "b", "a", ""])
    assert x.shape == (4, 8) and x.dtype == np.float32
    np.testing.assert_array_equal(x[0], x[2])
    assert not np.allclose(x[0], x[1])
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(DummyEmbedder(dim=8, seed=3).embed(["b"])[0], x[1])
    assert not np.allclose(DummyEmbedder(dim=8, seed=4).embed(["a"])[0], x[0])
    assert e.n_calls_ == 1 and e.n_texts_embedded_ == 4
    assert e.identity != DummyEmbedder(dim=8, seed=4).identity
    assert e.embed([]).shape == (0, 8)


def test_dummy_embedder_bad_input():
    with pytest.raises(ValueError, match="dim"):
        DummyEmbedder(dim=0)
    with pytest.raises(TypeError):
        DummyEmbedder().embed("single string")
    x = DummyEmbedder().embed([b"\xff\xfebad", "ok\udcff"])
    assert np.isfinite(x).all()


def test_dummy_lm_contract_scores_and_generation():
    lm = DummyLM(seed=1, answers={"Q: hi\nA:": "greeting"})
    assert isinstance(lm, LanguageModel)
    s = lm.score_continuations("Q: hi\nA:", [" greeting", " other label", " x"])
    assert s.shape == (3,) and np.argmax(s) == 0
    d = lm.score_continuations_detailed("Q: hi\nA:", [" greeting", " other label"])
    np.testing.assert_array_equal(d.n_tokens, [1, 2])
    np.testing.assert_allclose(
        lm.score_continuations("Q: hi\nA:", [" other label"], reduction="mean"), d.logprob[1:] / 2
    )
    np.testing.assert_array_equal(
        s,
        DummyLM(seed=1, answers={"Q: hi\nA:": "greeting"}).score_continuations(
            "Q: hi\nA:", [" greeting", " other label", " x"]
        ),
    )
    assert (lm.score_continuations("p", ["a b c", "d"]) < 0).all()
    with pytest.raises(ValueError, match="reduction"):
        lm.score_continuations("p", ["a"], reduction="max")
    g = lm.generate(["Q: hi\nA:", "unknown"])
    assert g[0] == "greeting" and g[1].startswith("answer_")
    assert lm.generate(["unknown"]) == [g[1]]
    assert lm.generate(["Q: hi\nA:"], stop=["eet"]) == ["gr"]
    assert DummyLM(answers=lambda p: "one two three").generate(["x"], max_new_tokens=2) == ["one two"]
    assert lm.count_tokens("a, b") == 3
    with pytest.raises(ValueError, match="max_new_tokens"):
        lm.generate(["x"], max_new_tokens=0)


def test_production_modules_import_no_private_helper_of_the_doubles():
    """The backends validate through ucs.lm.base, not through the test doubles' private helpers."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "ucs"
    pattern = re.compile(r"from ucs\.utils\.dummies import[^\n]*\b_\w+")
    offenders = [
        str(p.relative_to(src)) for p in src.rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []

"""UCSFewShot with the real dspy package and its DummyLM."""

from __future__ import annotations

import pytest

dspy = pytest.importorskip("dspy", reason="the dspy extra is not installed")

from dspy.utils.dummies import DummyLM  # noqa: E402

from ucs.index import SelectorIndex  # noqa: E402
from ucs.integrations.dspy import UCSFewShot, demos_of  # noqa: E402


class TwoStep(dspy.Module):
    def __init__(self):
        super().__init__()
        self.classify = dspy.Predict("text -> label")
        self.explain = dspy.Predict("text, label -> reason")

    def forward(self, text):
        label = self.classify(text=text).label
        return dspy.Prediction(label=label, reason=self.explain(text=text, label=label).reason)


@pytest.fixture(scope="module")
def trainset(banking_examples):
    examples, _ = banking_examples
    return [dspy.Example(text=e["text"], label=e["label"]).with_inputs("text") for e in examples[:200]]


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_fixed_mode_compile_run_save_load(tmp_path, minilm, trainset, embed_cache):
    tele = UCSFewShot(k=5, embedder=minilm, seed=3, cache_dir=embed_cache)
    program = tele.compile(TwoStep(), trainset=trainset)
    demos = demos_of(program)
    assert set(demos) == {"classify", "explain"} and all(len(d) == 5 for d in demos.values())
    assert demos["classify"] == demos["explain"]
    chosen = [trainset[i] for i in program.ucs_selection.indices]
    assert demos["classify"] == [dict(ex.toDict()) for ex in chosen]
    # deterministic from the seed
    again = UCSFewShot(k=5, embedder=minilm, seed=3, cache_dir=embed_cache).compile(
        TwoStep(), trainset=trainset
    )
    assert demos_of(again) == demos
    lm = DummyLM([{"label": "card_arrival"}, {"reason": "it asks about a card"}])
    with dspy.context(lm=lm):
        out = program(text="Where is my new card?")
    assert out.label == "card_arrival" and out.reason == "it asks about a card"
    program.save(str(tmp_path / "program.json"))
    loaded = TwoStep()
    loaded.load(str(tmp_path / "program.json"))
    assert demos_of(loaded) == demos


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_per_call_mode_picks_demos_per_input(tmp_path, minilm, trainset, embed_cache):
    tele = UCSFewShot(k=4, mode="per_call", embedder=minilm, seed=0, cache_dir=embed_cache)
    program = tele.compile(dspy.Predict("text -> label"), trainset=trainset)
    lm = DummyLM([{"label": "x"}] * 4)
    with dspy.context(lm=lm):
        program(text="I still have not received my card")
        first = program.ucs_selection
        demos_first = demos_of(program)["self"]
        program(text="How do I top up with a bank transfer?")
        second = program.ucs_selection
    own = tele.index_.select("I still have not received my card", k=4)
    assert first.indices.tolist() == own.indices.tolist()
    assert demos_first == [dict(trainset[i].toDict()) for i in own.indices]
    assert first.indices.tolist() != second.indices.tolist()
    # saving keeps the fixed coverage set; the index re-attaches per-call selection to the loaded program
    program.save(str(tmp_path / "p.json"))
    tele.index_.save(tmp_path / "ix")
    loaded = dspy.Predict("text -> label")
    loaded.load(str(tmp_path / "p.json"))
    UCSFewShot.attach(loaded, SelectorIndex.load(tmp_path / "ix", embedder=minilm), k=4)
    with dspy.context(lm=DummyLM([{"label": "x"}])):
        loaded(text="I still have not received my card")
    assert loaded.ucs_selection.indices.tolist() == own.indices.tolist()
    assert demos_of(loaded)["self"] == demos_first


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_errors_name_the_fix(minilm, trainset, embed_cache):
    with pytest.raises(ValueError, match="with_inputs"):
        UCSFewShot(embedder=minilm).compile(
            dspy.Predict("text -> label"), trainset=[dspy.Example(text="a", label="b")]
        )
    with pytest.raises(ValueError, match="query-independent"):
        UCSFewShot(method="dpp+ucs", embedder=minilm, cache_dir=embed_cache).compile(
            dspy.Predict("text -> label"), trainset=trainset
        )
    with pytest.raises(ValueError, match="mode"):
        UCSFewShot(mode="sometimes").compile(dspy.Predict("text -> label"), trainset=trainset)


def test_fixed_and_per_call_demos_come_only_from_the_filtered_examples(tmp_path):
    from ucs.testing.doubles import DummyEmbedder

    train = [
        dspy.Example(
            text=f"question {i} about topic {i % 6}", label=f"L{i % 4}", src="faq" if i % 2 else "chat"
        ).with_inputs("text")
        for i in range(40)
    ]
    emb = DummyEmbedder(dim=16)
    fixed = UCSFewShot(k=4, embedder=emb, cache_dir=tmp_path, where={"src": "faq"}, dedupe=0.99)
    program = fixed.compile(dspy.Predict("text -> label"), trainset=train)
    assert all(d["src"] == "faq" for d in demos_of(program)["self"]) and len(demos_of(program)["self"]) == 4
    assert program.ucs_selection.n_matched == 20
    tele = UCSFewShot(
        k=3, mode="per_call", method="topk", embedder=emb, cache_dir=tmp_path, where={"src": "chat"}
    )
    program = tele.compile(dspy.Predict("text -> label"), trainset=train)
    with dspy.context(lm=DummyLM([{"label": "x"}] * 2)):
        program(text="question 3 about topic 3")
    sel = program.ucs_selection
    assert sel.n_matched == 20 and all(train[i].src == "chat" for i in sel.indices)
    assert (
        sel.indices.tolist()
        == tele.index_.select("question 3 about topic 3", k=3, where={"src": "chat"}).indices.tolist()
    )
    with pytest.raises(ValueError, match="field 'source', which no example has"):
        UCSFewShot(k=3, embedder=emb, cache_dir=tmp_path, where={"source": "faq"}).compile(
            dspy.Predict("text -> label"), trainset=train
        )
    with pytest.raises(ValueError, match="dedupe must be a cosine threshold"):
        UCSFewShot(k=3, embedder=emb, dedupe=0).compile(dspy.Predict("text -> label"), trainset=train)

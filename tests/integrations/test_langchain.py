"""UCSExampleSelector inside real langchain-core prompt templates."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings  # noqa: E402
from langchain_core.prompts import (  # noqa: E402
    ChatPromptTemplate,
    FewShotChatMessagePromptTemplate,
    FewShotPromptTemplate,
    PromptTemplate,
)

from ucs.index import SelectorIndex  # noqa: E402
from ucs.integrations.langchain import LangChainEmbedder, UCSExampleSelector  # noqa: E402

ANTONYMS = [
    {"input": "happy", "output": "sad", "note": "mood"},
    {"input": "tall", "output": "short", "note": "size"},
    {"input": "energetic", "output": "lethargic", "note": "mood"},
    {"input": "sunny", "output": "gloomy", "note": "weather"},
    {"input": "windy", "output": "calm", "note": "weather"},
    {"input": "fast", "output": "slow", "note": "speed"},
    {"input": "hot", "output": "cold", "note": "temperature"},
    {"input": "loud", "output": "quiet", "note": "sound"},
]


def _run(coro):
    """``asyncio.run`` in a fresh thread: correct whether or not this thread already runs an event loop (as
    Playwright's sync API does while a browser fixture is open)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _fake_selector(tmp_path, **kw):
    return UCSExampleSelector.from_examples(
        ANTONYMS,
        DeterministicFakeEmbedding(size=64),
        k=3,
        input_keys=["input"],
        example_keys=["input", "output"],
        cache_dir=tmp_path,
        **kw,
    )


def test_fake_embeddings_in_few_shot_prompt_template(tmp_path):
    sel = _fake_selector(tmp_path)
    prompt = FewShotPromptTemplate(
        example_selector=sel,
        example_prompt=PromptTemplate.from_template("Input: {input}\nOutput: {output}"),
        prefix="Give the antonym of every input",
        suffix="Input: {input}\nOutput:",
        input_variables=["input"],
    )
    text = prompt.format(input="worried")
    chosen = sel.last_selection
    assert len(chosen.examples) == 3
    for ex in chosen.examples:
        assert set(ex) == {"input", "output"}  # example_keys
        assert f"Input: {ex['input']}\nOutput: {ex['output']}" in text
    assert text.endswith("Input: worried\nOutput:")
    # the same as the index's own selection for the same query embedding
    own = sel.index.select(
        "worried",
        k=3,
        query_embeddings=DeterministicFakeEmbedding(size=64).embed_query("worried"),
        example_keys=["input", "output"],
    )
    assert own.examples == chosen.examples and own.phi == chosen.phi


def test_only_input_keys_are_embedded(tmp_path):
    sel = _fake_selector(tmp_path)
    fake = DeterministicFakeEmbedding(size=64)
    expected = np.asarray(fake.embed_documents([e["input"] for e in ANTONYMS]), dtype=np.float32)
    np.testing.assert_array_equal(sel.index.embeddings_, expected)
    ident = sel.index.embedder_identity_
    assert {k: ident[k] for k in ("model", "params")} == {
        "model": "langchain:langchain_core.embeddings.fake.DeterministicFakeEmbedding",
        "params": {"size": 64},
    }
    assert len(ident["probe"]) == 16  # no setting names the model, so its vectors do


def test_async_path_and_add_example(tmp_path):
    sel = _fake_selector(tmp_path)
    sync = sel.select_examples({"input": "cheerful"})
    asyn = _run(sel.aselect_examples({"input": "cheerful"}))
    assert sync == asyn
    _run(sel.aadd_example({"input": "bright", "output": "dark", "note": "light"}))
    sel.add_example({"input": "wet", "output": "dry", "note": "weather"})
    assert sel.index.n_examples_ == len(ANTONYMS) + 2
    out = sel.select_examples({"input": "bright"})  # the fake embedding of the same text is identical
    assert out[0] == {"input": "bright", "output": "dark"}


def test_an_example_without_a_label_or_input_is_refused_on_every_add_path(tmp_path):
    labelled = [dict(e) for e in ANTONYMS]
    labelled[3]["output"] = None
    with pytest.raises(ValueError, match=r"example 3, field 'output' \(output_key\) is NoneType"):
        _fake_selector(tmp_path, output_key="output").index.fit(labelled)
    with pytest.raises(ValueError, match=r"example 3, field 'output' \(output_key\) is NoneType"):
        UCSExampleSelector.from_examples(
            labelled,
            DeterministicFakeEmbedding(size=64),
            input_keys=["input"],
            output_key="output",
            cache_dir=tmp_path,
        )
    sel = _fake_selector(tmp_path, output_key="output")
    with pytest.raises(ValueError, match=r"example 0, field 'output' \(output_key\) is list"):
        sel.add_example({"input": "wet", "output": ["dry"], "note": "weather"})
    with pytest.raises(ValueError, match=r"example 0, field 'output' \(output_key\) is only whitespace"):
        _run(sel.aadd_example({"input": "wet", "output": "  ", "note": "weather"}))
    with pytest.raises(ValueError, match=r"example 0, field 'input' is NoneType"):
        sel.add_example({"input": None, "output": "dry", "note": "weather"})
    assert sel.index.n_examples_ == len(ANTONYMS)  # nothing was added
    assert all(e["output"] for e in sel.select_examples({"input": "wet"}))


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_real_minilm_in_chat_template_equals_index_select(minilm, banking_examples, embed_cache):
    examples, queries = banking_examples
    sel = UCSExampleSelector.from_examples(
        examples,
        minilm,
        k=4,
        input_keys=["text"],
        method="dpp+ucs",
        output_key="label",
        cache_dir=embed_cache,
    )
    few_shot = FewShotChatMessagePromptTemplate(
        example_selector=sel,
        input_variables=["text"],
        example_prompt=ChatPromptTemplate.from_messages([("human", "{text}"), ("ai", "{label}")]),
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Classify the banking intent."), few_shot, ("human", "{text}")]
    )
    for q in queries[:3]:
        messages = prompt.format_messages(text=q)
        own = sel.index.select(q, k=4)
        assert len(messages) == 1 + 2 * 4 + 1
        shown = [(m.content, messages[2 * i + 2].content) for i, m in enumerate(messages[1:-1:2])]
        assert shown == [(e["text"], e["label"]) for e in own.examples]
        assert sel.last_selection.indices.tolist() == own.indices.tolist()
    # real retrieval: the most query-relevant demonstration is among the pool's five nearest, and by default
    # the prompt ends with the label its demonstrations vote for most (ucs.defaults.application_order)
    q = minilm.embed([queries[2]])[0]
    sims = sel.index.embeddings_ @ q
    assert sims[own.indices].max() >= np.sort(sims)[-5]
    labels = [e["label"] for e in own.examples]
    assert labels.count(labels[-1]) == max(labels.count(w) for w in labels)


def test_saved_index_reloads_into_a_selector(tmp_path):
    sel = _fake_selector(tmp_path)
    sel.index.save(tmp_path / "ix")
    again = UCSExampleSelector(
        SelectorIndex.load(tmp_path / "ix", embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=64))),
        k=3,
        input_keys=["input"],
        example_keys=["input", "output"],
    )
    assert again.select_examples({"input": "worried"}) == sel.select_examples({"input": "worried"})


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="LangChain Embeddings or a ucs embedder"):
        UCSExampleSelector.from_examples(ANTONYMS, object(), input_keys=["input"])
    sel = _fake_selector(tmp_path)
    with pytest.raises(ValueError, match="input_keys"):
        sel.select_examples({"other": "x"})


class _ModelObjectEmbeddings(Embeddings):
    """A user's own LangChain wrapper: the model is an object that no plain setting names."""

    def __init__(self, model):
        self.model = model

    def embed_documents(self, texts):
        return self.model.encode(list(texts)).tolist()

    def embed_query(self, text):
        return self.model.encode([text])[0].tolist()


@pytest.mark.slow
def test_two_real_models_in_one_langchain_class_never_share_a_cache_entry(tmp_path, banking_examples):
    pytest.importorskip("sentence_transformers")
    from ucs.embedding.sbert import load_retrieval_embedder

    examples, queries = banking_examples
    examples = examples[:60]
    models = {
        name: load_retrieval_embedder(name).load()._st for name in ("all-minilm-l6-v2", "all-mpnet-base-v2")
    }
    wrapped = {name: _ModelObjectEmbeddings(m) for name, m in models.items()}
    idents = {name: LangChainEmbedder(w).identity for name, w in wrapped.items()}
    assert idents["all-minilm-l6-v2"]["model"] == idents["all-mpnet-base-v2"]["model"]  # the same class
    assert idents["all-minilm-l6-v2"] != idents["all-mpnet-base-v2"]  # told apart by their vectors
    assert (
        LangChainEmbedder(_ModelObjectEmbeddings(models["all-minilm-l6-v2"])).identity
        == idents["all-minilm-l6-v2"]
    )
    indexes = {
        name: UCSExampleSelector.from_examples(
            examples, w, k=4, input_keys=["text"], method="topk", cache_dir=tmp_path
        ).index  # one shared cache
        for name, w in wrapped.items()
    }
    for name, index in indexes.items():
        direct = models[name].encode([e["text"] for e in examples])
        np.testing.assert_allclose(index.embeddings_, direct, rtol=1e-4, atol=1e-5)
    # saved and loaded with the plain LangChain object, as from_examples accepts it
    indexes["all-mpnet-base-v2"].save(tmp_path / "ix")
    again = SelectorIndex.load(tmp_path / "ix", embedder=wrapped["all-mpnet-base-v2"])
    assert (
        again.select(queries[0], k=4).indices.tolist()
        == indexes["all-mpnet-base-v2"].select(queries[0], k=4).indices.tolist()
    )
    with pytest.raises(ValueError, match="not the one this index was built with"):
        SelectorIndex.load(tmp_path / "ix", embedder=wrapped["all-minilm-l6-v2"])


def test_a_duck_typed_embeddings_object_and_its_identity(tmp_path):
    from ucs.embedding.adapters import DocumentsEmbedder, as_embedder

    fake = DeterministicFakeEmbedding(size=16)
    a, b = as_embedder(fake), as_embedder(DeterministicFakeEmbedding(size=32))
    assert isinstance(a, DocumentsEmbedder) and a.identity != b.identity and "probe" in a.identity
    sel = UCSExampleSelector.from_examples(
        ANTONYMS, fake, k=2, input_keys=["input"], method="topk", cache_dir=tmp_path
    )
    sel.index.save(tmp_path / "ix")
    again = UCSExampleSelector(SelectorIndex.load(tmp_path / "ix", embedder=fake), k=2, input_keys=["input"])
    assert again.select_examples({"input": "worried"}) == sel.select_examples({"input": "worried"})


@pytest.mark.parametrize("method", ["mmr", "labelaware"])
def test_the_relevance_baselines_serve_langchain_prompts(tmp_path, method):
    sel = UCSExampleSelector.from_examples(
        ANTONYMS,
        DeterministicFakeEmbedding(size=64),
        k=3,
        input_keys=["input"],
        method=method,
        output_key="note",
        cache_dir=tmp_path,
    )
    chosen = sel.select_examples({"input": "worried"})
    assert len(chosen) == 3 and sel.last_selection.method == method
    if method == "labelaware":  # at most two of one label by default
        notes = [e["note"] for e in chosen]
        assert max(notes.count(n) for n in notes) <= 2
    sel.index.save(tmp_path / "ix")
    again = UCSExampleSelector(
        SelectorIndex.load(tmp_path / "ix", embedder=DeterministicFakeEmbedding(size=64)),
        k=3,
        input_keys=["input"],
    )
    assert again.select_examples({"input": "worried"}) == chosen


def test_a_fixed_filter_and_a_per_call_filter_from_a_prompt_variable(tmp_path):
    sel = _fake_selector(tmp_path, where={"note": ["mood", "weather"]})
    chosen = sel.select_examples({"input": "worried"})
    assert len(chosen) == 3 and {ANTONYMS[i]["note"] for i in sel.last_selection.indices} <= {
        "mood",
        "weather",
    }
    assert sel.last_selection.n_matched == 4
    # where_keys: the prompt's own "note" variable filters each call and is not embedded
    per_call = _fake_selector(tmp_path, where_keys=["note"], dedupe=0.95)
    prompt = FewShotPromptTemplate(
        example_selector=per_call,
        example_prompt=PromptTemplate.from_template("Input: {input}\nOutput: {output}"),
        suffix="Input: {input}\nOutput:",
        input_variables=["input", "note"],
    )
    text = prompt.format(input="worried", note="weather")
    assert "sunny" in text and "windy" in text and "happy" not in text
    last = per_call.last_selection
    assert last.query == "worried" and last.n_matched == 2 and "fewer than k=3" in last.note
    assert (
        last.indices.tolist()
        == per_call.index.select("worried", k=3, where={"note": "weather"}, dedupe=0.95).indices.tolist()
    )
    assert _run(per_call.aselect_examples({"input": "worried", "note": "mood"})) == [
        {"input": ANTONYMS[i]["input"], "output": ANTONYMS[i]["output"]}
        for i in per_call.last_selection.indices
    ]
    assert {ANTONYMS[i]["note"] for i in per_call.last_selection.indices} == {"mood"}
    per_call.warmup()


def test_bad_filters_are_refused_when_the_selector_is_built_or_called(tmp_path):
    with pytest.raises(ValueError, match="field 'nothing', which no example has"):
        _fake_selector(tmp_path, where={"nothing": "x"})
    with pytest.raises(ValueError, match="dedupe must be a cosine threshold"):
        _fake_selector(tmp_path, dedupe=2)
    with pytest.raises(ValueError, match="where_keys must be a list"):
        _fake_selector(tmp_path, where_keys="note")
    sel = _fake_selector(tmp_path, where_keys=["note"])
    with pytest.raises(ValueError, match=r"no variable\(s\) \['note'\] named in where_keys"):
        sel.select_examples({"input": "worried"})

"""``SelectorIndex.warmup``: ``load`` warms by default, so the first query after it loads no model."""

import numpy as np
import pytest

from ucs.index import SelectorIndex


@pytest.fixture
def count_model_loads(monkeypatch):
    """Counts sentence-transformers model constructions (what makes a first query take seconds)."""
    st = pytest.importorskip("sentence_transformers")
    calls = []
    real = st.SentenceTransformer

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(st, "SentenceTransformer", counting)
    return calls


def _fresh_minilm():
    from ucs.embedding.sbert import load_retrieval_embedder

    return load_retrieval_embedder("all-minilm-l6-v2")


@pytest.mark.parametrize("method", ["topk", "dpp+ucs"])
def test_first_select_after_load_loads_no_model(
    tmp_path, minilm, banking_examples, embed_cache, count_model_loads, method
):
    examples, queries = banking_examples
    index = SelectorIndex(minilm, method, input_keys=["text"], output_key="label", cache_dir=embed_cache)
    index.fit(examples[:200]).save(tmp_path / "ix")
    loaded = SelectorIndex.load(tmp_path / "ix", embedder=_fresh_minilm())
    assert len(count_model_loads) == 1  # loaded inside load(), by the warmup
    first = loaded.select(queries[0], k=8)
    assert len(count_model_loads) == 1  # the first query loaded nothing
    assert first.indices.tolist() == index.select(queries[0], k=8).indices.tolist()


def test_warmup_false_defers_the_model_to_the_first_query(
    tmp_path, minilm, banking_examples, embed_cache, count_model_loads
):
    examples, queries = banking_examples
    SelectorIndex(minilm, "topk", input_keys=["text"], cache_dir=embed_cache).fit(examples[:100]).save(
        tmp_path / "ix"
    )
    loaded = SelectorIndex.load(tmp_path / "ix", embedder=_fresh_minilm(), warmup=False)
    assert count_model_loads == []
    loaded.select(queries[0], k=4)
    assert len(count_model_loads) == 1


def test_warmup_without_the_embedder_warms_the_selection_only(tmp_path, table_embedder):
    rng = np.random.default_rng(0)
    texts = [f"example {i}" for i in range(30)]
    emb = table_embedder({t: rng.standard_normal(8) for t in texts})
    SelectorIndex(emb, "dpp", input_keys=["text"], cache_dir=tmp_path / "c").fit(
        [{"text": t} for t in texts]
    ).save(tmp_path / "ix")
    loaded = SelectorIndex.load(tmp_path / "ix")  # built with a table embedder, loaded without it
    assert loaded.embedder is None or loaded.embedder is not emb
    assert emb.n_texts_embedded_ == 30
    with_emb = SelectorIndex.load(tmp_path / "ix", embedder=emb)  # the warmup embeds one probe query
    assert emb.n_texts_embedded_ == 31
    assert (
        with_emb.select("example 3", k=3).indices.tolist()
        == loaded.select(query_embeddings=emb.embed(["example 3"])[0], k=3).indices.tolist()
    )


def test_one_query_selects_on_the_query_threads_and_a_batch_on_all(
    minilm, banking_examples, embed_cache, monkeypatch
):
    """The faiss scan and numpy of one served query run on ``query_threads`` (their OpenMP / BLAS pools
    otherwise wait for a busy core); a batch of queries keeps every thread. Same selections either way."""
    from threadpoolctl import threadpool_info

    import ucs.index.index as ix_mod

    examples, queries = banking_examples
    index = SelectorIndex(minilm, "dpp+ucs", input_keys=["text"], output_key="label", cache_dir=embed_cache)
    index.fit(examples[:200])
    seen = []
    real = index.selector_.select

    def spy(*args, **kwargs):
        seen.append(max((p["num_threads"] for p in threadpool_info()), default=1))
        return real(*args, **kwargs)

    monkeypatch.setattr(index.selector_, "select", spy)
    monkeypatch.setenv("UCS_QUERY_THREADS", "1")
    one = index.select(queries[0], k=8)
    many = index.select(queries[:3], k=8)
    assert seen[0] == 1
    assert many[0].indices.tolist() == one.indices.tolist()
    limits = []
    monkeypatch.setattr(
        ix_mod, "limit_threads", lambda n: limits.append(n) or __import__("contextlib").nullcontext()
    )
    index.select(queries[0], k=8)
    index.select(queries[:3], k=8)
    assert limits == [1, None]

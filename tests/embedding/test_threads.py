"""Query-time thread limits: resolution from argument / environment, and the limit restored after a query."""

import numpy as np
import pytest

from ucs.embedding.threads import QUERY_THREADS_ENV, free_cores, limit_threads, resolve_query_threads


def test_resolution_order(monkeypatch):
    monkeypatch.delenv(QUERY_THREADS_ENV, raising=False)
    assert resolve_query_threads() == 1
    monkeypatch.setenv(QUERY_THREADS_ENV, "3")
    assert resolve_query_threads() == 3
    assert resolve_query_threads(2) == 2  # the argument wins
    monkeypatch.setenv(QUERY_THREADS_ENV, "auto")
    assert resolve_query_threads() == free_cores() >= 1


@pytest.mark.parametrize("bad", [0, -1, "two", 1.5, True])
def test_bad_values_name_the_argument(bad):
    with pytest.raises(ValueError, match="query_threads must be a positive integer or 'auto'"):
        resolve_query_threads(bad)


def test_bad_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv(QUERY_THREADS_ENV, "many")
    with pytest.raises(ValueError, match=QUERY_THREADS_ENV):
        resolve_query_threads()


def test_limit_sets_and_restores_torch_threads():
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_info, threadpool_limits

    before = torch.get_num_threads()
    pools = [p["num_threads"] for p in threadpool_info()]
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert torch.get_num_threads() == before
    assert [p["num_threads"] for p in threadpool_info()] == pools
    with threadpool_limits(limits=1):  # pools already at the limit are left alone, and stay as they were
        with limit_threads(1):
            assert all(p["num_threads"] == 1 for p in threadpool_info())
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert [p["num_threads"] for p in threadpool_info()] == pools


def test_embed_queries_equals_embed_on_one_thread(minilm_unloaded):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    texts = ["how do I top up my card?", "my card payment was declined"]
    q = minilm_unloaded.embed_queries(texts)
    assert torch.get_num_threads() == before
    assert q.dtype == np.float32 and q.shape == (2, minilm_unloaded.dim)
    np.testing.assert_allclose(q, minilm_unloaded.embed(texts), atol=1e-5)
    assert minilm_unloaded.embed_queries([]).shape == (0, minilm_unloaded.dim)


@pytest.fixture
def minilm_unloaded():
    pytest.importorskip("sentence_transformers")
    from ucs.embedding.sbert import load_retrieval_embedder

    try:
        return load_retrieval_embedder("all-minilm-l6-v2", query_threads=1)
    except Exception as exc:  # pragma: no cover - depends on the installed weights
        pytest.skip(f"all-MiniLM-L6-v2 is unavailable: {exc}")

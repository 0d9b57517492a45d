import json

import numpy as np
import pytest

from ucs.embedding import EmbeddingCache, cached_embed
from ucs.testing.doubles import DummyEmbedder


def test_second_run_does_not_touch_the_model(tmp_path):
    texts = [f"text {i}" for i in range(20)]
    e = DummyEmbedder(dim=5, seed=0)
    first = cached_embed(e, texts, tmp_path)
    e2 = DummyEmbedder(dim=5, seed=0)
    second = cached_embed(e2, texts, tmp_path)
    assert e.n_calls_ == 1 and e2.n_calls_ == 0
    np.testing.assert_array_equal(first, second)
    files = sorted(p.suffix for p in tmp_path.rglob("*") if p.is_file())
    assert files == [".json", ".npy"]


def test_key_depends_on_identity_and_texts(tmp_path):
    cache = EmbeddingCache(tmp_path)
    a, b = DummyEmbedder(seed=0), DummyEmbedder(seed=1)
    assert cache.key_for(a, ["x"]) != cache.key_for(b, ["x"])
    assert cache.key_for(a, ["x"]) != cache.key_for(a, ["y"])
    assert cache.key_for(a, ["x", "y"]) != cache.key_for(a, ["xy"])
    cache.embed(a, ["x"]); cache.embed(b, ["x"]); cache.embed(a, ["x"])
    assert (cache.hits, cache.misses) == (1, 2)


def test_corrupt_entry_is_recomputed(tmp_path):
    cache = EmbeddingCache(tmp_path)
    e = DummyEmbedder(seed=0)
    ref = cache.embed(e, ["a", "b"])
    npy = next(tmp_path.rglob("*.npy"))
    arr = np.load(npy)
    arr[0, 0] += 1.0
    np.save(npy, arr)
    out = cache.embed(e, ["a", "b"])
    assert e.n_calls_ == 2
    np.testing.assert_array_equal(out, ref)
    man = next(tmp_path.rglob("*.json"))
    man.write_text("{not json")
    cache.embed(e, ["a", "b"])
    assert e.n_calls_ == 3
    assert json.loads(man.read_text())["shape"] == [2, 16]


def test_pickled_object_array_is_never_loaded(tmp_path):
    cache = EmbeddingCache(tmp_path)
    e = DummyEmbedder(seed=0)
    cache.embed(e, ["a"])
    npy = next(tmp_path.rglob("*.npy"))
    np.save(npy, np.array([object()], dtype=object), allow_pickle=True)
    cache.embed(e, ["a"])
    assert e.n_calls_ == 2


def test_wrong_row_count_raises(tmp_path):
    class Bad(DummyEmbedder):
        def embed(self, texts):
            return super().embed(list(texts) + ["extra"])

    with pytest.raises(ValueError, match="rows"):
        cached_embed(Bad(), ["a"], tmp_path)

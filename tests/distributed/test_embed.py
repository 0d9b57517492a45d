import functools
import json

import numpy as np
import pytest

from ucs.distributed import embed_pool
from ucs.distributed.embed import PoolEmbeddings
from ucs.embedding import EmbeddingCache
from ucs.testing.doubles import DummyEmbedder

TEXTS = [f"pool text {i}" for i in range(230)]


def test_shards_use_the_local_cache_keys(tmp_path):
    fac = functools.partial(DummyEmbedder, dim=6, seed=1)
    pool = embed_pool(fac, TEXTS, shard_size=50, out_dir=tmp_path)
    assert pool.n == 230 and pool.n_shards == 5 and pool.lengths == [50, 50, 50, 50, 30]
    assert (pool.n_embedded, pool.n_skipped) == (5, 0)
    np.testing.assert_array_equal(pool.load(), DummyEmbedder(dim=6, seed=1).embed(TEXTS))
    # the local cache finds every shard without calling the model
    e = DummyEmbedder(dim=6, seed=1)
    cache = EmbeddingCache(tmp_path)
    for (a, b), key in zip(pool.ranges, pool.keys):
        assert cache.key_for(e, TEXTS[a:b]) == key
        cache.embed(e, TEXTS[a:b])
    assert e.n_calls_ == 0 and cache.hits == 5
    assert all(p.is_file() for p in pool.shard_paths())
    again = PoolEmbeddings.from_manifest(pool.manifest)
    np.testing.assert_array_equal(again.load(), pool.load())


def test_resume_skips_verified_shards_and_redoes_corrupt_ones(tmp_path):
    fac = functools.partial(DummyEmbedder, dim=4)
    first = embed_pool(fac, TEXTS, shard_size=100, out_dir=tmp_path)
    # corrupt one shard's bytes (same size, different content)
    path = first.shard_paths()[1]
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    second = embed_pool(fac, TEXTS, shard_size=100, out_dir=tmp_path)
    assert (second.n_embedded, second.n_skipped) == (1, 2)
    np.testing.assert_array_equal(second.load(), first.load())
    # growing the pool embeds only the new tail shard
    third = embed_pool(fac, TEXTS + ["one more"], shard_size=100, out_dir=tmp_path)
    assert (third.n_embedded, third.n_skipped) == (1, 2)


def test_identity_mismatch_and_bad_input(tmp_path):
    fac = functools.partial(DummyEmbedder, dim=4)
    with pytest.raises(ValueError, match="identity"):
        embed_pool(fac, TEXTS, shard_size=100, out_dir=tmp_path, identity={"model": "other"})
    with pytest.raises(ValueError, match="shard_size"):
        embed_pool(fac, TEXTS, shard_size=0, out_dir=tmp_path)
    with pytest.raises(ValueError, match="empty"):
        embed_pool(fac, [], out_dir=tmp_path)
    m = json.loads(embed_pool(fac, TEXTS[:10], shard_size=4, out_dir=tmp_path).manifest.read_text())
    assert m["n"] == 10 and len(m["keys"]) == 3

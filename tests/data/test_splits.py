from __future__ import annotations

import numpy as np
import pytest

from ucs.data import DatasetError, TestProtocol, draw_test_indices, load_dataset, pool_test_split


@pytest.mark.parametrize("seed", [0, 42, 12345])
def test_pool_test_split_partitions(seed):
    pool, test = pool_test_split(200, 0.8, seed)
    assert (len(pool), len(test)) == (160, 40)
    assert sorted(np.concatenate([pool, test]).tolist()) == list(range(200))
    again = pool_test_split(200, 0.8, seed)
    assert np.array_equal(pool, again[0]) and np.array_equal(test, again[1])


def test_pool_test_split_validation():
    with pytest.raises(ValueError, match="pool_fraction"):
        pool_test_split(10, 1.0)
    with pytest.raises(ValueError, match="n must be"):
        pool_test_split(1)


def test_draw_test_indices():
    a = draw_test_indices(3080, 500, 42)
    assert len(a) == 500 == len(np.unique(a)) and a.max() < 3080
    assert np.array_equal(a, draw_test_indices(3080, 500, 42))
    assert not np.array_equal(a, draw_test_indices(3080, 500, 43))
    assert np.array_equal(draw_test_indices(40, 500), np.arange(40))
    assert np.array_equal(draw_test_indices(40, None), np.arange(40))
    with pytest.raises(DatasetError, match="empty"):
        draw_test_indices(0, 5)
    with pytest.raises(ValueError, match="test_size"):
        draw_test_indices(10, -1)


def test_protocol_defaults_and_apply():
    ds = load_dataset("sample")
    proto = TestProtocol()
    assert proto.run_seeds == (42, 43, 44) and proto.size_for(ds) == 500
    assert len(proto.apply(ds).test) == 50  # fewer than 500 available: the whole split
    small = TestProtocol(test_size=7).apply(ds)
    assert len(small.test) == 7
    assert small.info["test_indices"] == TestProtocol(test_size=7).test_indices(ds).tolist()
    with pytest.raises(ValueError, match="run_seeds"):
        TestProtocol(run_seeds=())
    with pytest.raises(ValueError, match="distinct"):
        TestProtocol(run_seeds=(1, 1))
    with pytest.raises(ValueError, match="test_size"):
        TestProtocol(test_size=0)

import functools

import numpy as np
import pytest

from ucs.distributed import Executor, LocalExecutor, RayExecutor, get_executor


def _add(x, y):
    return x + y


def _pair(x):
    return x, -x


def test_local_executor_contract():
    ex = get_executor()
    assert isinstance(ex, LocalExecutor) and ex.num_workers == 1
    h = ex.put(np.arange(3))
    assert ex.get(ex.submit(_add, 1, 2)) == 3
    a, b = ex.submit(_pair, 4, num_returns=2)
    assert ex.get([a, b]) == [4, -4]
    assert ex.map(_add, [1, 2, 3], 10) == [11, 12, 13]
    np.testing.assert_array_equal(ex.map(_add, [1], h)[0], [1, 2, 3])
    assert ex.map_actors(functools.partial(functools.partial, _add, 100), [1, 2]) == [101, 102]
    assert ex.map_actors(functools.partial(functools.partial, _add, 100), []) == []
    with ex as same:
        assert same is ex


def test_map_actors_builds_one_state_locally():
    built = []

    def factory():
        built.append(1)
        return lambda item: item * 2

    assert LocalExecutor().map_actors(factory, [1, 2, 3]) == [2, 4, 6]
    assert len(built) == 1


def test_num_returns_mismatch_is_reported():
    with pytest.raises(ValueError, match="expected 3"):
        LocalExecutor().submit(_pair, 1, num_returns=3)


def test_get_executor_resolution():
    ex = LocalExecutor()
    assert get_executor(ex) is ex
    assert get_executor("local").name == "local"
    r = get_executor("ray", num_cpus=2)
    assert isinstance(r, RayExecutor) and isinstance(r, Executor)
    assert r.num_cpus == 2  # constructing does not connect
    with pytest.raises(ValueError, match="executor must be one of"):
        get_executor("spark")
    with pytest.raises(ValueError, match="no options"):
        get_executor("local", num_cpus=2)


def test_ray_executor_validates_parameters():
    with pytest.raises(ValueError, match="num_cpus"):
        RayExecutor(num_cpus=-1)
    with pytest.raises(ValueError, match="address"):
        RayExecutor(address=5)


def test_importing_distributed_does_not_import_ray():
    import subprocess
    import sys

    code = "import sys, ucs.distributed; ucs.distributed.get_executor(); print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

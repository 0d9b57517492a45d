import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ucs.clustering.graph import canonical_labels
from ucs.distributed.unionfind import UnionFind, connected_components_from_edges


def _scipy_labels(n, a, b):
    g = sparse.coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return canonical_labels(connected_components(g, directed=False)[1])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n)
        )
    )
)
def test_matches_scipy_connected_components(case):
    n, edges = case
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    np.testing.assert_array_equal(connected_components_from_edges(n, a, b), _scipy_labels(n, a, b))


def test_incremental_unions_equal_one_batch():
    rng = np.random.default_rng(3)
    n = 5000
    a, b = rng.integers(0, n, 4000), rng.integers(0, n, 4000)
    uf = UnionFind(n)
    for s in range(0, 4000, 700):
        uf.union(a[s : s + 700], b[s : s + 700])
    np.testing.assert_array_equal(uf.labels(), connected_components_from_edges(n, a, b))
    assert uf.n_components == int(uf.labels().max()) + 1
    # every root is the smallest member of its set
    roots = uf.find_all()
    assert np.all(roots <= np.arange(n))


def test_long_chain_converges():
    n = 100_000
    perm = np.random.default_rng(0).permutation(n)
    lab = connected_components_from_edges(n, perm[:-1], perm[1:])
    assert lab.max() == 0


def test_bad_input():
    with pytest.raises(ValueError, match="n must be"):
        UnionFind(-1)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        UnionFind(3).union([0], [3])
    with pytest.raises(ValueError, match="differ in length"):
        UnionFind(3).union([0, 1], [1])

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ucs.lm import ContinuationScores
from ucs.lm.prefix_tree import build_trie, logsumexp_rows, move_trailing_spaces


def test_trie_shares_prefixes_and_is_breadth_first():
    trie = build_trie([[1, 2, 3], [1, 2, 4], [5], [1, 6]])
    assert trie.n_nodes == 6
    assert (np.diff(trie.depth) >= 0).all()
    for i in range(trie.n_nodes):
        assert trie.parent[i] < i
    for toks, path in zip([[1, 2, 3], [1, 2, 4], [5], [1, 6]], trie.paths):
        np.testing.assert_array_equal(trie.tokens[path], toks)
    assert trie.members()[trie.paths[0][0]] == [0, 1, 3]
    assert trie.has_children().sum() == 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=5), min_size=1, max_size=12))
def test_trie_paths_reconstruct_every_list(lists):
    trie = build_trie(lists)
    assert trie.n_nodes == len({tuple(x[: i + 1]) for x in lists for i in range(len(x))})
    for toks, path in zip(lists, trie.paths):
        np.testing.assert_array_equal(trie.tokens[path], toks)
        assert trie.parent[path[0]] == -1
        np.testing.assert_array_equal(trie.parent[path[1:]], path[:-1])


def test_trie_rejects_empty_continuation():
    with pytest.raises(ValueError, match="at least one token"):
        build_trie([[1], []])


def test_move_trailing_spaces():
    assert move_trailing_spaces("Label: ", ["a", "b"]) == ("Label:", [" a", " b"])
    assert move_trailing_spaces("Label:\n", ["a"]) == ("Label:\n", ["a"])


def test_logsumexp_rows_matches_scipy():
    from scipy.special import logsumexp

    x = np.random.default_rng(0).normal(size=(4, 1000)).astype(np.float32) * 30
    np.testing.assert_allclose(logsumexp_rows(x), logsumexp(x.astype(np.float64), axis=1), rtol=1e-6)


def test_continuation_scores_reductions():
    s = ContinuationScores(np.array([-4.0, -3.0]), np.array([2, 3]))
    np.testing.assert_allclose(s.reduce("mean"), [-2.0, -1.0])
    np.testing.assert_array_equal(s.reduce("sum"), [-4.0, -3.0])
    with pytest.raises(ValueError, match="reduction"):
        s.reduce("median")

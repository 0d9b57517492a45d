"""CoverSelector: one fixed demonstration set that covers the most pool mass with distinct latent clusters."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors.cover import CoverSelector, cluster_medoids


def _pool(n=120, d=8, k=7, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    # distinct sizes, so that "the largest clusters" has one answer: 1, 2, ..., k items, the rest to cluster 0
    ids = np.concatenate([np.full(i + 1, i) for i in range(1, k)])
    ids = np.concatenate([ids, np.zeros(n - ids.size, dtype=np.int64)])
    return x, rng.permutation(ids)


def _medoid_by_brute_force(x, ids, u):
    members = np.flatnonzero(ids == u)
    mean = x[members].mean(axis=0)
    cos = x[members] @ mean / np.linalg.norm(mean)
    return int(members[np.argmax(cos)])


@pytest.mark.parametrize("budget", [1, 3, 7])
def test_takes_the_medoids_of_the_largest_clusters(budget):
    x, ids = _pool()
    sel = CoverSelector().fit(x, cluster_ids=ids).select(None, budget)
    assert sel.indices.shape == (1, budget)
    chosen = sel.indices[0]
    sizes = np.bincount(ids)
    largest = list(np.argsort(-sizes, kind="stable")[:budget])
    assert list(ids[chosen]) == largest  # distinct clusters, largest first
    assert [int(i) for i in chosen] == [_medoid_by_brute_force(x, ids, u) for u in largest]
    # the pool mass these clusters hold is the most any budget-B set of items can cover
    assert sizes[ids[chosen]].sum() == np.sort(sizes)[::-1][:budget].sum()


def test_more_demonstrations_than_clusters_go_round_by_round():
    x, ids = _pool(n=40, k=4)
    sel = CoverSelector().fit(x, cluster_ids=ids).select(None, 9)
    chosen = sel.indices[0]
    assert len(set(chosen.tolist())) == 9
    assert sorted(ids[chosen[:4]].tolist()) == [0, 1, 2, 3]  # one round over every cluster first
    assert len(set(ids[chosen[4:8]].tolist())) == 4  # then every cluster's second most central member


def test_same_selection_for_relabelled_clusters_and_repeated_calls():
    x, ids = _pool()
    perm = np.random.default_rng(3).permutation(ids.max() + 1)
    a = CoverSelector().fit(x, cluster_ids=ids).select(None, 5).indices
    b = CoverSelector().fit(x, cluster_ids=perm[ids]).select(None, 5).indices
    assert np.array_equal(a, b)
    s = CoverSelector().fit(x, cluster_ids=ids)
    assert np.array_equal(s.select(None, 5).indices, s.select(None, 5).indices)


def test_medoids_and_sizes():
    x, ids = _pool()
    medoids, sizes = cluster_medoids(x, ids)
    assert np.array_equal(sizes, np.bincount(ids))
    assert [int(m) for m in medoids] == [_medoid_by_brute_force(x, ids, u) for u in range(sizes.size)]


def test_without_cluster_ids_it_says_what_to_give():
    x, _ = _pool()
    with pytest.raises(ValueError, match="needs the pool's cluster ids"):
        CoverSelector().fit(x)

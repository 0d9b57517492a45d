"""Cover: one fixed prompt over the largest latent clusters.

One demonstration set for a whole task that covers the most of the pool's latent clusters.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ucs.selectors.base import Selector

__all__ = ["CoverSelector", "cluster_medoids", "centrality"]


def centrality(pool: np.ndarray, cluster_ids: np.ndarray) -> np.ndarray:
    """How central each item is in its own cluster: ``⟨x_i, Σ_{j ∈ c(i)} x_j⟩`` (∝ the cosine to the cluster's
    mean direction). Shape (N,); ``O(N d)`` time, ``O(K d)`` extra memory."""
    sums = np.zeros((int(cluster_ids.max()) + 1, pool.shape[1]))
    np.add.at(sums, cluster_ids, pool)
    return np.einsum("ij,ij->i", pool, sums[cluster_ids])


def cluster_medoids(pool: np.ndarray, cluster_ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The most central member of every cluster and the clusters' sizes.

    Parameters
    ----------
    pool : ndarray of shape (N, d)
        ℓ2-normalised rows.
    cluster_ids : ndarray of shape (N,)
        Ids ``0..K-1``.

    Returns
    -------
    medoids : ndarray of shape (K,), int64
        For cluster ``u``, its member most cosine-similar to the cluster's mean direction (ties: the
        smaller pool index).
    sizes : ndarray of shape (K,), int64

    Notes
    -----
    ``O(N d + N log N)`` time, ``O(K d)`` memory.
    """
    sizes = np.bincount(cluster_ids).astype(np.int64)
    order = np.lexsort((np.arange(cluster_ids.size), -centrality(pool, cluster_ids), cluster_ids))
    first = np.ones(order.size, dtype=bool)
    first[1:] = cluster_ids[order[1:]] != cluster_ids[order[:-1]]
    medoids = np.empty(sizes.size, dtype=np.int64)
    medoids[cluster_ids[order[first]]] = order[first]
    return medoids, sizes


class CoverSelector(Selector):
    """Query-independent: the medoids of the ``B`` largest latent clusters, one demonstration each.

    Coverage is what a fixed prompt is for: a query drawn like the pool falls in a covered cluster with
    probability ``Σ_{u covered} n_u / N``, and ``B`` distinct clusters also maximise every coverage
    functional Φ of the prior (``K_seen = B``, all of them seen once). Taking the largest clusters maximises
    that probability; within a cluster, its medoid (the member closest to the cluster's mean direction) is
    its most typical example. Ties in size go to the smaller cluster id. With fewer than ``B`` clusters the
    next most central member of each cluster is taken, round by round.

    Needs cluster ids (``fit(..., cluster_ids=...)`` or a prior's). One row is shared by all queries.

    Notes
    -----
    ``fit``: ``O(N d)``; ``select``: ``O(N log N)`` at most (the round-robin fill), ``O(K log K)`` usually.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import CoverSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> clusters = np.repeat([0, 1, 2], 4)  # latent cluster ids, e.g. from LatentClusterer
    >>> sel = CoverSelector().fit(pool, cluster_ids=clusters).select(query, 3)
    >>> sel.indices, sel.clusters_covered  # one medoid per cluster, whatever the query
    (array([[3, 4, 9]]), array([3]))
    """

    needs_cluster_ids = True

    name = "cover"
    query_dependent = False

    def __init__(self) -> None:
        pass

    def _validate_params(self) -> None:
        return None

    def _fit(self) -> None:
        if self.cluster_ids_ is None:
            raise ValueError(
                "CoverSelector needs the pool's cluster ids: fit(pool, cluster_ids=...) or give a prior"
            )
        self.centrality_ = centrality(self.pool_, self.cluster_ids_)
        self.cluster_sizes_ = np.bincount(self.cluster_ids_).astype(np.int64)

    def ranking(self) -> np.ndarray:
        """Pool indices in the order they are chosen, shape (N,): round ``r`` takes the ``r``-th most central
        member of every cluster that has one, clusters in size order (ties: smaller id, then smaller
        index)."""
        ids = self.cluster_ids_
        k = self.cluster_sizes_.size
        cluster_rank = np.empty(k, dtype=np.int64)
        cluster_rank[np.lexsort((np.arange(k), -self.cluster_sizes_))] = np.arange(k)
        by_cluster = np.lexsort((np.arange(ids.size), -self.centrality_, ids))
        start = np.concatenate([[0], np.cumsum(self.cluster_sizes_)[:-1]])
        depth = np.empty(ids.size, dtype=np.int64)
        depth[by_cluster] = np.arange(ids.size) - start[ids[by_cluster]]
        return np.lexsort((np.arange(ids.size), cluster_rank[ids], depth))

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        chosen = self.ranking()[:budget]
        covered = self.cluster_sizes_[self.cluster_ids_[chosen]] / float(self.n_pool_)
        return chosen[None, :], covered[None, :], {}

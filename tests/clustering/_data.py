"""Small shared inputs for the clustering tests."""

from __future__ import annotations


from ucs.clustering.synthetic import make_planted_embeddings


def planted(n: int = 400, d: int = 96, seed: int = 0, **kw):
    return make_planted_embeddings(
        n_samples=n, n_features=d, n_clusters=kw.pop("n_clusters", 12), random_state=seed, **kw
    )


def small_params(**kw):
    p = dict(pca_dim=32, n_atoms=16, dbscan_k=5, dbscan_q=0.2, random_state=0)
    p.update(kw)
    return p

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group
from sklearn.metrics import adjusted_rand_score

from ucs.clustering import JointLatentClusterer

from ._data import planted, small_params


def test_rotated_copies_align_and_cluster_like_one_model():
    E, y = planted(n=500, d=40, seed=0, noise=0.05, n_clusters=6)
    Q = ortho_group.rvs(40, random_state=1).astype(np.float32)
    j = JointLatentClusterer(**small_params(dbscan_q=0.9), joint_iter=4).fit([E, E @ Q])
    assert j.rotations_.shape == (2, 32, 32)
    for B in j.rotations_:
        np.testing.assert_allclose(B.T @ B, np.eye(32), atol=1e-8)
    # both copies become the same matrix after alignment
    Z = [p.transform(M) / s for p, M, s in zip(j.pcas_, [E, E @ Q], j.model_scales_)]
    A0, A1 = Z[0] @ j.rotations_[0], Z[1] @ j.rotations_[1]
    assert np.linalg.norm(A0 - A1) / np.linalg.norm(A0) < 0.05
    assert len(j.objective_) == 5 and np.all(np.isfinite(j.objective_))
    assert adjusted_rand_score(j.labels_, y) > 0.9


def test_joint_input_checks():
    E, _ = planted(n=100)
    with pytest.raises(ValueError, match="same pool"):
        JointLatentClusterer(**small_params()).fit([E, E[:50]])
    with pytest.raises(ValueError, match="no dictionary"):
        JointLatentClusterer(**small_params(method="dbscan")).fit([E, E])
    with pytest.raises(ValueError, match="joint_iter"):
        JointLatentClusterer(**small_params(), joint_iter=0).fit([E, E])

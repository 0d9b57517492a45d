from __future__ import annotations

import json

import numpy as np
import pytest

from ucs.clustering import JointLatentClusterer, LatentClusterer, StaleLabelsError

from ._data import planted, small_params


@pytest.mark.parametrize(
    "kw", [{}, {"standardize": True, "coding": "omp"}, {"method": "dbscan"}, {"backend": "sklearn"}]
)
def test_roundtrip_keeps_labels_and_recut(tmp_path, kw):
    E, _ = planted(seed=4)
    c = LatentClusterer(**small_params(**kw)).fit(E)
    c.save(tmp_path / "c")
    assert {p.name for p in (tmp_path / "c").iterdir()} == {"meta.json", "state.npz", "labels.npy"}
    json.loads((tmp_path / "c" / "meta.json").read_text())  # plain JSON
    with np.load(tmp_path / "c" / "state.npz", allow_pickle=False):
        pass
    d = LatentClusterer.load(tmp_path / "c", E=E)
    np.testing.assert_array_equal(d.labels_, c.labels_)
    assert d.get_params() == c.get_params() and d.eps_ == c.eps_
    np.testing.assert_array_equal(d.recut(0.4), c.recut(0.4))
    if c.pca_ is not None:
        np.testing.assert_array_equal(d.pca_.transform(E), c.pca_.transform(E))


def test_stale_embeddings_are_detected(tmp_path):
    E, _ = planted(seed=5)
    LatentClusterer(**small_params()).fit(E).save(tmp_path)
    E2 = E.copy()
    E2[0, 0] += 1e-3
    with pytest.raises(StaleLabelsError):
        LatentClusterer.load(tmp_path, E=E2)
    assert not LatentClusterer.load(tmp_path).check_input(E2)


def test_joint_roundtrip(tmp_path):
    E, _ = planted(seed=6)
    j = JointLatentClusterer(**small_params(), joint_iter=2).fit([E, E[:, ::-1] * 2.0])
    j.save(tmp_path)
    k = LatentClusterer.load(tmp_path, E=[E, E[:, ::-1] * 2.0])
    assert isinstance(k, JointLatentClusterer)
    np.testing.assert_array_equal(k.labels_, j.labels_)
    np.testing.assert_array_equal(k.rotations_, j.rotations_)

from __future__ import annotations

import numpy as np
import pytest

from ucs.clustering import cluster_report, coverage_exposure


def test_coverage_exposure_by_hand():
    labels = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])  # sizes 3, 2, 1, 4
    ce = coverage_exposure(labels, np.array([[0, 1, 5], [3, 6, 2]]))
    np.testing.assert_array_equal(ce.unique_clusters, [2, 3])
    np.testing.assert_allclose(ce.mean_cluster_size, [(3 + 3 + 1) / 3, (2 + 4 + 3) / 3])
    np.testing.assert_allclose(ce.mean_inverse_size, [(1 / 3 + 1 / 3 + 1) / 3, (1 / 2 + 1 / 4 + 1 / 3) / 3])
    one = coverage_exposure(labels, [5])
    assert one.summary() == {"unique_clusters": 1.0, "mean_cluster_size": 1.0, "mean_inverse_size": 1.0}
    with pytest.raises(ValueError, match="selected_indices"):
        coverage_exposure(labels, [10])


def test_coverage_exposure_adds_phi_from_the_estimator_and_row_spectra():
    from ucs.clustering.diagnostics import row_spectra
    from ucs.estimators import UnseenCoverage

    rng = np.random.default_rng(5)
    ids = rng.integers(0, 12, size=80)
    S = np.stack([rng.choice(80, size=10, replace=False) for _ in range(6)])
    cov = UnseenCoverage("paper", integer=True).fit(ids)
    ce = coverage_exposure(ids, S, cov)
    F = row_spectra(ids, S)
    for r in range(S.shape[0]):
        assert ce.phi[r] == cov.phi(S[r])
        assert ce.unique_clusters[r] == len(set(ids[S[r]].tolist())) == F[r, 1:].sum()
        assert F[r] @ np.arange(11) == 10  # every demonstration counted once
    assert coverage_exposure(ids, S).phi is None and "phi" not in coverage_exposure(ids, S).summary()
    assert ce.summary()["phi"] == pytest.approx(float(ce.phi.mean()))
    assert set(ce.columns()) == {"unique_clusters", "mean_cluster_size", "mean_inverse_size", "phi"}


def test_cluster_report_by_hand():
    labels = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    y = np.array(["a", "a", "b", "c", "c", "d", "e", "e", "e", "a"])
    r = cluster_report(labels, y=y, texts=[f"t{i}" for i in range(10)], top=2)
    assert (r.n_items, r.n_clusters, r.n_singletons) == (10, 4, 1)
    assert r.size_spectrum == {1: 1, 2: 1, 3: 1, 4: 1}
    assert r.items_by_size[1] == 1 and r.items_by_size[4] == 4 and r.items_by_size[0] == 0
    assert r.largest_sizes == [4, 3, 2, 1]
    assert [c.cluster for c in r.top] == [3, 0]
    assert (
        r.top[0].purity == 0.75 and r.top[0].majority_label == "e" and r.top[0].examples == ["t6", "t7", "t8"]
    )
    assert r.purity == pytest.approx((2 + 2 + 1 + 3) / 10)
    assert "| 3 | 4 | 0.75 | e |" in r.to_markdown()
    with pytest.raises(ValueError, match="noise"):
        cluster_report(np.array([0, -1]))

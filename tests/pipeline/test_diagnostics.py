import numpy as np
import pytest

from ucs.estimators import UnseenCoverage
from ucs.pipeline import coverage_markdown, coverage_stats, row_spectra, summarize_coverage


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_row_spectra_match_a_direct_count(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 7, size=60)
    S = rng.integers(0, 60, size=(25, 9))
    F = row_spectra(ids, S)
    for r in range(S.shape[0]):
        _, counts = np.unique(ids[S[r]], return_counts=True)
        expect = np.bincount(counts, minlength=10)
        expect[0] = 0
        np.testing.assert_array_equal(F[r], expect)


def test_coverage_stats_against_the_estimator():
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 12, size=80)
    S = np.stack([rng.choice(80, size=10, replace=False) for _ in range(6)])
    cov = UnseenCoverage("paper", integer=True).fit(ids)
    st = coverage_stats(ids, S, cov)
    sizes = np.bincount(ids)
    for r in range(S.shape[0]):
        assert st["phi"][r] == cov.phi(S[r])
        assert st["unique_clusters"][r] == len(set(ids[S[r]].tolist()))
        assert st["mean_cluster_size"][r] == pytest.approx(sizes[ids[S[r]]].mean())
        assert st["mean_inverse_size"][r] == pytest.approx((1.0 / sizes[ids[S[r]]]).mean())


def test_coverage_stats_are_the_columns_of_coverage_exposure():
    from ucs.clustering import coverage_exposure

    rng = np.random.default_rng(7)
    ids = rng.integers(0, 9, size=50)
    S = rng.integers(0, 50, size=(4, 6))
    cov = UnseenCoverage("paper", integer=True).fit(ids)
    st, ce = coverage_stats(ids, S, cov), coverage_exposure(ids, S, cov).columns()
    assert st.keys() == ce.keys() and all(np.array_equal(st[k], ce[k]) for k in st)
    assert all(v.dtype == np.float64 for v in st.values())
    with pytest.raises(ValueError, match="selected_indices"):  # an index outside the pool is refused
        coverage_stats(ids, np.array([[0, 50]]))


def test_zero_budget_and_markdown():
    st = coverage_stats(np.array([0, 1, 1]), np.zeros((2, 0), dtype=int))
    assert st["unique_clusters"].tolist() == [0, 0]
    table = {
        "dpp": {
            "42": {"unique_clusters": 3.0, "mean_cluster_size": 2.0, "mean_inverse_size": 0.5, "phi": 7.0},
            "43": {"unique_clusters": 5.0, "mean_cluster_size": 2.0, "mean_inverse_size": 0.5, "phi": 9.0},
        }
    }
    md = coverage_markdown(table)
    assert "| dpp | 4 ± 1 | 2 ± 0 | 0.5 ± 0 | 8 ± 1 | 2 |" in md
    assert summarize_coverage({"a": np.array([1.0, 3.0])}) == {"a": 2.0}

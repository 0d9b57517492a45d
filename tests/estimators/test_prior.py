import numpy as np
import pytest

from ucs.estimators import GoodTuringPrior, fit_spectrum_model, smooth_spectrum

# pool cluster sizes 1,1,1,2,2,3 (N = 10): g = (3, 2, 1)
IDS = np.array([0, 1, 2, 3, 3, 4, 4, 5, 5, 5])


def test_good_turing_hand_values_raw_spectrum():
    prior = GoodTuringPrior(smoothing=None, epsilon=1e-12).fit(IDS)
    # s* = (s+1) g_{s+1} / g_s : 2*2/3, 3*1/2, 4*0/1 -> not positive -> s = 3
    np.testing.assert_allclose(prior.adjusted_counts_[1:], [4 / 3, 1.5, 3.0])
    w_raw = 1.0 / (np.array([4 / 3, 4 / 3, 4 / 3, 1.5, 1.5, 3.0]) / 10)
    np.testing.assert_allclose(prior.weights_, w_raw / w_raw.mean(), rtol=1e-9)
    assert prior.weights_.mean() == pytest.approx(1.0)
    np.testing.assert_allclose(
        prior.item_log_weights_, np.log(prior.weights_)[[0, 1, 2, 3, 3, 4, 4, 5, 5, 5]]
    )


def test_spectrum_rarity_b2_and_inverse_size_b1():
    b2 = GoodTuringPrior(variant="spectrum_rarity", smoothing=None, epsilon=1e-12).fit(IDS)
    w = 1.0 / np.array([3, 3, 3, 2, 2, 1], dtype=float)
    np.testing.assert_allclose(b2.weights_, w / w.mean())
    b1 = GoodTuringPrior(variant="inverse_size").fit(IDS)
    w = 1.0 / np.array([1, 1, 1, 2, 2, 3], dtype=float)
    np.testing.assert_allclose(b1.weights_, w / w.mean())


def test_power_law_is_fitted_at_actual_sizes():
    # two sizes only, 1 and 4, with g_1 = 8 and g_4 = 1: the fit passes through both points
    model = fit_spectrum_model([0, 8, 0, 0, 1], "power_law")
    np.testing.assert_allclose(model([1, 4]), [8.0, 1.0], rtol=1e-9)
    # the authors' code regresses against bin positions (1, 2) instead and would give g(2) = 1
    assert model(2)[()] == pytest.approx(8 * 2**-1.5)


def test_good_turing_prior_with_power_law_uses_the_fit():
    prior = GoodTuringPrior().fit(IDS)
    ghat = prior.smoothed_spectrum_
    s_star = 2 * ghat[2] / ghat[1]
    assert prior.adjusted_counts_[1] == pytest.approx(s_star)
    assert np.isfinite(prior.weights_).all() and (prior.weights_ > 0).all()


@pytest.mark.parametrize("kind", ["power_law", "poisson", "negbin"])
def test_smoothers_are_nonnegative(kind):
    f = np.array([0, 40, 12, 5, 2, 0, 1, 0, 0, 1])
    out = smooth_spectrum(f, kind)
    assert out.shape == f.shape and out[0] == 0 and (out >= 0).all() and np.isfinite(out).all()


def test_poisson_smoother_matches_mean():
    f = np.array([0, 40, 12, 5, 2])
    model = fit_spectrum_model(f, "poisson")
    lam = model.params["lam"]
    assert lam / (1 - np.exp(-lam)) == pytest.approx((f * np.arange(5)).sum() / f.sum())


def test_degenerate_spectra():
    assert fit_spectrum_model([0, 5], "power_law") is None  # one size only
    assert fit_spectrum_model([0], "poisson") is None
    prior = GoodTuringPrior().fit([0, 1, 2, 3])  # all singletons
    np.testing.assert_allclose(prior.weights_, 1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"variant": "x"}, "variant"),
        ({"smoothing": "x"}, "smoothing"),
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GoodTuringPrior(**kwargs).fit(IDS)


def test_empty_pool_raises():
    with pytest.raises(ValueError, match="cluster_ids is empty"):
        GoodTuringPrior().fit([])


def test_weights_are_bit_identical_under_relabelling():
    rng = np.random.default_rng(3)
    ids = rng.zipf(1.5, size=3000) % 400
    perm = rng.permutation(400)
    a = GoodTuringPrior().fit(ids)
    b = GoodTuringPrior().fit(perm[ids])
    assert np.array_equal(a.item_log_weights_, b.item_log_weights_)

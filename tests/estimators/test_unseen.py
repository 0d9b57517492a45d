import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ucs.estimators import ESTIMATORS, make_estimator, spectrum_from_multiplicities

# SPEC §3: ten demonstrations, cluster multiplicities -> Φ with the integer floor (t=5, M=20, α=1)
PAPER_TABLE = [
    ([1] * 10, 58),
    ([2] + [1] * 8, 26),
    ([3] + [1] * 7, 126),
    ([5] + [1] * 5, 753),
    ([9, 1], 5556),
    ([8, 1, 1], 3),
]


def phi_int(mult, **params):
    est = make_estimator("paper", integer=True, **params)
    return len(mult) + est.unseen(spectrum_from_multiplicities(mult))


@pytest.mark.parametrize("mult, expected", PAPER_TABLE)
def test_paper_table_to_the_integer(mult, expected):
    assert phi_int(mult) == expected


def test_paper_coefficients():
    c = make_estimator("paper", t=5, bin_size=20, alpha=1).coefficients()
    assert c[0] == 0 and c.size == 21
    # the values as published, to the digits given
    assert [round(x, 2) for x in c[1:4]] == [4.87, -21.74, 83.92]
    assert round(c[4], 1) == -270.9


def _paper_by_hand(mult, t, m, alpha=1.0):
    """Û straight from the definition with math.comb, no scipy, no caching."""
    f = {}
    for x in mult:
        f[x] = f.get(x, 0) + 1
    q = alpha / (t + alpha)
    total = 0.0
    for s, fs in f.items():
        if s > m:
            continue
        w = sum(math.comb(m, j) * q**j * (1 - q) ** (m - j) for j in range(s, m + 1))
        total += -((-t) ** s) * w * fs
    return math.floor(max(0.0, total))


@pytest.mark.parametrize("t, m", [(2, 10), (4, 10), (8, 10), (4, 5), (4, 20)])
@pytest.mark.parametrize("mult", [m for m, _ in PAPER_TABLE] + [[2, 2, 2, 2, 2], [4, 3, 2, 1]])
def test_paper_sensitivity_settings(t, m, mult):
    est = make_estimator("paper", t=t, bin_size=m, integer=True)
    assert est.unseen(spectrum_from_multiplicities(mult)) == _paper_by_hand(mult, t, m)


def test_paper_alpha_changes_q():
    a1 = make_estimator("paper", alpha=1.0).coefficients()
    a2 = make_estimator("paper", alpha=2.0).coefficients()
    # q = 2/7 instead of 1/6: P(Bin(20, 2/7) >= 1) is larger
    assert a2[1] == pytest.approx(5 * (1 - (5 / 7) ** 20))
    assert a1[1] == pytest.approx(5 * (1 - (5 / 6) ** 20))


def test_paper_ignores_bins_above_m():
    est = make_estimator("paper", t=2, bin_size=3)
    assert est.unseen(spectrum_from_multiplicities([7, 1])) == est.unseen(spectrum_from_multiplicities([1]))


# --- hand-worked values on small spectra -----------------------------------------------------


def test_good_toulmin_hand_value():
    # f1 = 3, f2 = 1 (n = 5), t = 0.5: -(-0.5*3 + 0.25*1) = 1.25
    est = make_estimator("good_toulmin", t=0.5)
    assert est.unseen([0, 3, 1]) == pytest.approx(1.25)


def test_good_toulmin_clamped_to_n_t():
    est = make_estimator("good_toulmin", t=5)
    assert est.unseen([0, 10]) == pytest.approx(50.0)  # raw 50, cap n*t = 50
    assert est.raw_unseen_batch(np.array([[0, 10]]), 10)[0] == pytest.approx(50.0)
    assert est.unseen([0, 0, 5]) == 0.0  # raw -125 -> 0


def test_chao1_hand_value():
    # f1 = 3, f2 = 1, n = 5: (4/5) * 3 * 2 / (2 * 2) = 1.2
    assert make_estimator("chao1").unseen([0, 3, 1]) == pytest.approx(1.2)
    assert make_estimator("chao1").unseen([0, 1]) == 0.0  # n = 1


def test_binomial_hand_value():
    # t = 2, n = 10: k = ceil(0.5 log3 40) = 2, q = 1/2: w = (3/4, 1/4); c = (1.5, -1)
    est = make_estimator("binomial", t=2)
    np.testing.assert_allclose(est.coefficients(10), [0, 1.5, -1.0])
    assert est.unseen([0, 4, 3]) == pytest.approx(3.0)


def test_efron_thisted_hand_value():
    # t = 2, n = 10: k = ceil(0.5 log2 40) = 3, q = 1/3: c = (38, -28, 8)/27
    est = make_estimator("efron_thisted", t=2)
    np.testing.assert_allclose(est.coefficients(10), np.array([0, 38, -28, 8]) / 27)
    assert est.unseen([0, 4, 3]) == pytest.approx(68 / 27)


def test_poisson_hand_value():
    t, n = 2.0, 10
    r = math.log(n * (t + 1) ** 2 / (t - 1)) / (2 * t)
    w1 = 1 - math.exp(-r)
    w2 = 1 - math.exp(-r) * (1 + r)
    expected = t * w1 * 4 - t * t * w2 * 3
    assert make_estimator("poisson", t=t).unseen([0, 4, 3]) == pytest.approx(expected)


@pytest.mark.parametrize("name", ["poisson", "binomial", "efron_thisted"])
def test_osw_reduce_to_good_toulmin_for_small_t(name):
    f = [0, 4, 3, 1]
    assert make_estimator(name, t=0.7).unseen(f) == pytest.approx(
        make_estimator("good_toulmin", t=0.7).unseen(f)
    )


@pytest.mark.parametrize("name", ["poisson", "binomial", "efron_thisted"])
def test_five_doubletons_are_negative_then_clamped(name):
    est = make_estimator(name, t=5)
    raw = est.raw_unseen_batch(np.array([[0, 0, 5]]), 10)[0]
    assert -11 < raw < -8
    assert est.unseen([0, 0, 5]) == 0.0


# --- properties ----------------------------------------------------------------------------

spectra = st.lists(st.integers(0, 6), min_size=2, max_size=12).map(lambda xs: [0] + xs)


@settings(max_examples=60, deadline=None)
@given(spectra, st.sampled_from(ESTIMATORS), st.floats(0.1, 10))
def test_clamped_nonnegative_and_finite(f, name, t):
    est = make_estimator(name, t=t)
    u = est.unseen(f)
    assert math.isfinite(u) and u >= 0


@settings(max_examples=60, deadline=None)
@given(spectra, st.sampled_from(["poisson", "binomial", "efron_thisted", "good_toulmin"]), st.data())
def test_guaranteed_estimators_within_0_nt(f, name, data):
    n = int((np.arange(len(f)) * np.array(f)).sum())
    hi = max(1.0, math.log(max(n, 2)))
    t = data.draw(st.floats(0.05, hi if name != "good_toulmin" else 1.0))
    u = make_estimator(name, t=t).unseen(f)
    assert 0.0 <= u <= n * t + 1e-9


@settings(max_examples=60, deadline=None)
@given(spectra, spectra, st.sampled_from(["paper", "poisson", "binomial", "efron_thisted", "good_toulmin"]))
def test_linear_in_the_spectrum(f, g, name):
    width = max(len(f), len(g))
    F = np.zeros((3, width), dtype=np.int64)
    F[0, : len(f)] = f
    F[1, : len(g)] = g
    F[2] = F[0] + F[1]
    est = make_estimator(name, t=3.0)
    raw = est.raw_unseen_batch(F, 25)  # OSW coefficients depend on n: hold n fixed
    assert raw[2] == pytest.approx(raw[0] + raw[1], rel=1e-9, abs=1e-6 * (1 + np.abs(raw).max()))


@pytest.mark.parametrize("smoothing", ["power_law", "poisson", "negbin"])
def test_paper_smoothing_runs_and_is_finite(smoothing):
    est = make_estimator("paper", smoothing=smoothing)
    for mult in ([1] * 10, [3, 2, 2, 1, 1, 1], [9, 1], [1]):
        u = est.unseen(spectrum_from_multiplicities(mult))
        assert math.isfinite(u) and u >= 0


def test_coefficients_are_cached_and_read_only():
    est = make_estimator("binomial", t=3)
    a, b = est.coefficients(40), est.coefficients(40)
    assert a is b
    with pytest.raises(ValueError):
        a[1] = 0.0


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, params, param",
    [
        ("paper", {"t": 0}, "t"),
        ("paper", {"t": -1}, "t"),
        ("paper", {"t": float("nan")}, "t"),
        ("binomial", {"t": float("inf")}, "t"),
        ("paper", {"bin_size": 0}, "bin_size"),
        ("paper", {"bin_size": 2.5}, "bin_size"),
        ("paper", {"alpha": 0.5}, "alpha"),
        ("paper", {"alpha": 2.5}, "alpha"),
        ("paper", {"alpha": float("nan")}, "alpha"),
        ("paper", {"smoothing": "spline"}, "smoothing"),
        ("chao1", {"bin_size": 3}, "bin_size"),
    ],
)
def test_bad_parameters_name_the_parameter(name, params, param):
    with pytest.raises(ValueError, match=param):
        make_estimator(name, **params)


def test_unknown_estimator_lists_choices():
    with pytest.raises(ValueError, match="estimator must be one of"):
        make_estimator("jackknife")


def test_aliases():
    assert make_estimator("sgt").name == "paper"
    assert make_estimator("osw").name == "binomial"

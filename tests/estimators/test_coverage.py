import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ucs.estimators import DESIGNS, ESTIMATORS, UnseenCoverage, make_estimator, spectrum

ESTIMATOR_PARAMS = [(name, {}) for name in ESTIMATORS] + [
    ("paper", {"integer": True}),
    ("paper", {"smoothing": "power_law"}),
    ("paper", {"t": 2.0, "bin_size": 5}),
    ("binomial", {"t": 0.8}),
]


@st.composite
def pools_and_sequences(draw):
    n_items = draw(st.integers(1, 40))
    n_clusters = draw(st.integers(1, 12))
    ids = draw(st.lists(st.integers(0, n_clusters - 1), min_size=n_items, max_size=n_items))
    seq = draw(st.lists(st.integers(0, n_items - 1), min_size=1, max_size=15))
    return np.array(ids), seq


@settings(max_examples=40, deadline=None)
@given(pools_and_sequences(), st.sampled_from(ESTIMATOR_PARAMS), st.sampled_from(DESIGNS))
def test_incremental_gain_equals_recomputation_exactly(case, est, design):
    ids, seq = case
    name, params = est
    cov = UnseenCoverage(name, design=design, **params).fit(ids)
    state = cov.new_state()
    candidates = np.arange(ids.size)
    for item in seq:
        gains = state.gains(candidates)
        base = cov.phi(state.items) if state.items else 0.0
        recomputed = np.array([cov.phi(state.items + [j]) for j in candidates]) - base
        assert np.array_equal(gains, recomputed)
        state.add(item)
        assert state.phi == cov.phi(state.items)


@settings(max_examples=30, deadline=None)
@given(pools_and_sequences(), st.sampled_from(ESTIMATOR_PARAMS))
def test_undo_restores_everything(case, est):
    ids, seq = case
    name, params = est
    cov = UnseenCoverage(name, **params).fit(ids)
    state = cov.new_state()
    history = []
    for item in seq:
        history.append((state.phi, state.gains(np.arange(ids.size)).copy(), state.spectrum.tolist()))
        state.add(item)
    for phi, gains, f in reversed(history):
        state.undo()
        assert state.phi == phi
        assert np.array_equal(state.gains(np.arange(ids.size)), gains)
        assert state.spectrum.tolist() == f
    assert state.n == 0


def test_reset_reuses_the_state():
    ids = np.array([0, 0, 1, 2, 2, 2, 3])
    cov = UnseenCoverage("paper").fit(ids)
    state = cov.new_state()
    for i in (0, 1, 3):
        state.add(i)
    first = state.phi
    state.reset()
    assert state.n == 0 and state.phi == 0.0 and state.items == []
    for i in (0, 1, 3):
        state.add(i)
    assert state.phi == first


@settings(max_examples=30, deadline=None)
@given(pools_and_sequences(), st.sampled_from(ESTIMATOR_PARAMS), st.randoms(use_true_random=False))
def test_invariant_under_relabelling(case, est, rnd):
    ids, seq = case
    name, params = est
    labels = np.unique(ids)
    new = rnd.sample(range(1000), labels.size)
    mapping = dict(zip(labels.tolist(), new))
    relabelled = np.array([mapping[x] for x in ids.tolist()])
    a = UnseenCoverage(name, **params).fit(ids)
    b = UnseenCoverage(name, **params).fit(relabelled)
    assert a.phi(seq) == b.phi(seq)
    sa, sb = a.new_state(), b.new_state()
    for item in seq:
        sa.add(item)
        sb.add(item)
        assert np.array_equal(sa.gains(np.arange(ids.size)), sb.gains(np.arange(ids.size)))


def test_designs():
    ids = np.array([0, 0, 0, 1, 2, 3, 3])
    subset = [0, 1, 3, 4, 5, 6]
    full = UnseenCoverage("paper").fit(ids).report(subset)
    assert full.k_seen == 4 and full.spectrum == spectrum(ids[subset]).tolist()
    assert UnseenCoverage("paper", design="seen_only").fit(ids).phi(subset) == 4
    assert UnseenCoverage("paper", design="unseen_only").fit(ids).phi(subset) == pytest.approx(full.unseen)
    assert UnseenCoverage("paper", design="ratio").fit(ids).phi(subset) == pytest.approx(full.unseen / 4)
    assert full.phi == pytest.approx(full.k_seen + full.unseen)


def test_pickle_roundtrip():
    cov = UnseenCoverage("binomial", t=3).fit([0, 1, 1, 2])
    again = pickle.loads(pickle.dumps(cov))
    assert again.phi([0, 1, 2]) == cov.phi([0, 1, 2])


def test_estimator_instance_is_accepted():
    est = make_estimator("paper", t=4, bin_size=10)
    cov = UnseenCoverage(est).fit([0, 1, 2, 2])
    assert cov.phi([0, 2, 3]) == UnseenCoverage("paper", t=4, bin_size=10).fit([0, 1, 2, 2]).phi([0, 2, 3])


# --- bad input ----------------------------------------------------------------------------


def test_empty_subset_raises():
    cov = UnseenCoverage().fit([0, 1])
    with pytest.raises(ValueError, match="subset is empty"):
        cov.phi([])
    assert cov.new_state().phi == 0.0


@pytest.mark.parametrize(
    "kwargs, fit_ids, match",
    [
        ({"design": "sum"}, [0, 1], "design"),
        ({"t": 0}, [0, 1], "t"),
        ({"bin_size": 0}, [0, 1], "bin_size"),
        ({"alpha": 3}, [0, 1], "alpha"),
        ({}, [0, -1], "cluster_ids"),
        ({}, [0.5, 1], "cluster_ids"),
        ({}, [np.nan, 1], "cluster_ids"),
        ({"estimator": "nope"}, [0], "estimator"),
    ],
)
def test_bad_input_raises_naming_parameter(kwargs, fit_ids, match):
    with pytest.raises(ValueError, match=match):
        UnseenCoverage(**kwargs).fit(fit_ids)


def test_subset_outside_pool_and_unfitted():
    cov = UnseenCoverage().fit([0, 1, 2])
    with pytest.raises(ValueError, match="subset contains index 3"):
        cov.phi([0, 3])
    with pytest.raises(ValueError, match="subset"):
        cov.phi([0, -2])
    with pytest.raises(RuntimeError, match="not fitted"):
        UnseenCoverage().phi([0])
    with pytest.raises(ValueError, match="outside the pool"):
        cov.new_state().add(7)
    with pytest.raises(IndexError):
        cov.new_state().undo()

"""The early-stopping rule of a comparison: each test exact or bounded, and its error rate held in
simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from ucs.evaluation.sequential import EliminationRule, Race, leaves, simulate


@pytest.mark.parametrize("n_plus, n_minus", [(0, 9), (2, 12), (5, 15), (10, 10), (12, 3)])
def test_binary_scores_use_the_exact_sign_test_on_discordant_queries(n_plus, n_minus):
    cell = np.r_[np.ones(n_plus), np.zeros(n_minus), np.ones(7), np.zeros(4)]
    leader = np.r_[np.zeros(n_plus), np.ones(n_minus), np.ones(7), np.zeros(4)]  # 11 concordant queries
    p = binomtest(n_plus, n_plus + n_minus, 0.5, alternative="less").pvalue
    for delta in (0.001, 0.01, 0.05, 0.2):
        assert leaves(cell, leader, delta) == (p <= delta)


def test_graded_scores_use_the_empirical_bernstein_bound():
    rng = np.random.default_rng(0)
    leader = rng.uniform(0.5, 1.0, 400)
    assert leaves(leader - 0.3, leader, 0.01)  # far worse on every query
    assert not leaves(leader - 0.01, leader, 0.01)  # barely worse: not beyond doubt at n = 400
    assert not leaves(leader, leader - 0.3, 0.01)  # better never leaves
    same = rng.uniform(0, 1, 50)
    assert not leaves(same, same, 0.5)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(cell=[0.5, 2.0], leader=[0.1, 0.2]), "lie in \\[0, 1\\]"),
        (dict(cell=[0.5], leader=[0.1, 0.2]), "aligned"),
        (dict(cell=[0.5, np.nan], leader=[0.1, 0.2]), "lie in \\[0, 1\\]"),
    ],
)
def test_bad_scores_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        leaves(np.asarray(bad["cell"]), np.asarray(bad["leader"]), 0.05)
    with pytest.raises(ValueError, match="delta"):
        leaves(np.zeros(2), np.zeros(2), 0.0)


def test_the_level_of_each_test_is_bonferroni_over_cells_and_rounds():
    assert EliminationRule(0.05, 5, 10).delta == pytest.approx(0.05 / 40)
    assert EliminationRule(0.05, 5, 10, correction="none").delta == 0.05
    for bad in (dict(alpha=0.0), dict(n_cells=0), dict(max_rounds=0), dict(correction="holm")):
        with pytest.raises(ValueError):
            EliminationRule(**{"alpha": 0.05, "n_cells": 3, "max_rounds": 2, **bad})


def test_a_race_keeps_the_leader_and_counts_its_looks():
    scores = np.zeros((3, 60))
    scores[0] = 1.0  # always right
    scores[1, :30] = 1.0  # right half the time
    race = Race(EliminationRule(0.05, 3, 2))
    gone = race.update(scores)
    assert race.active[0] and 0 not in gone and set(gone) == {1, 2}
    assert race.decided and race.left_at == {1: 1, 2: 1}
    race.update(scores)
    with pytest.raises(ValueError, match="planned for 2 looks"):
        race.update(scores)


def _slack(alpha: float, n: int) -> float:
    return 3.0 * math.sqrt(alpha * (1 - alpha) / n)


@pytest.mark.parametrize(
    "accuracies",
    [
        [0.52, 0.5, 0.5, 0.5, 0.5],  # a best cell barely ahead: the hardest case for the rule
        [0.6, 0.6, 0.55, 0.5, 0.4],  # tied best cells
    ],
)
def test_the_error_rate_holds_in_simulation_and_fails_without_the_correction(accuracies):
    n = 300
    kw = dict(n_queries=200, round_size=10, alpha=0.05, n_trials=n, seed=1)
    corrected = simulate(accuracies, **kw)
    assert corrected["error"] <= 0.05 + _slack(0.05, n), corrected
    if accuracies[0] > accuracies[1]:
        naive = simulate(accuracies, correction="none", **kw)
        assert naive["error"] > 0.05 + _slack(0.05, n), naive  # the simulation can see a broken rule


def test_the_race_saves_prompts_when_the_answer_is_clear():
    out = simulate([0.9, 0.5, 0.4, 0.3], n_queries=200, round_size=20, n_trials=50, seed=2)
    assert out["error"] == 0.0 and out["decided"] > 0.9 and out["saved"] > 0.4, out


def test_simulation_is_deterministic_per_seed_and_takes_graded_scores():
    a = simulate([0.7, 0.5], n_queries=60, round_size=20, n_trials=20, seed=3, scores="graded")
    assert a == simulate([0.7, 0.5], n_queries=60, round_size=20, n_trials=20, seed=3, scores="graded")
    assert 0.0 <= a["error"] <= 1.0
    with pytest.raises(ValueError, match="binary"):
        simulate([0.7, 0.5], n_queries=10, round_size=5, n_trials=1, scores="other")

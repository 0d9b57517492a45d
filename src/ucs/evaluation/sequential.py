"""Deciding early: eliminate a comparison's cells in rounds without losing the best one more often than α.

A comparison answers its queries in rounds. After each round every cell still in the race is compared with the
current leader (the active cell with the highest mean score) on the same queries, and it leaves when the
leader is better beyond doubt. The rule guarantees, for any number of cells and rounds fixed before the start,

    P(the truly best cell is ever eliminated) ≤ α,

when the queries of the rounds are drawn independently from one distribution (answer them in a seeded random
order) and each query's score lies in [0, 1]. With several equally good best cells, at least one of them
stays.

Notation: C cells, at most R rounds (planned before the start), scores s_{c,i} ∈ [0, 1] of cell c on query i,
paired differences d_i = s_{c,i} − s_{L,i} against the leader L on the n queries answered so far.

Why it holds. The best cell b can only leave through one of the C − 1 comparisons that contain it, at one of
at most R looks. Each test is run at level δ = α / ((C − 1) · R) (Bonferroni over cells and rounds), so the
union of its false eliminations has probability at most α, whichever cell happens to lead at each look.

The test of one pair, H0: E[d] ≥ 0 against E[d] < 0:

* **0/1 scores** (accuracy, exact match): the exact conditional sign test on the discordant queries (McNemar).
  With n₊ queries where the cell is right and the leader wrong and n₋ the reverse, the cell leaves when
  P(Binomial(n₊ + n₋, ½) ≤ n₊) ≤ δ. Given n₊ + n₋, E[d] ≥ 0 means a discordant query favours the cell with
  probability ≥ ½, so the test is exact for every n.
* **scores in [0, 1]** (token F1, JSON fields): the empirical Bernstein bound (Maurer & Pontil, 2009) on
  x_i = (d_i + 1) / 2 ∈ [0, 1]: the cell leaves when x̄ + √(2 V ln(2/δ) / n) + 7 ln(2/δ) / (3 (n − 1)) < ½,
  V the sample variance of x.

The simulation in :func:`simulate` (and ``benchmarks/compare/RESULTS_stopping.md``) checks the rate
empirically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence

import numpy as np
from scipy.stats import binom

__all__ = ["EliminationRule", "Race", "leaves", "simulate"]


def _is_binary(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)))


def leaves(cell: np.ndarray, leader: np.ndarray, delta: float) -> bool:
    """Whether ``cell`` is worse than ``leader`` beyond doubt at level ``delta`` (one-sided).

    Parameters
    ----------
    cell, leader : arrays of shape (n,)
        Scores in [0, 1] of the two cells on the same n queries, aligned.
    delta : float
        The level of this one test, in (0, 1).

    Notes
    -----
    Time O(n). 0/1 scores use the exact sign test on discordant queries, others the empirical Bernstein bound
    (module docstring).
    """
    a = np.asarray(cell, dtype=np.float64)
    b = np.asarray(leader, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"cell and leader must be aligned 1-d score arrays, got {a.shape} and {b.shape}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if a.size == 0:
        return False
    if np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)) or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores must lie in [0, 1]; rescale the metric before racing its cells")
    d = a - b
    if _is_binary(a, b):
        n_plus, n_minus = int(np.sum(d > 0)), int(np.sum(d < 0))
        n = n_plus + n_minus
        return n > 0 and float(binom.cdf(n_plus, n, 0.5)) <= delta
    n = d.size
    if n < 2:
        return False
    x = (d + 1.0) / 2.0
    log_term = np.log(2.0 / delta)
    upper = x.mean() + np.sqrt(2.0 * x.var(ddof=1) * log_term / n) + 7.0 * log_term / (3.0 * (n - 1))
    return bool(upper < 0.5)


@dataclass
class EliminationRule:
    """The level of each test for ``n_cells`` cells raced over at most ``max_rounds`` rounds at family level
    ``alpha``: δ = α / ((C − 1) · R). ``correction="none"`` tests every look at α itself, which does not keep
    the error rate (it exists to show, by simulation, that the correction is needed)."""

    alpha: float = 0.05
    n_cells: int = 2
    max_rounds: int = 1
    correction: str = "bonferroni"

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if self.n_cells < 1 or self.max_rounds < 1:
            raise ValueError(f"n_cells and max_rounds must be ≥ 1, got {self.n_cells} and {self.max_rounds}")
        if self.correction not in ("bonferroni", "none"):
            raise ValueError(f"correction must be 'bonferroni' or 'none', got {self.correction!r}")

    @property
    def delta(self) -> float:
        if self.correction == "none":
            return self.alpha
        return self.alpha / (max(self.n_cells - 1, 1) * self.max_rounds)


@dataclass
class Race:
    """The state of one race: which cells are active, who leads, when each cell left.

    ``update`` takes the score matrix of every query answered so far, shape (n_cells, n_queries), where the
    rows of active cells are complete (a cell answers every query of a round it takes part in) and rows of
    cells that left may hold NaN for the rounds after they left. Each call is one look; at most
    ``rule.max_rounds`` looks.
    """

    rule: EliminationRule
    active: np.ndarray = field(init=False)
    left_at: Dict[int, int] = field(default_factory=dict)
    looks: int = 0

    def __post_init__(self) -> None:
        self.active = np.ones(self.rule.n_cells, dtype=bool)

    def leader(self, scores: np.ndarray) -> int:
        """The active cell with the highest mean score (the lowest index among ties)."""
        means = np.where(
            self.active, np.nanmean(np.where(self.active[:, None], scores, 0.0), axis=1), -np.inf
        )
        return int(np.argmax(means))

    def update(self, scores: np.ndarray) -> List[int]:
        """One look after a round; returns the cells that leave now. Time O(C · n)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2 or scores.shape[0] != self.rule.n_cells:
            raise ValueError(f"scores must have shape ({self.rule.n_cells}, n_queries), got {scores.shape}")
        if self.looks >= self.rule.max_rounds:
            raise ValueError(f"this race was planned for {self.rule.max_rounds} looks; plan more rounds")
        self.looks += 1
        lead = self.leader(scores)
        gone = [
            c
            for c in np.flatnonzero(self.active)
            if c != lead and leaves(scores[c], scores[lead], self.rule.delta)
        ]
        for c in gone:
            self.active[c] = False
            self.left_at[int(c)] = self.looks
        return [int(c) for c in gone]

    @property
    def decided(self) -> bool:
        return int(self.active.sum()) == 1


def simulate(
    accuracies: Sequence[float],
    *,
    n_queries: int,
    round_size: int,
    alpha: float = 0.05,
    n_trials: int = 1000,
    correlation: float = 0.8,
    seed: int = 0,
    scores: str = "binary",
    correction: str = "bonferroni",
) -> Dict[str, float]:
    """Race cells of known accuracy ``n_trials`` times; the empirical error rate and the prompts saved.

    Each query has a latent difficulty shared by every cell (``correlation`` of the cells' answers, as for one
    model on the same queries); cell c answers correctly when a draw mixed from that difficulty and its own
    noise falls below its accuracy. ``scores="graded"`` draws scores in [0, 1] (a Beta around the same
    accuracy).

    Returns
    -------
    dict
        ``error``: the share of trials in which every best cell (highest accuracy) was eliminated, which the
        rule keeps ≤ α; ``any_best_left``: the share in which at least one of several tied best cells left (up
        to (number of best cells) × α; a tie's loser is as good as its winner); ``decided``: the share that
        ended with one cell; ``saved``: the mean share of cell × query answers not asked; ``best_won``: the
        share whose final leader is a best cell.

    Notes
    -----
    Time O(n_trials · C · n_queries).
    """
    acc = np.asarray(accuracies, dtype=np.float64)
    best = set(np.flatnonzero(acc == acc.max()).tolist())
    rounds = -(-n_queries // round_size)
    rng = np.random.default_rng(seed)
    errors = any_best_left = decided = won = 0
    saved = 0.0
    for _ in range(n_trials):
        s = _draw_scores(rng, acc, n_queries, correlation, scores)
        race = Race(EliminationRule(alpha, len(acc), rounds, correction))
        asked = 0
        for r in range(rounds):
            end = min((r + 1) * round_size, n_queries)
            asked += int(race.active.sum()) * (end - r * round_size)
            view = np.where(_answered_mask(race, r, round_size, end), s[:, :end], np.nan)
            race.update(view)
            if race.decided:
                break
        survivors = set(np.flatnonzero(race.active).tolist())
        errors += not (best & survivors)
        any_best_left += bool(best - survivors)
        decided += race.decided
        won += race.leader(np.where(np.isnan(s), 0.0, s)) in best
        saved += 1.0 - asked / (len(acc) * n_queries)
    return {
        "error": errors / n_trials,
        "any_best_left": any_best_left / n_trials,
        "decided": decided / n_trials,
        "saved": saved / n_trials,
        "best_won": won / n_trials,
    }


def _answered_mask(race: Race, r: int, round_size: int, end: int) -> np.ndarray:
    """Which (cell, query) answers exist by round ``r``: a cell that left after look t has its first t
    rounds."""
    n_cells = race.rule.n_cells
    mask = np.ones((n_cells, end), dtype=bool)
    for c, look in race.left_at.items():
        mask[c, look * round_size :] = False
    return mask


def _draw_scores(
    rng: np.random.Generator, acc: np.ndarray, n: int, correlation: float, kind: str
) -> np.ndarray:
    from scipy.stats import norm

    shared = rng.standard_normal(n)
    own = rng.standard_normal((acc.size, n))
    z = np.sqrt(correlation) * shared + np.sqrt(1.0 - correlation) * own
    u = norm.cdf(z)
    if kind == "binary":
        return (u < acc[:, None]).astype(np.float64)
    if kind == "graded":
        # a score whose mean is the accuracy: the quantile u of Beta(a, b) with a / (a + b) = acc
        from scipy.stats import beta

        a = 4.0 * acc[:, None]
        return 1.0 - beta.ppf(u, 4.0 - a + 1e-9, a + 1e-9)
    raise ValueError(f"scores must be 'binary' or 'graded', got {kind!r}")

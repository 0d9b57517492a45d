"""Branch and bound over a continuation trie finds exactly the argmax that scoring every continuation
finds."""

import numpy as np
import pytest

from ucs.lm.best_continuation import best_continuation
from ucs.lm.prefix_tree import build_trie


def _model(seed: int, V: int, peaked: float):
    """A fixed next-token distribution per path (a dictionary keyed by the path's tokens)."""
    rng = np.random.default_rng(seed)
    table = {}

    def logp(path):
        key = tuple(int(t) for t in path)
        if key not in table:
            z = rng.normal(size=V) * peaked
            table[key] = z - np.logaddexp.reduce(z)
        return table[key]

    return logp


def _brute(conts, logp):
    return np.array([sum(logp(c[:i])[c[i]] for i in range(len(c))) for c in conts])


def _paths(trie):
    """The token path of every node (its own token last)."""
    out = {}
    for n in range(trie.n_nodes):
        p = [] if trie.parent[n] < 0 else out[int(trie.parent[n])]
        out[n] = p + [int(trie.tokens[n])]
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_answer_is_the_argmax_of_every_continuation_scored(seed):
    rng = np.random.default_rng(1000 + seed)
    V = 12
    k = int(rng.integers(1, 40))
    conts = [list(rng.integers(0, V, size=int(rng.integers(1, 6)))) for _ in range(k)]
    logp = _model(seed, V, peaked=float(rng.choice([0.5, 2.0, 6.0])))
    trie = build_trie(conts)
    paths = _paths(trie)
    calls = []

    def evaluate(nodes):
        calls.append(list(nodes))
        return np.stack([logp(paths[n]) for n in nodes])

    j, score, used = best_continuation(trie, logp([]), evaluate)
    full = _brute(conts, logp)
    assert j == int(np.argmax(full))  # ties: the first continuation, as np.argmax
    assert score == pytest.approx(full.max(), abs=1e-12)
    inner = int(trie.has_children().sum())
    assert used == sum(len(c) for c in calls) <= inner
    seen = set()
    for call in calls:  # every node is evaluated once, after its parent
        for n in call:
            assert n not in seen and (trie.parent[n] < 0 or int(trie.parent[n]) in seen)
        seen.update(call)


def test_a_sure_reader_evaluates_few_nodes_and_ties_go_to_the_first():
    V = 50
    conts = [[a, b, 49] for a in range(10) for b in range(10, 20)]  # 100 continuations, 110 inner nodes
    sure = np.full(V, -20.0)
    sure[3] = -0.01

    def evaluate(nodes):
        return np.stack([np.where(np.arange(V) == 49, -0.001, -9.0) for _ in nodes])

    trie = build_trie(conts)
    j, score, used = best_continuation(trie, sure, evaluate)
    assert conts[j][0] == 3 and conts[j][1] == 10  # the first of the tied second tokens
    assert used < 30 < int(trie.has_children().sum())
    assert score == pytest.approx(-0.01 - 9.0 - 0.001)


def test_one_continuation_needs_no_evaluation_when_it_has_one_token():
    trie = build_trie([[4]])
    first = np.log(np.full(8, 1 / 8))
    assert best_continuation(trie, first, lambda nodes: pytest.fail("evaluated")) == (
        0,
        pytest.approx(np.log(1 / 8)),
        0,
    )

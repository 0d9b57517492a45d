"""Random and TopK baselines; determinism across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from selector_data import make_pool

from ucs.selectors import RandomSelector, TopKSelector


def test_random_shared_row_and_seed():
    pool, queries, *_ = make_pool()
    a = RandomSelector(random_state=1).fit(pool).select(queries, 10)
    assert a.indices.shape == (1, 10) and not a.query_dependent
    b = RandomSelector(random_state=2).fit(pool).select(queries, 10)
    assert not np.array_equal(a.indices, b.indices)
    pq = RandomSelector(random_state=1, per_query=True).fit(pool).select(queries, 10)
    assert pq.indices.shape == (len(queries), 10)
    assert len({tuple(r) for r in pq.indices}) == len(queries)


def test_random_is_uniform_enough():
    pool, *_ = make_pool(n=20)
    counts = np.zeros(20)
    for seed in range(400):
        counts[RandomSelector(random_state=seed).fit(pool).select(None, 5).indices[0]] += 1
    assert counts.min() > 60 and counts.max() < 140  # expectation 100


def test_topk_is_cosine_order():
    pool, queries, *_ = make_pool()
    s = TopKSelector().fit(pool * 5.0).select(queries, 6)
    sims = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        pool / np.linalg.norm(pool, axis=1, keepdims=True)
    ).T
    assert np.array_equal(s.indices, np.argsort(-sims, axis=1, kind="stable")[:, :6])
    assert np.all(np.diff(s.scores, axis=1) <= 0)


_SCRIPT = """
import hashlib, sys, numpy as np
sys.path.insert(0, {tests!r})
from selector_data import make_pool
from ucs.selectors import DPPSelector, RandomSelector, UCSPrior, VoteKSelector
pool, queries, cids, *_ = make_pool(seed=5)
h = hashlib.sha256()
for sel in [RandomSelector(random_state=4, per_query=True),
            DPPSelector(prior=UCSPrior(cids, estimator="binomial", lam=1.0)),
            VoteKSelector(prior=UCSPrior(cids, lam=1.0), random_state=3)]:
    s = sel.fit(pool).select(queries, 7)
    h.update(s.indices.tobytes()); h.update(s.scores.tobytes())
print(h.hexdigest())
"""


def test_same_seed_same_output_across_processes():
    tests_dir = str(Path(__file__).parent)
    script = _SCRIPT.format(tests=tests_dir)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")]
        ),
        PYTHONHASHSEED="random",
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    ns: dict = {}
    exec(compile(script.replace("print(h.hexdigest())", "RESULT = h.hexdigest()"), "<script>", "exec"), ns)
    assert outs[0].strip() == outs[1].strip() == ns["RESULT"]


def _banking77_labels(shared_data, n=3000):
    import warnings

    from ucs.data import load_banking77

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_banking77(shared_data)
    rows = np.linspace(0, len(ds.pool.labels) - 1, n).astype(int)  # the file is sorted by label
    return [str(ds.pool.labels[i]) for i in rows], [str(ds.pool.texts[i]) for i in rows]


def _balanced(labels, rows):
    counts = [np.unique([labels[i] for i in row], return_counts=True)[1] for row in rows]
    return all(c.max() - c.min() <= 1 for c in counts)


def test_balanced_random_takes_every_label_in_turn_on_banking77(shared_data):
    labels, _ = _banking77_labels(shared_data)
    n_labels = len(set(labels))
    pool = np.random.default_rng(0).normal(size=(len(labels), 8))
    for budget in (10, n_labels, 2 * n_labels + 5):
        sel = RandomSelector(random_state=3, balanced=True).fit(pool, labels=labels).select(None, budget)
        assert sel.indices.shape == (1, budget) and len(set(sel.indices[0])) == budget
        assert len({labels[i] for i in sel.indices[0]}) == min(budget, n_labels)
        assert _balanced(labels, sel.indices)
    uniform = RandomSelector(random_state=3).fit(pool, labels=labels).select(None, 2 * n_labels)
    assert not _balanced(labels, uniform.indices)  # the parameter is what balances
    again = RandomSelector(random_state=3, balanced=True).fit(pool, labels=labels).select(None, 10)
    assert np.array_equal(
        again.indices,
        RandomSelector(random_state=3, balanced=True).fit(pool, labels=labels).select(None, 10).indices,
    )
    pq = RandomSelector(random_state=3, balanced=True, per_query=True).fit(pool, labels=labels)
    rows = pq.select(pool[:5], 12).indices
    assert rows.shape == (5, 12) and len({tuple(r) for r in rows}) == 5 and _balanced(labels, rows)


def test_balanced_random_says_what_it_needs():
    pool, *_ = make_pool()
    with pytest.raises(ValueError, match=r"balanced=True\) draws across labels: fit\(pool, labels=...\)"):
        RandomSelector(balanced=True).fit(pool)
    with pytest.raises(ValueError, match="^balanced must be a bool; got 'yes'"):
        RandomSelector(balanced="yes").fit(pool)


def test_a_new_selector_parameter_reaches_the_configuration_the_cli_and_the_index(shared_data):
    """``balanced`` was added in the selector's own module only: the configuration, its results key, ``--set``
    and ``SelectorIndex`` take it from the class's signature."""
    import json

    from typer.testing import CliRunner

    from ucs.cli import app
    from ucs.index import SelectorIndex
    from ucs.pipeline import PipelineConfig
    from ucs.testing.doubles import DummyEmbedder

    cfg = PipelineConfig.resolve("default", None, {"selector.params.random.balanced": True})
    assert cfg.selector_params("random") == {"balanced": True}
    assert cfg.key_dict()["selector.params.random.balanced"] is True
    assert "selector.params.random.balanced" not in PipelineConfig().key_dict()  # earlier keys stay
    with pytest.raises(ValueError, match="^selector.params.random.balanced must be a bool; got 1"):
        PipelineConfig.resolve("default", None, {"selector.params.random.balanced": 1})

    runner = CliRunner()
    res = runner.invoke(
        app, ["evaluate", "--out", "x", "--print-config", "--set", "selector.params.random.balanced=true"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["selector"]["params"]["random"] == {"balanced": True}

    labels, texts = _banking77_labels(shared_data, n=600)
    examples = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    index = SelectorIndex(
        DummyEmbedder(dim=16), "random", selector_params={"balanced": True}, output_key="label"
    ).fit(examples)
    got = index.select(texts[0], 9)
    assert _balanced(labels, [got.indices]) and len({labels[i] for i in got.indices}) == 9

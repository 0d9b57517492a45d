"""Random and TopK baselines; determinism across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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

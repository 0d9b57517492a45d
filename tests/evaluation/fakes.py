"""Helpers that drive the package's :class:`ucs.testing.doubles.DummyLM` for evaluation tests.

``make_lm`` returns a DummyLM that "answers" with the label of the last demonstration in the prompt, so
accuracy depends on the selection; a seeded fraction ``noise`` of prompts gets no known answer, and DummyLM
then emits an unmatched ``answer_<hex>`` (seed-dependent when sampling). ``delay`` slows each ``generate``
call (used to interrupt a run mid-way). ``RecordingLM`` is the reference test double of the LM contract
used to check the arguments the prediction code passes.
"""

from __future__ import annotations

import hashlib
import re
import time

import numpy as np

from ucs.testing.doubles import DummyLM

_LABEL_RE = re.compile(r"^(?:Label|A): (.+)$", re.MULTILINE)


def _u(*parts) -> float:
    d = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(d[:8], "little") / 2.0**64


def last_label(prompt: str):
    found = _LABEL_RE.findall(prompt)
    return found[-1].strip() if found else None


class SlowDummyLM(DummyLM):
    def __init__(self, delay: float = 0.0, **kw):
        super().__init__(**kw)
        self.delay = delay

    def generate(self, prompts, *args, **kwargs):
        if self.delay:
            time.sleep(self.delay)
        return super().generate(prompts, *args, **kwargs)


def make_lm(noise: float = 0.0, delay: float = 0.0, context_length: int = 4096):
    def answers(prompt):
        lab = last_label(prompt)
        if lab is None or _u(prompt) < noise:
            return None
        return " " + lab

    return SlowDummyLM(delay=delay, answers=answers, context_length=context_length)


class RecordingLM(DummyLM):
    """DummyLM that records the arguments of each call."""

    def __init__(self, **kw):
        super().__init__(answers=lambda p: (" " + last_label(p)) if last_label(p) else None, **kw)
        self.calls = []

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        self.calls.append(("generate", len(prompts), temperature, seed))
        return super().generate(prompts, max_new_tokens, temperature, top_p, stop, seed)

    def score_continuations_detailed(self, prefix, continuations):
        self.calls.append(("score", len(continuations)))
        return super().score_continuations_detailed(prefix, continuations)


def oracle_select(dataset, budget=4):
    """Selection whose last demonstration has the query's gold label (make_lm then answers correctly).

    Works on the protocol's test queries, looked up by text.
    """
    gold_of = dict(zip(dataset.test.texts, dataset.test.labels.tolist()))
    first_of = {}
    for i, y in enumerate(dataset.pool.labels.tolist()):
        first_of.setdefault(y, i)

    def select(method, seed, query_texts):
        rng = np.random.default_rng(seed)
        rows = []
        for t in query_texts:
            other = rng.choice(len(dataset.pool), size=budget - 1, replace=False).tolist()
            rows.append(other + [first_of[gold_of[t]]])
        return np.array(rows, dtype=np.int64)

    return select


def random_select(dataset, budget=4):
    def select(method, seed, query_texts):
        return np.random.default_rng(seed).choice(len(dataset.pool), size=budget, replace=False)

    return select


def two_methods(dataset, budget=4):
    o, r = oracle_select(dataset, budget), random_select(dataset, budget)
    calls = []

    def select(method, seed, query_texts):
        calls.append((method, seed, len(query_texts)))
        return (o if method == "oracle" else r)(method, seed, query_texts)

    select.calls = calls
    return select

"""A tiny local test double of the LM contract (generate / score_continuations_detailed / count_tokens).

It "answers" with the label of the last demonstration in the prompt, so accuracy depends on the selection;
with temperature > 0 it answers something unmatched for a seeded fraction of prompts. Optional ``delay``
makes each ``generate`` call slow (used to interrupt a run mid-way).
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass

import numpy as np

_LABEL_RE = re.compile(r"^(?:Label|A): (.+)$", re.MULTILINE)


def _u(*parts) -> float:
    d = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(d[:8], "little") / 2.0**64


@dataclass
class Scores:
    logprob: np.ndarray
    n_tokens: np.ndarray


class LastDemoLM:
    def __init__(self, context_length: int = 4096, delay: float = 0.0, noise: float = 0.3):
        self.context_length = context_length
        self.delay = delay
        self.noise = noise
        self.calls = []
        self.identity = {"model": "last-demo-fake", "revision": "1"}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _last_label(self, prompt: str):
        found = _LABEL_RE.findall(prompt)
        return found[-1].strip() if found else None

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        self.calls.append(("generate", len(prompts), temperature, seed))
        if self.delay:
            time.sleep(self.delay)
        out = []
        for p in prompts:
            lab = self._last_label(p)
            if lab is None or (temperature > 0 and _u(seed, p) < self.noise):
                out.append(" I am not sure")
            else:
                out.append(f" {lab}\nText: more")
        return out

    def score_continuations_detailed(self, prefix, continuations):
        self.calls.append(("score", len(continuations)))
        lab = self._last_label(prefix)
        lp = np.array([-0.1 if (lab is not None and c.strip() == lab) else -1.0 - _u(prefix, c)
                       for c in continuations])
        return Scores(lp, np.array([max(1, len(c.split())) for c in continuations]))


def oracle_select(dataset, budget=4):
    """Selection whose last demonstration has the query's gold label (LastDemoLM then answers correctly).

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

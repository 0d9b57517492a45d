"""Memoised continuation scoring: a language model whose ``score_continuations`` is computed once per input.

MDL scores ``select_time`` candidate subsets per query with the LM, and MDL+UCS — seeded like MDL for the same
run — scores exactly the same subsets again before adding ``λ Φ(S)``; experiments that share a configuration
(the budget-10 column of a budget study and the main table, say) repeat them once more. :class:`CachedScorer`
answers a repeated ``(prefix, continuations)`` from memory, and, given a ``store`` directory, from a JSONL
file per model identity that other processes and later runs share (:class:`~ucs.utils.store.KeyedJsonlStore`).

Stored values are the float64 log-probabilities the model returned, written as JSON numbers (which round-trip
float64 exactly), so a cached score equals the computed one bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Optional, Sequence

import numpy as np

from ucs.lm.base import ContinuationScores, ReducedScoresMixin
from ucs.utils.store import KeyedJsonlStore

__all__ = ["CachedScorer", "scoring_key"]


def scoring_key(prefix: str, continuations: Sequence[str]) -> str:
    """SHA-256 of ``prefix`` and the ordered ``continuations`` (unambiguous: a JSON array of strings)."""
    blob = json.dumps([prefix, list(continuations)], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class _ScoreStore(KeyedJsonlStore):
    """The score store's schema: equally long lists of log-probabilities (numbers) and token counts (ints)."""

    def validate(self, entry: dict) -> Optional[str]:
        problem = super().validate(entry)
        if problem is not None:
            return problem
        lp, nt = entry.get("logprob"), entry.get("n_tokens")
        if not isinstance(lp, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in lp
        ):
            return "'logprob' is not a list of numbers"
        if (
            not isinstance(nt, list)
            or len(nt) != len(lp)
            or not all(isinstance(x, int) and x >= 0 for x in nt)
        ):
            return "'n_tokens' is not a list of token counts as long as 'logprob'"
        return None


class CachedScorer(ReducedScoresMixin):
    """Wrap ``lm`` so that :meth:`score_continuations_detailed` runs the model once per distinct input.

    Parameters
    ----------
    lm : LanguageModel
        Anything with ``score_continuations_detailed(prefix, continuations) -> ContinuationScores``. Every
        other attribute (``generate``, ``context_length``, ``identity`` …) is the wrapped model's.
    store : path, optional
        Directory of a persistent score store shared by processes (``<store>/<key[:2]>/<key>.jsonl``, keyed by
        ``identity``). ``None`` memoises in memory only.
    identity : dict, optional
        What identifies the model's scores (default ``lm.identity``); part of the store's file key, so
        another model, revision or dtype never reads these scores. Required with ``store`` when ``lm`` has
        no ``identity``.

    Attributes
    ----------
    hits, misses : int
        Calls answered from the cache, and calls that ran the model.

    Notes
    -----
    A hit costs one SHA-256 of the inputs and a dictionary lookup; memory grows with the distinct inputs
    scored (``O(k)`` floats each). Results are deterministic only as far as the model is: the first value
    computed for an input is the one every later call returns.
    """

    def __init__(
        self,
        lm: Any,
        store: "str | os.PathLike[str] | None" = None,
        identity: Optional[Dict[str, Any]] = None,
    ) -> None:
        if not callable(getattr(lm, "score_continuations_detailed", None)):
            raise ValueError(
                "lm must provide score_continuations_detailed(prefix, continuations) "
                "(any ucs.lm.LanguageModel)"
            )
        if store is not None and identity is None:
            identity = getattr(lm, "identity", None)
            if not isinstance(identity, dict):
                raise ValueError(
                    "identity is required with store= when the model has no identity dict: "
                    "give identity={...} naming the model, its revision and its dtype"
                )
        self.lm = lm
        self.identity_fields = None if identity is None else dict(identity)
        self._store = (
            None
            if store is None
            else _ScoreStore(
                store, {"kind": "continuation_scores", "model": self.identity_fields}, key_field="key"
            )
        )
        self._memory: Dict[str, ContinuationScores] = {}
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:
        # only reached for attributes this wrapper does not define: behave as the wrapped model
        if name == "lm":
            raise AttributeError(name)
        return getattr(self.lm, name)

    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]) -> ContinuationScores:
        """The wrapped model's scores of ``continuations`` after ``prefix``, computed at most once."""
        conts = list(continuations)
        key = scoring_key(prefix, conts)
        got = self._memory.get(key)
        if got is None and self._store is not None:
            entry = self._store.get(key)
            if entry is not None and len(entry.get("logprob", ())) == len(conts):
                got = self._memory[key] = ContinuationScores(
                    np.asarray(entry["logprob"], dtype=np.float64),
                    np.asarray(entry["n_tokens"], dtype=np.int64),
                )
        if got is not None:
            self.hits += 1
            return ContinuationScores(got.logprob.copy(), got.n_tokens.copy())
        self.misses += 1
        res = self.lm.score_continuations_detailed(prefix, conts)
        res = ContinuationScores(
            np.asarray(res.logprob, dtype=np.float64), np.asarray(res.n_tokens, dtype=np.int64)
        )
        self._memory[key] = res
        if self._store is not None:
            self._store.put(
                [
                    {
                        "key": key,
                        "logprob": [float(x) for x in res.logprob],
                        "n_tokens": [int(x) for x in res.n_tokens],
                    }
                ]
            )
        return ContinuationScores(res.logprob.copy(), res.n_tokens.copy())

    def __repr__(self) -> str:
        where = "memory" if self._store is None else str(self._store.path.parent.parent)
        return f"CachedScorer({self.lm!r}, store={where!r})"

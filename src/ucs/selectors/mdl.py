"""MDL demonstrations (Wu et al., 2023, OpenICL's MDL retriever) and MDL+UCS."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Protocol, Sequence, Tuple, Union, runtime_checkable

import numpy as np

from ucs.selectors.base import Selector, _check_int, check_random_state
from ucs.selectors.prior import UCSPrior
from ucs.utils.fitting import longest_fitting_prefix
from ucs.utils.progress import advance

__all__ = ["ContinuationScorer", "MDLSelector", "negative_entropy", "format_prompt"]

Template = Union[str, Callable[[str, str], str]]


@runtime_checkable
class ContinuationScorer(Protocol):
    """What MDL needs from a language model (a subset of :class:`ucs.lm.LanguageModel`).

    ``score_continuations(prefix, continuations, reduction="mean")`` returns, for each continuation,
    the mean per-token log-probability of its tokens given ``prefix`` (minus the mean token
    cross-entropy), shape ``(len(continuations),)``.
    """

    def score_continuations(
        self, prefix: str, continuations: Sequence[str], reduction: str = "sum"
    ) -> np.ndarray: ...  # pragma: no cover


def negative_entropy(mean_logprob: np.ndarray) -> np.ndarray:
    """``Σ_y p_y log p_y`` with ``p_y ∝ exp(−loss_y) = exp(mean_logprob_y)``, over the last axis.

    Computed stably in log space (OpenICL normalises ``exp(−loss)`` directly; the values agree up to
    rounding, and a label with ``p_y = 0`` contributes 0 instead of ``nan``).
    """
    x = np.asarray(mean_logprob, dtype=np.float64)
    mx = x.max(axis=-1, keepdims=True)
    logp = x - mx - np.log(np.exp(x - mx).sum(axis=-1, keepdims=True))
    p = np.exp(logp)
    return np.where(p > 0, p * logp, 0.0).sum(axis=-1)


def _apply(template: Template, text: str, label: str) -> str:
    if callable(template):
        return template(text, label)
    return template.format(text=text, label=label)


def format_prompt(
    texts: Sequence[str],
    labels: Sequence[str],
    demo_template: Template = "{text} {label}",
    separator: str = "\n",
) -> str:
    """The demonstration prefix: each demonstration formatted and followed by ``separator``."""
    return "".join(_apply(demo_template, t, str(y)) + separator for t, y in zip(texts, labels))


class MDLSelector(Selector):
    """Minimum-description-length demonstrations; MDL+UCS with a prior.

    For each query: the ``candidate_num`` most similar pool items; ``select_time`` candidate subsets
    of size ``B`` — the first is the top ``B`` by similarity, the others random ``B``-subsets of the
    candidates (seeded once per ``select`` call); for each subset the prefix of formatted
    demonstrations, and for every label ``y`` the mean token log-probability of
    ``query_template(query, y)`` given that prefix under ``scorer``; ``p_y ∝ exp(−loss_y)``;
    ``MDL(S) = Σ_y p_y log p_y``. The subset with the largest ``MDL(S) (+ λ Φ(S))`` wins (the first
    on ties).

    Parameters
    ----------
    scorer : ContinuationScorer
        The scoring LM (any :class:`ucs.lm.LanguageModel`; the paper used GPT-2).
    label_set : sequence, optional
        Labels to score. Default: every distinct pool label in order of first occurrence (the task's
        full label set; OpenICL scores the labels that occur in the test set instead).
    candidate_num : int
        Candidates per query (OpenICL: 50); raised to the budget when smaller.
    select_time : int
        Candidate subsets per query (OpenICL: 5).
    demo_template, query_template : str or callable
        ``str.format`` templates with ``{text}`` and ``{label}`` (or callables ``(text, label) -> str``)
        for a demonstration and for the scored continuation.
    separator : str
        Written after every demonstration.
    prior : UCSPrior, optional
        Adds ``λ · Φ(S)`` to each subset's score (score designs via ``prior.design``).
    random_state : int
        Seed of the random subsets.
    fit_context : bool
        When the scorer has ``count_tokens`` and ``context_length``, score each subset's prefix as the prompt
        that would be sent: its trailing demonstrations are dropped until the prefix and the longest
        continuation fit the context (what the evaluation's prompt budget does), instead of letting the
        scorer cut the prefix from the left — which keeps the demonstrations the prompt drops and starts
        inside one. Only subsets too long for the context are affected; ``extras["n_scored_demos"]`` says how
        many demonstrations each subset's score saw. ``False`` sends every prefix whole.

    Notes
    -----
    Retrieval and Φ are batched over queries (one matrix product; one estimator call for all
    ``Q · select_time`` subsets). The LM calls, ``Q · select_time`` prefixes of ``|labels|``
    continuations each, dominate the cost.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import MDLSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> from ucs.testing import DummyLM  # a deterministic stand-in: pass a real backbone as the scorer
    >>> texts = ["card lost", "card stolen", "card blocked", "new card", "loan rate", "loan term",
    ...          "loan limit", "loan fee", "fx rate", "fx fee", "exchange euros", "fx limit"]
    >>> mdl = MDLSelector(scorer=DummyLM(), candidate_num=6, select_time=3)
    >>> sel = mdl.fit(pool, labels=labels, texts=texts).select(query, 3, query_texts=["my card is gone"])
    >>> sel.extras["subset_scores"].round(2), sel.indices  # the subset of largest MDL(S) wins
    (array([[-0.94, -1.06, -1.  ]]), array([[3, 0, 2]]))
    """

    name = "mdl"
    needs_scorer = True
    needs_query_texts = True

    def __init__(
        self,
        scorer: Any = None,
        label_set: Optional[Sequence[Any]] = None,
        candidate_num: int = 50,
        select_time: int = 5,
        demo_template: Template = "{text} {label}",
        query_template: Template = "{text} {label}",
        separator: str = "\n",
        prior: Optional[UCSPrior] = None,
        random_state: int = 0,
        block: int = 1024,
        fit_context: bool = True,
    ) -> None:
        self.scorer = scorer
        self.label_set = label_set
        self.candidate_num = candidate_num
        self.select_time = select_time
        self.demo_template = demo_template
        self.query_template = query_template
        self.separator = separator
        self.prior = prior
        self.random_state = random_state
        self.block = block
        self.fit_context = fit_context

    def _validate_params(self) -> None:
        _check_int(self.candidate_num, "candidate_num", 1)
        _check_int(self.select_time, "select_time", 1)
        _check_int(self.block, "block", 1)
        check_random_state(self.random_state)
        for nm in ("demo_template", "query_template"):
            t = getattr(self, nm)
            if not (callable(t) or isinstance(t, str)):
                raise ValueError(f"{nm} must be a format string or a callable (text, label) -> str")
        if not isinstance(self.separator, str):
            raise ValueError(f"separator must be a string; got {self.separator!r}")
        if self.label_set is not None and len(self.label_set) == 0:
            raise ValueError("label_set is empty; give the task's labels or leave it None to use the pool's")
        if self.prior is not None and not isinstance(self.prior, UCSPrior):
            raise ValueError(f"prior must be a UCSPrior or None; got {type(self.prior).__name__}")

    def _fit(self) -> None:
        if self.scorer is None or not callable(getattr(self.scorer, "score_continuations", None)):
            raise ValueError(
                "scorer must provide score_continuations(prefix, continuations, reduction='mean') "
                "(any ucs.lm.LanguageModel, or ucs.testing.doubles.DummyLM in tests)"
            )
        if self.labels_ is None or self.texts_ is None:
            raise ValueError("MDLSelector.fit needs labels= and texts= for the pool (to build prompts)")
        if self.label_set is not None:
            labels = list(self.label_set)
        else:
            labels = list(dict.fromkeys(self.labels_))
        self.label_set_ = [str(y) for y in labels]

    def candidate_subsets(
        self, queries: np.ndarray, budget: int, return_candidates: bool = False
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Candidate subsets of every query: pool indices of shape (Q, select_time, B) and the
        candidates' similarities (Q, C) — or, with ``return_candidates``, their pool indices (Q, C)."""
        c = min(self.n_pool_, max(self.candidate_num, budget))
        cand, sims = self._retrieve(queries, c)
        q, t, c = (
            cand.shape[0],
            self.select_time,
            cand.shape[1],
        )  # fewer than c when a query's own text is left out
        pos = np.empty((q, t, budget), dtype=np.int64)
        pos[:, 0, :] = np.arange(budget)
        if t > 1 and budget > 0:
            rng = np.random.default_rng(self.random_state)
            keys = rng.random((q, t - 1, c))
            pos[:, 1:, :] = np.argsort(keys, axis=2, kind="stable")[:, :, :budget]
        subsets = np.take_along_axis(cand[:, None, :], pos.reshape(q, t * budget)[:, None, :], axis=2)
        return subsets.reshape(q, t, budget), (cand if return_candidates else sims)

    def _token_budget(self) -> Tuple[Optional[Callable[[str], int]], int]:
        """``(count_tokens, context_length)`` of the scorer when prefixes are fitted, else ``(None, 0)``."""
        count = getattr(self.scorer, "count_tokens", None)
        if not self.fit_context or not callable(count):
            return None, 0
        context = getattr(self.scorer, "context_length", None)
        return (count, int(context)) if isinstance(context, (int, np.integer)) and context > 0 else (None, 0)

    def _prefix(
        self, members: np.ndarray, count: Optional[Callable[[str], int]], limit: Optional[int]
    ) -> Tuple[str, int]:
        """The scored prefix of a subset and how many of its leading demonstrations it holds.

        Without a token ``limit`` every demonstration; else the most leading ones whose prefix has at most
        ``limit`` tokens (:func:`~ucs.utils.fitting.longest_fitting_prefix`: one count when the whole subset
        fits, O(log B) otherwise; no demonstration at all is the fallback).
        """
        texts: Dict[int, str] = {}

        def text(k: int) -> str:  # each prefix formatted once: the search and the result share it
            if k not in texts:
                chosen = members[:k]
                texts[k] = format_prompt(
                    [self.texts_[i] for i in chosen],
                    [self.labels_[i] for i in chosen],
                    self.demo_template,
                    self.separator,
                )
            return texts[k]

        n = len(members)
        if count is not None and limit is not None:
            n = longest_fitting_prefix(n, lambda k: count(text(k)) <= limit)
        return text(n), n

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        q = queries.shape[0]
        if query_texts is None:
            raise ValueError("MDLSelector.select needs query_texts= (one text per query) to score labels")
        if budget == 0 or q == 0:
            return np.zeros((q, budget), dtype=np.int64), np.zeros((q, budget)), {}
        subsets, cand = self.candidate_subsets(queries, budget, return_candidates=True)
        t = subsets.shape[1]
        mdl = np.empty((q, t))
        kept = np.full((q, t), float(budget))
        count, context = self._token_budget()
        for qi in range(q):
            misses = getattr(
                self.scorer, "misses", None
            )  # a CachedScorer counts the calls that ran the model
            conts = [_apply(self.query_template, query_texts[qi], y) for y in self.label_set_]
            limit = None if count is None else context - max(count(c) for c in conts) - 1
            for ti in range(t):
                prefix, kept[qi, ti] = self._prefix(subsets[qi, ti], count, limit)
                ll = np.asarray(
                    self.scorer.score_continuations(prefix, conts, reduction="mean"), dtype=np.float64
                )
                if ll.shape != (len(conts),) or not np.all(np.isfinite(ll)):
                    raise ValueError(
                        f"scorer returned {ll.shape} values (finite: {bool(np.all(np.isfinite(ll)))}) for "
                        f"{len(conts)} continuations; expected one finite mean log-probability each"
                    )
                mdl[qi, ti] = negative_entropy(ll)
            reused = int(misses is not None and getattr(self.scorer, "misses", None) == misses)
            advance(1, kind="mdl", reused=reused)  # one query scored (shown when a progress stage is open)
        extras: Dict[str, np.ndarray] = {"mdl": mdl, "n_scored_demos": kept}
        total = mdl
        if self.prior is not None:
            phi = self.prior.batched().phi_subsets(subsets.reshape(q * t, budget)).reshape(q, t)
            w = self.prior.subset_weights(cand, subsets)
            if w is not None:
                phi = phi * w
            extras["subset_phi"] = phi
            lam = float(self.prior.lam)
            total = mdl + lam * phi if lam != 0 else mdl
        best = np.argmax(total, axis=1)  # first wins ties
        extras["subset_scores"] = total
        extras["chosen_subset"] = best.astype(np.float64)
        idx = subsets[np.arange(q), best]
        sims = np.einsum("qbd,qd->qb", self.pool_[idx], queries)
        return idx, sims, extras

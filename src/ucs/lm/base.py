"""The :class:`LanguageModel` contract used for ICL answering, label scoring and MDL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = [
    "LanguageModel",
    "ContinuationScores",
    "REDUCTIONS",
    "ReducedScoresMixin",
    "reduce_scores",
    "check_generation_args",
]

REDUCTIONS = ("sum", "mean")


@dataclass(frozen=True)
class ContinuationScores:
    """Log-likelihoods of several continuations of one prefix.

    Attributes
    ----------
    logprob : ndarray of shape (k,), float64
        Total natural-log probability of each continuation's tokens given the prefix.
    n_tokens : ndarray of shape (k,), int64
        Number of tokens each continuation was scored over (at least 1).
    """

    logprob: np.ndarray
    n_tokens: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        """Mean log-probability per token, shape ``(k,)`` (minus the mean token cross-entropy)."""
        return self.logprob / np.maximum(self.n_tokens, 1)

    def reduce(self, reduction: str = "sum") -> np.ndarray:
        """``"sum"`` → :attr:`logprob`; ``"mean"`` → :attr:`mean`."""
        return reduce_scores(self, reduction)


def reduce_scores(scores: ContinuationScores, reduction: str) -> np.ndarray:
    if reduction == "sum":
        return scores.logprob
    if reduction == "mean":
        return scores.mean
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


class ReducedScoresMixin:
    """``score_continuations`` for a model that implements ``score_continuations_detailed``."""

    def score_continuations(
        self, prefix: str, continuations: Sequence[str], reduction: str = "sum"
    ) -> np.ndarray:
        """Total (``"sum"``) or per-token mean (``"mean"``) log-probability of each continuation, shape
        ``(k,)``."""
        return reduce_scores(self.score_continuations_detailed(prefix, continuations), reduction)  # type: ignore[attr-defined]


def check_generation_args(max_new_tokens: int, temperature: float, top_p: float) -> None:
    """Raise ``ValueError`` naming the first invalid argument of :meth:`LanguageModel.generate`.

    Every backend (and the test double) calls it, so they reject the same inputs with the same message.
    """
    if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


@runtime_checkable
class LanguageModel(Protocol):
    """A causal language model that answers ICL prompts and scores label continuations.

    ``generate`` returns one completion per prompt (without the prompt). ``score_continuations``
    returns, for every continuation, the log-probability of its tokens given ``prefix``
    (``reduction="sum"``) or the per-token mean (``"mean"``); ``score_continuations_detailed``
    returns both together with the token counts. The prefix is tokenised once and shared.

    Optional: a class attribute ``generates_one_at_a_time = True`` says that ``generate`` answers its prompts
    one after another, so a batch asked in parts costs the same; the evaluation runner then records each part
    as soon as it is answered (:func:`ucs.evaluation.runner.answers_separately`).
    """

    @property
    def context_length(self) -> int: ...  # pragma: no cover

    def count_tokens(self, text: str) -> int: ...  # pragma: no cover

    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int = 16,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: Optional[Sequence[str]] = None,
        seed: Optional[int] = None,
    ) -> list: ...  # pragma: no cover

    def score_continuations(
        self, prefix: str, continuations: Sequence[str], reduction: str = "sum"
    ) -> np.ndarray: ...  # pragma: no cover

    def score_continuations_detailed(
        self, prefix: str, continuations: Sequence[str]
    ) -> ContinuationScores: ...  # pragma: no cover

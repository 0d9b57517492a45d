"""Prediction modes: how a prompt becomes a label.

=============  =====================================================================================
mode           what it does
=============  =====================================================================================
``paper``      sample 16 new tokens at temperature 0.1, top-p 1.0 (the paper); :class:`PaperMatcher`
``greedy``     greedy decoding (temperature 0), 16 new tokens; paper matcher (``matcher="strict"``
               for the strict one; ``greedy-strict`` names that combination)
``likelihood`` score every label continuation ``" " + label`` after the prompt and take the most
               likely (OpenICL's "PPL" inferencer); never produces an unmatched answer. The LM shares
               the prompt prefix across labels (one prefix pass, then the label tokens).
=============  =====================================================================================

The LM is anything with the :class:`ucs.lm.LanguageModel` methods used here: ``generate(prompts,
max_new_tokens, temperature, top_p, stop, seed) -> list[str]`` and ``score_continuations_detailed(prefix,
continuations)`` (total log-probabilities and token counts) or ``score_continuations(prefix, continuations,
reduction)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np

from ucs.evaluation.matching import Matcher, get_matcher

__all__ = ["PredictionMode", "get_mode", "MODES", "generate_answers", "likelihood_predict", "score_labels"]


@dataclass(frozen=True)
class PredictionMode:
    """Decoding and matching settings of one evaluation protocol.

    Parameters
    ----------
    name : str
        Recorded in results.
    kind : {"generate", "likelihood"}
    temperature, top_p, max_new_tokens : decoding settings (``temperature == 0`` → greedy).
    matcher : {"paper", "strict"}
        Answer matcher for generated outputs.
    reduction : {"sum", "mean"}
        Likelihood mode: total log-probability of the label tokens (``log p(label | prompt)``, default) or
        the per-token mean (less biased towards short labels, OpenICL-like).
    stop : tuple of str
        Stop strings passed to ``generate`` (none by default, as the paper).
    """

    name: str
    kind: str = "generate"
    temperature: float = 0.1
    top_p: float = 1.0
    max_new_tokens: int = 16
    matcher: str = "paper"
    reduction: str = "sum"
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("generate", "likelihood"):
            raise ValueError(f"kind must be 'generate' or 'likelihood', got {self.kind!r}")
        if self.matcher not in ("paper", "strict"):
            raise ValueError(f"matcher must be 'paper' or 'strict', got {self.matcher!r}")
        if self.reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', got {self.reduction!r}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    @property
    def sampled(self) -> bool:
        return self.kind == "generate" and self.temperature > 0

    def answer_tokens(self) -> int:
        """Tokens to reserve after the prompt for the answer (generation only)."""
        return self.max_new_tokens if self.kind == "generate" else 0

    def make_matcher(self, answer_marker: str) -> Matcher:
        return get_matcher(self.matcher, markers=(answer_marker,))

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "matcher": self.matcher,
            "reduction": self.reduction,
            "stop": list(self.stop),
        }


MODES = {
    "paper": PredictionMode("paper", temperature=0.1, top_p=1.0, max_new_tokens=16, matcher="paper"),
    "greedy": PredictionMode("greedy", temperature=0.0, max_new_tokens=16, matcher="paper"),
    "greedy-strict": PredictionMode("greedy-strict", temperature=0.0, max_new_tokens=16, matcher="strict"),
    "likelihood": PredictionMode("likelihood", kind="likelihood", temperature=0.0),
}


def get_mode(mode: "str | PredictionMode", **overrides: Any) -> PredictionMode:
    """A named mode (``paper``, ``greedy``, ``greedy-strict``, ``likelihood``), optionally with overrides."""
    if isinstance(mode, PredictionMode):
        base = mode
    elif mode in MODES:
        base = MODES[mode]
    else:
        raise ValueError(f"mode must be one of {sorted(MODES)} or a PredictionMode, got {mode!r}")
    return replace(base, **overrides) if overrides else base


def generate_answers(lm: Any, prompts: Sequence[str], mode: PredictionMode, seed: Optional[int]) -> list[str]:
    """Raw completions of ``prompts`` with the mode's decoding settings (one ``generate`` call)."""
    outs = lm.generate(
        list(prompts),
        max_new_tokens=mode.max_new_tokens,
        temperature=mode.temperature,
        top_p=mode.top_p,
        stop=list(mode.stop) or None,
        seed=seed if mode.sampled else None,
    )
    outs = list(outs)
    if len(outs) != len(prompts):
        raise RuntimeError(f"the LM returned {len(outs)} completions for {len(prompts)} prompts")
    return [str(o) for o in outs]


def score_labels(lm: Any, prefix: str, continuations: Sequence[str], reduction: str) -> np.ndarray:
    """Log-likelihood score of each continuation after ``prefix``, shape ``(len(continuations),)``."""
    if hasattr(lm, "score_continuations_detailed"):
        s = lm.score_continuations_detailed(prefix, list(continuations))
        logprob = np.asarray(s.logprob, dtype=np.float64)
        if reduction == "mean":
            return logprob / np.maximum(np.asarray(s.n_tokens, dtype=np.float64), 1.0)
        return logprob
    return np.asarray(
        lm.score_continuations(prefix, list(continuations), reduction=reduction), dtype=np.float64
    )


def likelihood_predict(
    lm: Any, prompts: Sequence[str], continuations: Sequence[str], reduction: str = "sum"
) -> tuple[np.ndarray, np.ndarray]:
    """For each prompt, the index of the most likely continuation and its margin over the runner-up.

    Returns ``(pred, margin)``, int64 and float64 arrays of shape ``(len(prompts),)``. Ties go to the first
    label. Each prompt is one ``score`` call: the backend evaluates the shared prefix once for all labels.
    """
    pred = np.empty(len(prompts), dtype=np.int64)
    margin = np.empty(len(prompts), dtype=np.float64)
    for i, p in enumerate(prompts):
        scores = score_labels(lm, p, continuations, reduction)
        if scores.shape != (len(continuations),) or not np.all(np.isfinite(scores)):
            raise RuntimeError(f"label scores for prompt {i} must be {len(continuations)} finite numbers")
        best = int(np.argmax(scores))
        pred[i] = best
        if len(scores) > 1:
            top2 = np.partition(scores, -2)[-2:]
            margin[i] = float(top2[1] - top2[0])
        else:
            margin[i] = np.inf
    return pred, margin

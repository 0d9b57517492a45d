"""Language models for ICL: the :class:`LanguageModel` contract."""

from __future__ import annotations

from ucs.lm.base import ContinuationScores, LanguageModel

__all__ = ["ContinuationScores", "LanguageModel"]

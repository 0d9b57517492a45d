"""Answer extraction and matching of a model's output to a label.

Two matchers:

- :class:`PaperMatcher` — the paper's rule (SPEC §5): take the text after the last answer marker
  (``Label:``), its first non-empty line, strip prefixes such as "the label is"; then match to a label by
  exact match, else substring, else token overlap ≥ 50 %. Lenient: a label that occurs *inside* a word
  counts, so the BBEH answer "cannot be determined" is matched to the label "No" ("can**no**t").
- :class:`StrictMatcher` — the same extraction without prefix stripping; only case, ``_`` ↔ space,
  surrounding whitespace/quotes and one trailing period are normalised; the answer must then equal a label.

A matcher returns the label id, or ``None`` when the output matches no label (counted wrong and recorded).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Protocol, Sequence

__all__ = ["extract_answer", "Matcher", "PaperMatcher", "StrictMatcher", "get_matcher", "MATCHERS"]

_PREFIX_RE = re.compile(
    r"^(?:(?:the\s+)?(?:correct\s+|final\s+|predicted\s+)?(?:label|intent|answer|category|class)"
    r"(?:\s+is|\s*:|\s*=)\s*|is\s*:?\s*|i\s+think\s+(?:it\s+is\s+|it's\s+)?)",
    re.IGNORECASE,
)
_EDGE_RE = re.compile(r"^[\s\"'`*\[\(<{]+|[\s\"'`*\]\)>}.,;:!?]+$")
_WORD_RE = re.compile(r"[a-z0-9]+")


def extract_answer(output: str, markers: Sequence[str] = ("Label:",)) -> str:
    """The text after the last occurrence of any marker (case-insensitive), first non-empty line, stripped.

    Without a marker in ``output`` the whole output is used (the prompt already ended with the marker).
    """
    text = output or ""
    lower = text.lower()
    cut = -1
    for m in markers:
        pos = lower.rfind(m.lower())
        if pos >= 0:
            cut = max(cut, pos + len(m))
    if cut >= 0:
        text = text[cut:]
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _norm(text: str) -> str:
    """Lower case, ``_``/``-`` → space, collapsed whitespace."""
    return " ".join(text.lower().replace("_", " ").replace("-", " ").split())


def _strict_norm(text: str) -> str:
    text = text.strip().strip("\"'`").strip()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return " ".join(text.lower().replace("_", " ").split())


class Matcher(Protocol):
    name: str

    def __call__(self, output: str, label_names: Sequence[str]) -> Optional[int]: ...  # pragma: no cover


@lru_cache(maxsize=64)
def _paper_index(label_names: tuple[str, ...]) -> tuple[dict, list, list]:
    normed = [_norm(n) for n in label_names]
    exact: dict[str, int] = {}
    for i, n in enumerate(normed):
        exact.setdefault(n, i)
    tokens = [set(_WORD_RE.findall(n)) for n in normed]
    return exact, normed, tokens


@lru_cache(maxsize=64)
def _strict_index(label_names: tuple[str, ...]) -> dict:
    out: dict[str, int] = {}
    for i, n in enumerate(label_names):
        out.setdefault(_strict_norm(n), i)
    return out


class PaperMatcher:
    """The paper's lenient matcher (see the module docstring).

    Parameters
    ----------
    markers : sequence of str
        Answer markers to cut after (``("Label:",)`` for intent prompts, ``("A:",)`` for BBEH).
    min_overlap : float
        Fraction of a label's words that must occur in the answer for the token-overlap rule (0.5).

    Notes
    -----
    Substring rule: among labels whose normalised form occurs anywhere in the normalised answer, the
    longest wins (ties: label order); otherwise a label containing the whole answer (first in label order).
    Token-overlap rule: the label with the largest overlap ``|words(answer) ∩ words(label)| / |words(label)|``
    ≥ ``min_overlap`` (ties: label order). Time O(L · len(answer)) per output for L labels.
    """

    name = "paper"

    def __init__(self, markers: Sequence[str] = ("Label:",), min_overlap: float = 0.5) -> None:
        if not 0 < min_overlap <= 1:
            raise ValueError(f"min_overlap must be in (0, 1], got {min_overlap!r}")
        self.markers = tuple(markers)
        self.min_overlap = float(min_overlap)

    def clean(self, output: str) -> str:
        """Extracted answer with prefixes ("the label is", "Answer:") and edge punctuation removed."""
        ans = extract_answer(output, self.markers)
        for _ in range(3):
            stripped = _EDGE_RE.sub("", _PREFIX_RE.sub("", ans, count=1))
            if stripped == ans:
                break
            ans = stripped
        return ans

    def __call__(self, output: str, label_names: Sequence[str]) -> Optional[int]:
        exact, normed, tokens = _paper_index(tuple(label_names))
        ans = _norm(self.clean(output))
        if not ans:
            return None
        if ans in exact:
            return exact[ans]
        inside = [(len(n), -i) for i, n in enumerate(normed) if n and n in ans]
        if inside:
            return -max(inside)[1]
        for i, n in enumerate(normed):
            if ans in n:
                return i
        words = set(_WORD_RE.findall(ans))
        best, best_i = 0.0, None
        for i, t in enumerate(tokens):
            if t:
                ov = len(words & t) / len(t)
                if ov > best:
                    best, best_i = ov, i
        return best_i if best >= self.min_overlap else None


class StrictMatcher:
    """Exact match after normalising case and ``_`` ↔ space only (no prefix stripping, no substrings)."""

    name = "strict"

    def __init__(self, markers: Sequence[str] = ("Label:",)) -> None:
        self.markers = tuple(markers)

    def __call__(self, output: str, label_names: Sequence[str]) -> Optional[int]:
        ans = _strict_norm(extract_answer(output, self.markers))
        return _strict_index(tuple(label_names)).get(ans) if ans else None


MATCHERS = {"paper": PaperMatcher, "strict": StrictMatcher}


def get_matcher(name: str, markers: Sequence[str] = ("Label:",)) -> Matcher:
    """``"paper"`` or ``"strict"`` matcher cutting after ``markers``."""
    if name not in MATCHERS:
        raise ValueError(f"matcher must be one of {sorted(MATCHERS)}, got {name!r}")
    return MATCHERS[name](markers=markers)

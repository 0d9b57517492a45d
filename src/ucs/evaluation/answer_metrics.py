"""Scores of a generated answer against its reference, each in [0, 1]: what `--mode generate --metric` names.

=================  ===================================================================================
``exact``          1 when the answers are equal after normalising case, spacing, surrounding quotes and one
                   trailing period; else 0.
``f1``             token F1 (SQuAD): the harmonic mean of the shared word tokens' precision and recall.
``json``           field by field: both answers are read as JSON (the first ``{…}`` or ``[…]`` of the
                   prediction), flattened to (path, value) leaves, and scored by the F1 of equal leaves;
                   an answer that is not JSON scores 0; two equal documents score 1.
``regex:PATTERN``  the prediction's first match of PATTERN (its first group, if it has one) is the answer,
                   compared as ``exact``; no match scores 0.
``module:function`` your function ``function(prediction: str, reference: str) -> float | bool`` from an
                   importable module; its value must lie in [0, 1].
=================  ===================================================================================

:func:`get_metric` parses the name once, at the edge, and refuses an unknown one, a pattern that does not
compile or a function that cannot be imported with a ``ValueError`` that says how to write it.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Tuple

__all__ = ["AnswerMetric", "get_metric", "METRICS", "exact_score", "f1_score", "json_score"]

#: The metric names :func:`get_metric` takes (besides ``regex:PATTERN`` and ``module:function``).
METRICS = ("exact", "f1", "json")

_EDGES = re.compile(r"^[\s\"'`]+|[\s\"'`]+$")
_WORD = re.compile(r"\w+", re.UNICODE)


def _norm(text: str) -> str:
    text = _EDGES.sub("", " ".join(str(text).split())).casefold()
    return text[:-1] if text.endswith(".") else text


def exact_score(prediction: str, reference: str) -> float:
    """1.0 when equal after normalising case, spacing, surrounding quotes and one trailing period."""
    return float(_norm(prediction) == _norm(reference))


def f1_score(prediction: str, reference: str) -> float:
    """Token F1 over lower-cased word tokens; two empty answers score 1. Time O(len)."""
    p, r = _WORD.findall(str(prediction).casefold()), _WORD.findall(str(reference).casefold())
    if not p or not r:
        return float(p == r)
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def _first_json(text: str) -> Any:
    """The whole text as JSON, else its first decodable ``{…}`` or ``[…]``; raises ValueError when none."""
    text = str(text).strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text[match.start() :])[0]
        except ValueError:
            continue
    raise ValueError("no JSON value in the answer")


def _leaves(value: Any, path: Tuple[Any, ...] = ()) -> Iterator[Tuple[Tuple[Any, ...], str]]:
    if isinstance(value, dict):
        if not value:
            yield path, "{}"
        for key, item in value.items():
            yield from _leaves(item, path + (str(key),))
    elif isinstance(value, list):
        if not value:
            yield path, "[]"
        for i, item in enumerate(value):
            yield from _leaves(item, path + (i,))
    else:
        yield path, _norm(json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value)


def json_score(prediction: str, reference: str) -> float:
    """F1 of equal (path, value) leaves of the two JSON documents; 0 when the prediction holds no JSON.

    Raises ``ValueError`` when the *reference* is not JSON (the task's answers must be). Time O(size).
    """
    try:
        ref = Counter(_leaves(_first_json(reference)))
    except ValueError:
        raise ValueError(
            f"the reference answer is not JSON: {str(reference)[:80]!r}; use --metric json only "
            "for a task whose answers are JSON"
        ) from None
    try:
        pred = Counter(_leaves(_first_json(prediction)))
    except ValueError:
        return 0.0
    common = sum((pred & ref).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(pred.values()), common / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class AnswerMetric:
    """A named score ``(prediction, reference) -> float in [0, 1]``; ``binary`` when it only gives 0 or 1."""

    name: str
    fn: Callable[[str, str], float]
    binary: bool

    def __call__(self, prediction: str, reference: str) -> float:
        value = self.fn(prediction, reference)
        value = float(value)
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(
                f"metric {self.name} returned {value!r} for {prediction[:60]!r}; a score must lie in [0, 1]"
            )
        return value

    def score_all(self, predictions: List[str], references: List[str]) -> List[float]:
        """Scores of aligned predictions and references."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
        return [self(p, r) for p, r in zip(predictions, references)]


def _regex(pattern: str) -> AnswerMetric:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(
            f"metric regex:{pattern}: the pattern does not compile ({exc}); write regex:PATTERN "
            "with a Python regular expression, e.g. regex:Answer:\\s*(\\w+)"
        ) from None

    def score(prediction: str, reference: str) -> float:
        m = compiled.search(str(prediction))
        if m is None:
            return 0.0
        return exact_score(m.group(1) if compiled.groups else m.group(0), reference)

    return AnswerMetric(f"regex:{pattern}", score, True)


def _function(spec: str) -> AnswerMetric:
    module_name, _, attr = spec.partition(":")
    how = "write module:function, a module on the Python path and a function (prediction, reference) -> float"
    if (
        not module_name
        or not attr
        or not all(part.isidentifier() for part in module_name.split(".") + [attr])
    ):
        raise ValueError(f"metric {spec!r}: {how}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"metric {spec!r}: cannot import {module_name} ({exc}); {how}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"metric {spec!r}: {module_name} has no function {attr}; {how}")
    return AnswerMetric(spec, fn, False)


def get_metric(spec: str) -> AnswerMetric:
    """The metric a name stands for: ``exact``, ``f1``, ``json``, ``regex:PATTERN`` or ``module:function``."""
    spec = str(spec).strip()
    builtin = {"exact": (exact_score, True), "f1": (f1_score, False), "json": (json_score, False)}
    if spec in builtin:
        return AnswerMetric(spec, *builtin[spec])
    if spec.startswith("regex:"):
        return _regex(spec[len("regex:") :])
    if ":" in spec:
        return _function(spec)
    raise ValueError(
        f"unknown metric {spec!r}; choose one of {list(METRICS)}, regex:PATTERN or module:function"
    )

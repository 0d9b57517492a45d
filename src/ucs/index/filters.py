"""Metadata filters (``where=``) and near-duplicate suppression (``dedupe=``) of :meth:`SelectorIndex.select`.

A filter is a dict ``{field: value}`` (equality) or ``{field: [v1, v2]}`` (membership) over the examples'
fields; every condition must hold. Values are text, numbers or booleans; ``1`` and ``1.0`` are equal, ``True``
and ``1`` are not. Near-duplicates are pairs of chosen examples whose retrieval embeddings have cosine
``>= dedupe``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["Where", "normalize_where", "matching_rows", "check_dedupe", "greedy_distinct", "describe"]

#: A validated filter: ``((field, (value, ...)), ...)`` sorted by field (hashable: the cache key).
Where = Tuple[Tuple[str, Tuple[Any, ...]], ...]

_KINDS = {"text": "str", "number": "int or float", "bool": "bool"}


def _kind(value: Any) -> Optional[str]:
    """``text``, ``number`` or ``bool`` for a scalar a filter can compare, else ``None``."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, str):
        return "text"
    if isinstance(value, numbers.Real):
        return "number" if math.isfinite(float(value)) else None
    return None


def _key(value: Any) -> Optional[Tuple[str, Any]]:
    """A hashable, kind-tagged form of ``value`` (so ``True`` never equals ``1``); ``None`` if not a
    scalar."""
    kind = _kind(value)
    if kind is None:
        return None
    return kind, (bool(value) if kind == "bool" else value if kind == "text" else float(value))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def normalize_where(where: Any, examples: Sequence[Mapping]) -> Optional[Where]:
    """Check ``where`` against ``examples`` and return its canonical form (``None`` for no filter).

    Raises
    ------
    ValueError
        ``where`` is not a dict; a field no example has; a value that is not a str / number / bool (or a
        non-empty list of them); a value whose kind no example's field has (``"1"`` for an ``int`` field).
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise ValueError(
            f"where must be a dict of field -> value or list of values, e.g. {{'lang': 'de', "
            f"'tier': ['a', 'b']}}; got {type(where).__name__}"
        )
    out: List[Tuple[str, Tuple[Any, ...]]] = []
    for field, value in where.items():
        if not isinstance(field, str):
            raise ValueError(f"where has the key {_shown(field)}; name example fields with strings")
        values = _values(field, value)
        _check_field(field, values, examples)
        out.append((field, tuple(dict.fromkeys(_key(v) for v in values))))
    return tuple(sorted(out)) or None


def _values(field: str, value: Any) -> List[Any]:
    """The accepted values of one condition: a scalar, or a non-empty list / tuple / set of scalars."""
    many = isinstance(value, (list, tuple, set, frozenset))
    values = list(value) if many else [value]
    fix = "give a str, a number or a bool, or a non-empty list of them"
    if many and not values:
        raise ValueError(f"where[{field!r}] is an empty list, which matches nothing; {fix}")
    for v in values:
        if _kind(v) is None:
            raise ValueError(f"where[{field!r}] holds {type(v).__name__} {_shown(v)}; {fix}")
    return values


def _check_field(field: str, values: List[Any], examples: Sequence[Mapping]) -> None:
    """The field exists in some example, and some example's value there has the kind of each filter value."""
    kinds = {_kind(e[field]) for e in examples if field in e}
    if not kinds:
        fields = sorted({k for e in examples for k in e})
        raise ValueError(
            f"where names the field {field!r}, which no example has; filter on one of {fields} "
            "(fields of the examples given to fit / add_examples)"
        )
    for v in values:
        if _kind(v) not in kinds:
            have = " or ".join(sorted(_KINDS[k] for k in kinds if k is not None)) or "lists or dicts"
            raise ValueError(
                f"where[{field!r}] holds {type(v).__name__} {_shown(v)} but the examples' {field!r} "
                f"values are {have}; pass {have} values"
            )


def matching_rows(where: Where, examples: Sequence[Mapping]) -> np.ndarray:
    """Sorted positions (int64) of the examples that satisfy every condition of ``where``. O(N·F)."""
    keep = []
    conditions = [(field, set(values)) for field, values in where]
    for i, ex in enumerate(examples):
        if all(field in ex and _key(ex[field]) in allowed for field, allowed in conditions):
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


def check_dedupe(dedupe: Any) -> Optional[float]:
    """``None`` (off) or the cosine threshold as a float in ``(0, 1]``; else a ``ValueError`` naming the
    fix."""
    if dedupe is None:
        return None
    if isinstance(dedupe, bool) or not isinstance(dedupe, numbers.Real) or not 0.0 < float(dedupe) <= 1.0:
        raise ValueError(
            f"dedupe must be a cosine threshold in (0, 1] (e.g. 0.95) or None for off; got {_shown(dedupe)}"
        )
    return float(dedupe)


def greedy_distinct(unit_rows: np.ndarray, threshold: float, limit: int) -> np.ndarray:
    """Positions of at most ``limit`` rows taken in order, skipping each row whose cosine with an already
    taken row is ``>= threshold`` (``unit_rows`` are ℓ2-normalised, in the method's own choice order).
    O(B²·d)."""
    taken: List[int] = []
    for i in range(unit_rows.shape[0]):
        if len(taken) == limit:
            break
        if not taken or float(np.max(unit_rows[taken] @ unit_rows[i])) < threshold:
            taken.append(i)
    return np.asarray(taken, dtype=np.int64)


def describe(where: Optional[Where]) -> Dict[str, Any]:
    """The filter as a plain dict (for notes and logs)."""
    return {} if where is None else {f: [v for _, v in values] for f, values in where}

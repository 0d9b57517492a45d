"""Examples as the index sees them: dicts whose ``input_keys`` are embedded and whose ``output_key`` is
the label or answer."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "check_examples",
    "check_text",
    "check_label",
    "resolve_keys",
    "example_text",
    "query_text",
    "check_json_examples",
]


def check_examples(examples: Any, name: str = "examples") -> List[Dict[str, Any]]:
    """Validate a non-empty sequence of mappings; returns shallow copies as plain dicts."""
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Sequence):
        raise ValueError(f"{name} must be a list of dicts (one per example); got {type(examples).__name__}")
    out = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, Mapping):
            raise ValueError(f"{name}[{i}] must be a dict of fields; got {type(ex).__name__}")
        out.append(dict(ex))
    return out


def resolve_keys(
    examples: Sequence[Dict[str, Any]], input_keys: Optional[Sequence[str]], output_key: Optional[str]
) -> Tuple[Tuple[str, ...], Optional[str]]:
    """The fields to embed and the label field, checked against every example.

    ``input_keys=None`` means every field of the first example except ``output_key``, in its order. Every
    input value must be text (:func:`check_text`) and every ``output_key`` value a label
    (:func:`check_label`); a numpy label is replaced, in ``examples`` (the caller's copies), by the Python
    number it equals.
    """
    if isinstance(input_keys, str):
        input_keys = (input_keys,)
    if input_keys is None:
        if not examples:
            raise ValueError("input_keys is required when there are no examples to read the fields from")
        input_keys = tuple(k for k in examples[0] if k != output_key)
    keys = tuple(str(k) for k in input_keys)
    if not keys:
        raise ValueError("input_keys is empty; name at least one field of the examples to embed")
    if output_key is not None and output_key in keys:
        raise ValueError(f"output_key {output_key!r} is also in input_keys; the label must not be embedded")
    need = keys + ((output_key,) if output_key is not None else ())
    for i, ex in enumerate(examples):
        missing = [k for k in need if k not in ex]
        if missing:
            raise ValueError(f"example {i} has no field(s) {missing}; every example needs {list(need)}")
        for k in keys:
            check_text(ex[k], f"example {i}, field {k!r}")
        if output_key is not None:
            ex[output_key] = check_label(ex[output_key], f"example {i}, field {output_key!r} (output_key)")
    return keys, output_key


def check_text(value: Any, where: str) -> str:
    """``value`` if it is a string with a non-blank character, else a ``ValueError`` naming ``where`` (the
    same rule as the dataset loaders: ``None``, numbers, ``""`` and whitespace are not texts to embed)."""
    if not isinstance(value, str):
        raise ValueError(
            f"{where} is {type(value).__name__} {value!r}, not text; give every example a non-empty string"
        )
    if not value.strip():
        raise ValueError(
            f"{where} is {'empty' if not value else 'only whitespace'}; give every example a non-empty "
            "text, or leave the example out"
        )
    return value


def check_label(value: Any, where: str) -> Any:
    """``value`` as a label: a string with a non-blank character, an integer (a class id) or a finite float
    (a numeric answer); numpy integers and floats come back as the Python ``int`` / ``float`` they equal, so
    that an index saves them as JSON and loads them back equal. ``None``, blank strings, booleans (``True``
    equals ``1`` in Python, so two labels would merge), NaN / infinity, lists, dicts and other objects raise
    a ``ValueError`` naming ``where``."""
    if isinstance(value, str):
        if not value.strip():
            what = "empty" if not value else "only whitespace"
            raise ValueError(
                f"{where} is {what}; give every example a non-empty label, or leave the example out"
            )
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):  # numpy's bool_ is not Integral
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise ValueError(
                f"{where} is {float(value)!r}; a label must be a finite number or a non-empty text"
            )
        return float(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise ValueError(
        f"{where} is {type(value).__name__} {shown}, not a label; give every example a "
        "non-empty string or an integer class id"
    )


def example_text(example: Mapping, input_keys: Sequence[str]) -> str:
    """The text that is embedded for ``example``: its ``input_keys`` values joined by a space, in order."""
    return " ".join(str(example[k]) for k in input_keys)


def query_text(query: Any, input_keys: Sequence[str]) -> str:
    """The text of a query given as a string or as a dict holding ``input_keys``."""
    if isinstance(query, str):
        return query
    if isinstance(query, Mapping):
        missing = [k for k in input_keys if k not in query]
        if missing:
            raise ValueError(
                f"the query has no field(s) {missing}; pass a string or a dict with {list(input_keys)}"
            )
        return example_text(query, input_keys)
    raise ValueError(f"a query must be a string or a dict of fields; got {type(query).__name__}")


def check_json_examples(examples: Sequence[Dict[str, Any]]) -> str:
    """The examples as JSON text; raises a clear error for a value JSON cannot hold."""
    try:
        return json.dumps(examples, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"the examples cannot be saved as JSON ({exc}); keep example fields to str, numbers, lists and "
            "dicts"
        ) from exc

"""Reading the files commands are given, with errors that name the option and say what is wrong.

Every reader raises :class:`InputError` (a ``ValueError``) whose message starts with the option, which the
CLI's error policy (:mod:`ucs.commands._errors`) prints as ``Error: --pool: ...``. Arrays are loaded
without unpickling.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

__all__ = [
    "InputError",
    "read_array",
    "read_matrix",
    "read_ids",
    "read_lines",
    "read_json",
    "check_out_suffix",
    "set_options",
    "default_note",
    "renamed_option",
    "executor_from_options",
]


#: Largest magnitude accepted in an embedding matrix: squares of larger values overflow float64 distances.
_MAX_ABS = 1e150


class InputError(ValueError):
    """A file given on the command line is unusable; the message names the option."""


def read_array(path: Path, param: str) -> np.ndarray:
    """A ``.npy`` array (missing files and folders raise ``OSError`` naming the path)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder", str(path))
    try:
        return np.load(path, allow_pickle=False)
    except OSError:
        raise
    except (ValueError, EOFError) as exc:
        why = "it holds pickled Python objects, which are never loaded" if "pickle" in str(exc) else str(exc)
        raise InputError(
            f"{param}: {path} is not a numeric .npy array ({why}); save it with numpy.save"
        ) from None


def read_matrix(path: Path, param: str, *, min_rows: int = 1, dim: Optional[int] = None) -> np.ndarray:
    """A finite 2-D float matrix with at least ``min_rows`` rows (and ``dim`` columns when given)."""
    arr = read_array(path, param)
    if arr.ndim != 2:
        raise InputError(
            f"{param}: {path} must hold a 2-D matrix (rows × dimensions); it has shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(f"{param}: {path} must hold real numbers; it holds {arr.dtype}")
    if arr.shape[0] < min_rows:
        raise InputError(f"{param}: {path} has {arr.shape[0]} row(s); at least {min_rows} are needed")
    if dim is not None and arr.shape[1] != dim:
        raise InputError(
            f"{param}: {path} has {arr.shape[1]} columns; expected {dim} (embed with the same model)"
        )
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)[:5].tolist()
        raise InputError(
            f"{param}: {path} has NaN or infinite values in {int(bad.sum())} row(s), e.g. rows {rows}; "
            "drop or re-embed those items"
        )
    if arr.size and float(np.abs(arr).max()) > _MAX_ABS:
        raise InputError(
            f"{param}: {path} has values as large as {float(np.abs(arr).max()):.3g}, whose squared "
            "distances overflow; rescale the embeddings (e.g. l2-normalise them)"
        )
    return arr


def read_ids(path: Path, param: str, n: Optional[int] = None) -> np.ndarray:
    """Cluster ids: a 1-D array of non-negative integers (``n`` of them when given), as int64."""
    arr = read_array(path, param)
    if arr.ndim != 1:
        raise InputError(f"{param}: {path} must hold one id per item (1-D); it has shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if (
            not np.issubdtype(arr.dtype, np.number)
            or not np.all(np.isfinite(arr))
            or np.any(arr != np.round(arr))
        ):
            raise InputError(
                f"{param}: {path} must hold integer cluster ids; it holds {arr.dtype} values such as "
                f"{arr[:3].tolist()}"
            )
    if arr.size and arr.min() < 0:
        raise InputError(f"{param}: {path} holds negative ids (smallest {arr.min()}); ids must be >= 0")
    if n is not None and arr.shape[0] != n:
        raise InputError(
            f"{param}: {path} has {arr.shape[0]} ids but the pool has {n} items; give one id per "
            "pool item, in pool order"
        )
    return arr.astype(np.int64)


def read_lines(path: Path, param: str, n: Optional[int] = None) -> list:
    """The lines of a UTF-8 text file (``n`` of them when given), each a non-blank text (the loaders'
    rule)."""
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{param}: {path} is not UTF-8 text (byte {exc.start}); convert it to UTF-8"
        ) from None
    if n is not None and len(lines) != n:
        raise InputError(
            f"{param}: {path} has {len(lines)} line(s) but the pool has {n} items; give one text per "
            "line, in pool order"
        )
    blank = [i + 1 for i, line in enumerate(lines) if not line.strip()]
    if blank:
        raise InputError(
            f"{param}: {path} line {blank[0]} is empty ({len(blank)} blank line(s)); every pool item "
            "needs a non-empty text"
        )
    return lines


def read_json(path: Path, param: str) -> Any:
    """A JSON document."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{param}: {path} is not valid JSON ({exc})") from None


def check_out_suffix(path: Path, param: str, allowed: Sequence[str]) -> Path:
    """``path`` if its suffix is one of ``allowed`` and it is not a folder."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{param}: {path} is a folder; give a file name ending in {' or '.join(allowed)}")
    if path.suffix.lower() not in allowed:
        raise InputError(f"{param}: {path} must end in {' or '.join(allowed)} (the output format)")
    return path


def set_options(**options: Any) -> dict:
    """The options a user set: ``None`` means "unset", leaving the library's default in place."""
    return {k: v for k, v in options.items() if v is not None}


def renamed_option(value: Any, old_value: Any, old: str, new: str) -> Any:
    """The value of option ``new``, or of its deprecated spelling ``old`` (``None``: not given); the old
    spelling prints one ``warning:`` line naming the new one, and the two given with different values is a
    usage error."""
    if old_value is None:
        return value
    import warnings

    import typer

    from ucs.pipeline import DeprecatedSettingWarning

    if value is not None and value != old_value:
        raise typer.BadParameter(
            f"{old} is the deprecated spelling of {new}; give {new} once (got {new} {value} "
            f"and {old} {old_value})",
            param_hint=new,
        )
    warnings.warn(f"{old} is deprecated: write {new} {old_value}", DeprecatedSettingWarning, stacklevel=2)
    return old_value


def default_note(name: str) -> str:
    """``"; default 128"`` for :data:`ucs.defaults.PCA_DIM`: the default an unset option leaves in place."""
    from ucs import defaults

    return f"; default {getattr(defaults, name)}"


def executor_from_options(executor: str, address: Optional[str], num_cpus: Optional[int]) -> Any:
    """:func:`ucs.distributed.make_executor` for ``--executor``/``--address``/``--num-cpus``, an inconsistent
    pair reported as a usage error of the command."""
    import typer

    from ucs.distributed import ExecutorOptionError, make_executor

    try:
        return make_executor(executor, address, num_cpus)
    except ExecutorOptionError as exc:
        raise typer.BadParameter(str(exc)) from None

"""The append-only JSON Lines record file of an evaluation, readable after any interruption.

Each record line carries a ``"_check"`` checksum (:func:`ucs.utils.store.line_check`). When reading, a line
that fails it, is not JSON, or lacks the record's key fields is skipped with one
:class:`~ucs.utils.integrity.DamagedFileWarning` naming the file and the lines; the runner then evaluates that
(method, seed, query) again and appends a fresh record. Lines without a checksum (files written before
checksums existed) are read as they are.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Iterable, Iterator

from ucs.utils.integrity import report_damage
from ucs.utils.store import CHECK_FIELD, line_check, signed_line

__all__ = ["RecordKey", "record_key", "read_records", "repair_tail", "RecordWriter"]

RecordKey = tuple  # (method, seed, query)


def record_key(rec: dict) -> RecordKey:
    return (rec["method"], int(rec["seed"]), int(rec["query"]))


def repair_tail(path: Path) -> int:
    """Cut a trailing partial line (a write interrupted mid-way) off ``path``; returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return 0
        # scan back for the last newline
        pos = size
        block = 65536
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            pos = start
        else:
            keep = 0
        fh.truncate(keep)
        return size - keep


def read_records(path: "str | os.PathLike[str]") -> list[dict]:
    """Every complete record of ``path`` (a partial last line is ignored; duplicates keep the first)."""
    path = Path(path)
    if not path.exists():
        return []
    out, seen, bad = [], set(), []
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        rec, problem = _parse(line)
        if rec is None:
            if not (i == len(lines) and problem == "not valid JSON"):  # else: partial last line of a write
                bad.append((i, problem))
            continue
        key = record_key(rec)
        if key in seen:
            warnings.warn(f"{path}: duplicate record {key} ignored", RuntimeWarning, stacklevel=2)
            continue
        seen.add(key)
        out.append(rec)
    if bad:
        where = ", ".join(f"line {i}: {p}" for i, p in bad[:3]) + (" ..." if len(bad) > 3 else "")
        report_damage(f"{path}: skipped {len(bad)} damaged record(s) ({where}); they will be evaluated again")
    return out


def _parse(line: str) -> "tuple[dict | None, str | None]":
    try:
        rec = json.loads(line)
    except json.JSONDecodeError:
        return None, "not valid JSON"
    if not isinstance(rec, dict):
        return None, "not a JSON object"
    if CHECK_FIELD in rec:
        if rec[CHECK_FIELD] != line_check(rec):
            return None, "checksum mismatch"
        rec.pop(CHECK_FIELD)
    try:
        record_key(rec)
    except (KeyError, TypeError, ValueError):
        return None, "no method/seed/query"
    return rec, None


class RecordWriter:
    """Appends records to a JSON Lines file, flushing and syncing after each batch."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, records: Iterable[dict]) -> None:
        for rec in records:
            self._fh.write(signed_line(rec))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_keys(records: Iterable[dict]) -> Iterator[RecordKey]:
    for r in records:
        yield record_key(r)

"""The append-only JSON Lines record file of an evaluation, readable after any interruption."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Iterable, Iterator

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
    out, seen = [], set()
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):  # partial last line of an interrupted write
                continue
            raise ValueError(f"{path}, line {i}: not a valid JSON record") from None
        key = record_key(rec)
        if key in seen:
            warnings.warn(f"{path}: duplicate record {key} ignored", RuntimeWarning, stacklevel=2)
            continue
        seen.add(key)
        out.append(rec)
    return out


class RecordWriter:
    """Appends records to a JSON Lines file, flushing and syncing after each batch."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, records: Iterable[dict]) -> None:
        for rec in records:
            self._fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
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

"""An append-only, content-addressed JSONL store shared by processes: the base of the answer and score stores.

Layout: ``<root>/<key[:2]>/<key>.jsonl`` where ``key`` is the SHA-256 of the canonical JSON of ``fields`` (what
the stored values depend on besides the entry's own key, e.g. the model identity). Each line is one JSON
object carrying its entry key under ``key_field``; the first line with a given key wins. Lines are appended
and flushed by one ``write`` call per batch, so several processes may append to one file; a torn last line
(an interrupted write) is skipped when reading and ended before the next append, so it spoils only itself.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

__all__ = ["KeyedJsonlStore", "fields_key"]


def fields_key(fields: Dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``fields``."""
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class KeyedJsonlStore:
    """Entries (JSON objects) keyed by ``entry[key_field]``, in one JSONL file per ``fields``.

    Parameters
    ----------
    root : path
        Directory of the store (created on first write).
    fields : dict
        What besides an entry's key determines its value; hashed into the file name.
    key_field : str
        Name of the entry key inside each line.

    Notes
    -----
    The file is read once, lazily: ``O(entries)`` time and memory; lookups are dictionary hits. Entries other
    processes append later are not seen by a store that has already read its file.
    """

    def __init__(self, root: "str | os.PathLike[str]", fields: Dict[str, Any], key_field: str) -> None:
        self.key = fields_key(fields)
        self.key_field = key_field
        self.path = Path(root) / self.key[:2] / f"{self.key}.jsonl"
        self._entries: Optional[Dict[str, dict]] = None

    def _load(self) -> Dict[str, dict]:
        if self._entries is None:
            self._entries = {}
            if self.path.is_file():
                with open(self.path, encoding="utf-8") as fh:
                    for line in fh:
                        try:
                            rec = json.loads(line)
                        except json.JSONDecodeError:
                            continue  # a torn line of an interrupted write
                        if isinstance(rec, dict) and isinstance(rec.get(self.key_field), str):
                            self._entries.setdefault(rec[self.key_field], rec)
        return self._entries

    def __len__(self) -> int:
        return len(self._load())

    def __contains__(self, key: str) -> bool:
        return key in self._load()

    def get(self, key: str) -> Optional[dict]:
        """The stored entry with this key, or ``None``."""
        return self._load().get(key)

    def put(self, entries: Iterable[dict]) -> int:
        """Append the ``entries`` whose key is not stored yet (one write, flushed); returns how many were written."""
        stored = self._load()
        lines = []
        for e in entries:
            k = e[self.key_field]
            if k in stored:
                continue
            stored[k] = e
            lines.append(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n")
        if lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as fh:
                if fh.tell() > 0:  # end a torn line first, so that it spoils only itself
                    with open(self.path, "rb") as rd:
                        rd.seek(-1, os.SEEK_END)
                        if rd.read(1) != b"\n":
                            fh.write(b"\n")
                fh.write("".join(lines).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
        return len(lines)

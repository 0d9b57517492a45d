"""An append-only, content-addressed JSONL store shared by processes: the base of the answer and score stores.

Layout: ``<root>/<key[:2]>/<key>.jsonl`` where ``key`` is the SHA-256 of the canonical JSON of ``fields``
(what the stored values depend on besides the entry's own key, e.g. the model identity). Each line is one JSON
object carrying its entry key under ``key_field``; the first line with a given key wins. Lines are appended
and flushed by one ``write`` call per batch, so several processes may append to one file; a torn last line
(an interrupted write) is skipped when reading and ended before the next append, so it spoils only itself.

A store may also hold sealed, xz-compressed segments of earlier lines (:func:`compact`): ``<key>.jsonl.xz``,
then ``<key>.1.jsonl.xz``, ``<key>.2.jsonl.xz``, ... They are read first, in that order and with the same
checks, and new entries are still appended to ``<key>.jsonl``. Each compaction seals only the lines appended
since the last one into a new segment and never rewrites an old one, so a store committed beside results grows
in git by what was added (``merge=True`` folds all segments into ``<key>.jsonl.xz`` for shipping elsewhere).
Compaction shrinks the lines about three times and changes no entry. An archive that cannot be decompressed
(truncated, failed CRC) is reported and skipped like a damaged line: its entries are recomputed. On POSIX
systems appends and compaction take an ``flock`` on the file, and an append that finds its file sealed and
removed meanwhile writes to a fresh one, so a store may be compacted while runs are still appending to it;
elsewhere, compact only when nothing writes.

Every line carries ``"_check"``, the first 16 hex digits of the SHA-256 of the rest of the line's canonical
JSON (:func:`line_check`). A line that fails it (flipped bytes, an edited value, a line written before
checksums existed) or fails the store's schema check (:meth:`KeyedJsonlStore.validate`) is skipped with one
:class:`~ucs.utils.integrity.DamagedFileWarning` per file naming it; the entry is then recomputed and appended
again (the file is never rewritten), and the first valid line of a key wins.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ucs.utils.integrity import report_damage

try:  # POSIX only; elsewhere appends and compaction are not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "KeyedJsonlStore",
    "archive_path",
    "compact",
    "fields_key",
    "line_check",
    "read_lines",
    "segment_paths",
    "signed_line",
    "store_files",
    "verify_line",
]

CHECK_FIELD = "_check"


def fields_key(fields: Dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``fields``."""
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def line_check(entry: Dict[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of ``entry``'s canonical JSON (without its ``_check`` field)."""
    body = {k: v for k, v in entry.items() if k != CHECK_FIELD}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def signed_line(entry: Dict[str, Any]) -> str:
    """One JSONL line holding ``entry`` and its :func:`line_check`."""
    return json.dumps({**entry, CHECK_FIELD: line_check(entry)}, ensure_ascii=False, sort_keys=True) + "\n"


def verify_line(line: str) -> Tuple[Optional[dict], Optional[str]]:
    """``(entry without _check, None)`` for a valid signed line, else ``(None, what is wrong)``."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None, "not valid JSON"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    if CHECK_FIELD not in obj:
        return None, "no checksum (written by an older version)"
    if obj[CHECK_FIELD] != line_check(obj):
        return None, "checksum mismatch"
    obj.pop(CHECK_FIELD)
    return obj, None


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

    def validate(self, entry: dict) -> Optional[str]:
        """What is wrong with a stored ``entry`` (``None``: nothing). Subclasses check their fields."""
        return None if isinstance(entry.get(self.key_field), str) else f"no string {self.key_field!r}"

    @classmethod
    def open_file(cls, path: "str | os.PathLike[str]", key_field: str) -> "KeyedJsonlStore":
        """The store file ``path`` (``<root>/<key[:2]>/<key>.jsonl``, read with its sealed segments) opened
        by name, for a tool that reads a store whose ``fields`` it does not know
        (:mod:`ucs.utils.store_diff`)."""
        store = cls.__new__(cls)
        store.path = Path(path)
        store.key = _key_of(store.path)
        store.key_field = key_field
        store._entries = None
        return store

    def entries(self) -> Dict[str, dict]:
        """Every valid entry by its key (a copy; the first line of a key wins). Cost: reads the file once."""
        return dict(self._load())

    def _load(self) -> Dict[str, dict]:
        """Read a consistent snapshot even while :func:`compact` runs: the appendable file is opened before
        the segments are listed, so lines it seals meanwhile are read from the open file or from its new
        segment (repeats are harmless: the first line of a key wins); a listing spoilt by a merge is read
        again."""
        while self._entries is None:
            try:
                fh = open(self.path, encoding="utf-8", errors="replace")
            except FileNotFoundError:
                fh = None
            try:
                snapshot = [(seg, read_lines(seg)) for seg in segment_paths(self.path)]
                if fh is not None:
                    snapshot.append((self.path, fh.read().split("\n")))
            except FileNotFoundError:  # a merge removed a listed segment: list again
                continue
            finally:
                if fh is not None:
                    fh.close()
            self._entries = {}
            for path, lines in snapshot:  # the sealed segments' lines come first
                self._read(path, lines)
        return self._entries

    def _read(self, path: Path, lines: List[str]) -> None:
        """Add the valid entries of ``lines`` (the first of a key wins); report the damaged ones."""
        assert self._entries is not None
        bad: List[Tuple[int, str]] = []
        for i, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            rec, problem = verify_line(line)
            if rec is not None:
                problem = self.validate(rec)
            if problem is not None:
                if not (i == len(lines) and problem == "not valid JSON"):  # a torn last line
                    bad.append((i, problem))
                continue
            self._entries.setdefault(rec[self.key_field], rec)
        if bad:
            where = ", ".join(f"line {i}: {p}" for i, p in bad[:3]) + (" ..." if len(bad) > 3 else "")
            report_damage(
                f"{path}: skipped {len(bad)} damaged line(s) ({where}); those entries will "
                "be recomputed and appended"
            )

    def __len__(self) -> int:
        return len(self._load())

    def __contains__(self, key: str) -> bool:
        return key in self._load()

    def get(self, key: str) -> Optional[dict]:
        """The stored entry with this key, or ``None``."""
        return self._load().get(key)

    def put(self, entries: Iterable[dict]) -> int:
        """Append the ``entries`` whose key is not stored yet (one write, flushed); returns how many were
        written."""
        stored = self._load()
        lines = []
        for e in entries:
            k = e[self.key_field]
            if k in stored:
                continue
            stored[k] = e
            lines.append(signed_line(e))
        if lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _open_for_append(self.path) as fh:
                if fh.tell() > 0:  # end a torn line first, so that it spoils only itself
                    with open(self.path, "rb") as rd:
                        rd.seek(-1, os.SEEK_END)
                        if rd.read(1) != b"\n":
                            fh.write(b"\n")
                fh.write("".join(lines).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
        return len(lines)


def _lock(fh: Any) -> None:
    if fcntl is not None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file is closed


def _is_current(fh: Any, path: Path) -> bool:
    """Whether the open ``fh`` is still the file named ``path`` (not sealed and removed meanwhile)."""
    try:
        return os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def _open_for_append(path: Path) -> Any:
    """``path`` opened for appending, locked, and still the file of that name: one that :func:`compact`
    sealed and removed while this process waited for the lock is closed and a fresh one opened."""
    while True:
        fh = open(path, "ab")
        _lock(fh)
        if fcntl is None or _is_current(fh, path):
            return fh
        fh.close()


def archive_path(path: Path) -> Path:
    """The first sealed segment of a store file: ``<key>.jsonl`` → ``<key>.jsonl.xz``."""
    return path.with_name(path.name + ".xz")


def _segment_number(seg: Path, stem: str) -> Optional[int]:
    """``n`` of ``<stem>.<n>.jsonl.xz`` (0 for ``<stem>.jsonl.xz``), ``None`` for any other name."""
    if seg.name == f"{stem}.jsonl.xz":
        return 0
    middle = seg.name[len(stem) + 1 : -len(".jsonl.xz")] if seg.name.startswith(stem + ".") else ""
    return int(middle) if middle.isdigit() and not middle.startswith("0") else None


def _key_of(path: Path) -> str:
    """``<key>`` of a store file ``<key>.jsonl``."""
    return path.name[: -len(".jsonl")]


def segment_paths(path: Path) -> List[Path]:
    """The sealed segments of the store file ``path`` (``<key>.jsonl``) in reading order: ``<key>.jsonl.xz``,
    then ``<key>.<n>.jsonl.xz`` by increasing ``n``. Cost: one directory listing."""
    stem = _key_of(path)
    numbered = [
        (n, seg)
        for seg in path.parent.glob(f"{stem}*.jsonl.xz")
        if (n := _segment_number(seg, stem)) is not None
    ]
    return [seg for _, seg in sorted(numbered)]


def read_lines(path: Path) -> List[str]:
    """The lines of a store file or of a sealed segment (whose own CRC-64 is checked as it is read); a segment
    that cannot be decompressed is reported and gives no lines, so its entries are recomputed."""
    if path.suffix == ".xz":
        try:
            with lzma.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                return fh.read().split("\n")
        except (lzma.LZMAError, EOFError) as exc:
            report_damage(
                f"{path}: cannot be decompressed ({exc}); its entries will be recomputed and appended"
            )
            return []
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().split("\n")


def _write_segment(target: Path, lines: List[str]) -> None:
    """Write ``lines`` xz-compressed to ``target`` atomically (a temporary file, then a rename)."""
    tmp = target.with_name(target.name + ".tmp")
    with lzma.open(tmp, "wt", encoding="utf-8", preset=9) as out:
        out.write("".join(ln + "\n" for ln in lines))
    os.replace(tmp, target)


def _seal(path: Path, merge: bool) -> Optional[Path]:
    """Seal the store file ``path`` (held locked): its valid lines that no segment holds go to a new segment;
    with ``merge`` every segment's lines and those go to ``<key>.jsonl.xz`` and the other segments are
    removed. Returns the segment written (``None``: nothing new). ``path`` is removed either way."""
    segments = segment_paths(path)
    sealed = [ln for seg in segments for ln in read_lines(seg) if ln.strip()]
    known = set(sealed)
    fresh = [
        ln
        for ln in dict.fromkeys(read_lines(path))
        if ln.strip() and ln not in known and verify_line(ln)[0] is not None
    ]
    target: Optional[Path] = None
    if merge and (fresh or len(segments) > 1):
        target = archive_path(path)
        _write_segment(target, [ln for ln in dict.fromkeys(sealed) if verify_line(ln)[0] is not None] + fresh)
        for seg in segments[1:]:
            seg.unlink()
    elif fresh:
        key = _key_of(path)
        n = _segment_number(segments[-1], key) + 1 if segments else 0
        target = path.with_name(f"{key}.{n}.jsonl.xz") if n else archive_path(path)
        _write_segment(target, fresh)
    path.unlink()
    return target


def _is_store_stem(stem: Path) -> bool:
    """Whether ``stem`` names a store file: ``<key[:2]>/<key>`` with ``key`` a SHA-256 hex digest."""
    key = stem.name
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key) and stem.parent.name == key[:2]


def store_files(root: "str | os.PathLike[str]") -> List[Path]:
    """The store files under ``root``, as ``<key[:2]>/<key>.jsonl`` paths, whether the appendable file, its
    sealed segments or both exist; other JSONL files (an evaluation's ``records.jsonl``) are not store files.
    Sorted. Cost: one recursive listing."""
    found = [p for pattern in ("*.jsonl", "*.jsonl.xz") for p in Path(root).rglob(pattern)]
    stems = {p.with_name(p.name.split(".")[0]) for p in found}
    return sorted(stem.with_name(stem.name + ".jsonl") for stem in stems if _is_store_stem(stem))


def compact(root: "str | os.PathLike[str]", merge: bool = False) -> List[Path]:
    """Seal every store file under ``root`` (``<key[:2]>/<key>.jsonl``; other JSONL files, such as an
    evaluation's ``records.jsonl``, are left alone): the lines appended to ``<key>.jsonl`` since the last
    compaction that pass their checksum, in order and without exact repeats of sealed lines, become a new
    segment ``<key>.<n>.jsonl.xz`` (the first: ``<key>.jsonl.xz``), written atomically; then the appendable
    file is removed. Old segments are never rewritten, so in git a compaction costs what it adds. With
    ``merge`` every segment of a key is folded into ``<key>.jsonl.xz`` instead (lines in reading order, so the
    first line of each key is the same one; lines failing their checksum dropped). Lines that fail their
    checksum, torn ones included, are dropped — readers skip them anyway. Each file is locked while it is
    sealed, so on POSIX systems runs may go on appending (their next lines go to a fresh file); elsewhere, run
    it when no process is writing. Returns the segments written. Cost: O(size of the key's segments) time and
    memory per key.
    """
    written = []
    for path in store_files(root):  # never an evaluation's records.jsonl
        if not path.exists() and not merge:
            continue  # nothing appended since the last compaction, or sealed by a concurrent compact
        with open(path, "ab") as fh:  # created when merging a key that has only segments
            _lock(fh)
            if not _is_current(fh, path):  # sealed by a concurrent compact while this one waited
                continue
            target = _seal(path, merge)
        if target is not None:
            written.append(target)
    return written


_USAGE = "usage: python -m ucs.utils.store compact [--merge] DIR"

if __name__ == "__main__":  # python -m ucs.utils.store compact [--merge] DIR
    args = sys.argv[1:]
    merge = "--merge" in args
    args = [a for a in args if a != "--merge"]
    if len(args) != 2 or args[0] != "compact" or not Path(args[1]).is_dir():
        print(
            _USAGE
            + (
                "" if len(args) != 2 or Path(args[1]).is_dir() else f"\nerror: DIR: {args[1]} is not a folder"
            ),
            file=sys.stderr,
        )
        raise SystemExit(2)
    for arc in compact(args[1], merge=merge):
        print(arc)

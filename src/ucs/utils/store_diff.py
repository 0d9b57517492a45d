"""``python -m ucs.utils.store_diff A B [--rtol R]``: do two answer or score stores agree where they overlap?

A and B are store folders (``--store-dir`` of ``ucs reproduce``, e.g. ``docs/results/stores``). Every store
file of A (``<key[:2]>/<key>.jsonl`` with its sealed segments: one model, mode and label set) is read beside
B's file of the same key, and each entry both hold is compared field by field, without the provenance
field ``answered_on`` (the CPU that computed it). The use: recompute part of a committed run on another
machine into an empty store, then ask whether that machine gives the same answers and scores.

Notation: for an entry whose two sides differ only in numbers (an MDL subset score: a log-probability per
label), ``abs = max |a_i − b_i|`` and ``rel = max |a_i − b_i| / max(|b_i|, tiny)`` over its numbers ``i``. An
entry is *equal* when identical, *close* when it differs only in numbers with ``rel ≤ rtol``, and *differs*
otherwise (another answer text, another label, or numbers further apart). Exit 0 when no shared entry
differs, 1 when one does, 2 on a usage error or when the stores share no entry. Cost: reads both stores'
files of A's keys once, O(entries) time and memory.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from ucs.utils.store import KeyedJsonlStore, read_lines, segment_paths, store_files, verify_line

__all__ = ["FileDiff", "diff_stores", "main"]

PROVENANCE = ("answered_on",)
"""Fields that say who computed an entry, not what it is."""

KEY_FIELDS = ("key", "prompt_sha256", "sample_sha256")
"""Entry-key fields of this package's stores: MDL scores, answers, sampled answers."""


@dataclass
class FileDiff:
    """How one store file of A compares with B's file of the same key (``name``: ``<key[:2]>/<key>``)."""

    name: str
    in_a: int
    in_b: int
    equal: int = 0
    close: int = 0
    differ: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0

    @property
    def shared(self) -> int:
        return self.equal + self.close + self.differ


def _numeric_gap(a: Any, b: Any) -> Optional[Tuple[float, float]]:
    """``(abs, rel)`` over the numbers of two equal-shaped JSON values that differ only in numbers; ``None``
    when they differ in anything else (shape, a string, a bool, null)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return (0.0, 0.0) if a == b else None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        gap = abs(a - b)
        return gap, (gap / max(abs(b), sys.float_info.min) if gap else 0.0)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        gaps = [_numeric_gap(x, y) for x, y in zip(a, b)]
    elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        gaps = [_numeric_gap(a[k], b[k]) for k in a]
    else:
        return None
    if any(g is None for g in gaps):
        return None
    return max((g[0] for g in gaps), default=0.0), max((g[1] for g in gaps), default=0.0)  # type: ignore[index]


def _key_field(path: Path) -> Optional[str]:
    """The entry-key field of the store file ``path``: the first of :data:`KEY_FIELDS` that its first valid
    line carries (``None``: no valid line)."""
    for part in [*segment_paths(path), path]:
        for line in read_lines(part) if part.exists() else []:
            entry, _ = verify_line(line) if line.strip() else (None, None)
            if entry is not None:
                return next((f for f in KEY_FIELDS if isinstance(entry.get(f), str)), None)
    return None


def diff_stores(a_root: "str | Path", b_root: "str | Path", rtol: float = 0.0) -> List[FileDiff]:
    """Compare every store file of ``a_root`` with ``b_root``'s file of the same key (see the module notes);
    one :class:`FileDiff` per file of A, sorted by name. A file B lacks counts ``in_b = 0``."""
    out = []
    for path in store_files(a_root):
        rel = path.relative_to(a_root)
        field = _key_field(path)
        a = KeyedJsonlStore.open_file(path, field).entries() if field else {}
        b = KeyedJsonlStore.open_file(Path(b_root) / rel, field).entries() if field else {}
        diff = FileDiff(str(rel)[: -len(".jsonl")], len(a), len(b))
        for key in a.keys() & b.keys():
            x, y = ({k: v for k, v in e.items() if k not in PROVENANCE} for e in (a[key], b[key]))
            if x == y:
                diff.equal += 1
                continue
            gap = _numeric_gap(x, y)
            abs_gap, rel_gap = gap if gap is not None else (math.inf, math.inf)
            diff.max_abs, diff.max_rel = max(diff.max_abs, abs_gap), max(diff.max_rel, rel_gap)
            if rel_gap <= rtol:
                diff.close += 1
            else:
                diff.differ += 1
        out.append(diff)
    return out


def _line(d: FileDiff, rtol: float) -> str:
    text = f"{d.name}: A {d.in_a:,}, B {d.in_b:,}, both {d.shared:,}: {d.equal:,} equal"
    if d.close:
        text += f", {d.close:,} within rtol {rtol:g}"
    if d.differ:
        text += f", {d.differ:,} DIFFER"
    if d.close or d.differ:
        text += f" (largest difference {d.max_abs:.2g}, relative {d.max_rel:.2g})"
    return text


_USAGE = (
    "usage: python -m ucs.utils.store_diff A B [--rtol R]  (store folders; R: relative tolerance, default 0)"
)


def _parse(args: List[str]) -> Tuple[List[str], float]:
    rtol = 0.0
    if "--rtol" in args:
        i = args.index("--rtol")
        try:
            rtol = float(args[i + 1])
        except (IndexError, ValueError):
            raise ValueError("--rtol: expected a number such as 1e-6") from None
        if not rtol >= 0:
            raise ValueError(f"--rtol: must be 0 or more; got {args[i + 1]}")
        del args[i : i + 2]
    if len(args) != 2:
        raise ValueError("expected two store folders")
    for name, folder in zip("AB", args):
        if not Path(folder).is_dir():
            raise ValueError(f"{name}: {folder} is not a folder")
    return args, rtol


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print one line per store file of A; exit 0 when no shared entry differs, 1 when one does, 2 on a usage
    error or when A and B share no entry."""
    try:
        (a_root, b_root), rtol = _parse(list(sys.argv[1:] if argv is None else argv))
    except ValueError as exc:
        print(f"{_USAGE}\nerror: {exc}", file=sys.stderr)
        return 2
    diffs = diff_stores(a_root, b_root, rtol)
    for d in diffs:
        print(_line(d, rtol))
    if not any(d.shared for d in diffs):
        print(f"Error: A ({a_root}) and B ({b_root}) share no entry: nothing was compared", file=sys.stderr)
        return 2
    return 1 if any(d.differ for d in diffs) else 0


if __name__ == "__main__":
    raise SystemExit(main())

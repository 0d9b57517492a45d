"""``python -m ucs.evaluation.compare A B``: do two run folders or pages hold the same selections and answers?

A and B are run folders, their ``manifest.json``, or ``ucs reproduce`` page manifests
(``docs/results/<experiment>.manifest.json``, compared cell by cell), read through
:func:`ucs.evaluation.fingerprints.load_fingerprints`. Two run folders are also compared record by record.
Exit 0 when every method both sides hold agrees, 1 when one differs, 2 on a usage error.
"""

from __future__ import annotations

import sys
from typing import Mapping, Optional, Sequence

from ucs.evaluation.fingerprints import (
    HASHED_FIELDS,
    compare_fingerprints,
    compare_records,
    load_fingerprints,
)
from ucs.evaluation.run_folder import RunFolder

__all__ = ["main"]


def _describe(cmp: Mapping[str, Mapping[str, Optional[bool]]]) -> list[str]:
    lines = []
    for method, row in cmp.items():
        if row["n"] is None:
            lines.append(f"  {method}: only on one side")
            continue
        parts = [f"{f} {'equal' if row[f] else 'DIFFER'}" for f in ("n", *HASHED_FIELDS)]
        lines.append(f"  {method}: " + ", ".join(parts))
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Compare two folders' or manifests' fingerprints; exit 0 when every shared method agrees, 1 when one
    differs, 2 on a usage error."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print(
            "usage: python -m ucs.evaluation.compare A B  (run folders, runner manifests or page manifests)",
            file=sys.stderr,
        )
        return 2
    try:
        a, b = load_fingerprints(args[0]), load_fingerprints(args[1])
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    cells = [c for c in a if c in b] if not ("" in a and "" in b) else [""]
    if not cells:
        print(f"Error: no cell in common (A: {', '.join(a)}; B: {', '.join(b)})", file=sys.stderr)
        return 2
    differ = False
    folders = [RunFolder(x) for x in args]
    if all(f.records.exists() for f in folders):
        counts = compare_records(folders[0].read_records(), folders[1].read_records())
        for method, row in sorted(counts.items()):
            print(
                f"  {method}: {row['common']} records in both; {row['selections_differ']} with other "
                f"demonstrations, {row['answers_differ']} with another answer ({row['correct_differ']} of "
                "them "
                "changed correctness)"
            )
    for cell in cells:
        cmp = compare_fingerprints(a[cell], b[cell])
        print(cell or "records")
        print("\n".join(_describe(cmp)))
        differ |= any(v is False for row in cmp.values() for v in row.values())
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())

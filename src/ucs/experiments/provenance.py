"""Where a page's cells were computed, kept across re-renders.

``ucs reproduce`` rewrites a page's manifest on every invocation, and a cell answered from its runner folder
(``--render-only``, or a re-run with everything recorded) costs nothing that time. So that the invocation
which did the work — its command, date, CPU, wall time and stage timings — is not lost, each such cell's
manifest entry carries ``computed_by``, taken from the manifest being replaced: that entry's own
``computed_by``, or the entry itself when it was computed in that invocation. Carried only while the cell's
record fingerprints are unchanged (the same records behind the same numbers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

__all__ = ["read_old_manifest", "earlier_computation"]


def read_old_manifest(path: "str | Path") -> Optional[Dict[str, Any]]:
    """The page manifest at ``path``, or ``None`` when there is none or it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def earlier_computation(
    old: Optional[Dict[str, Any]], cell_id: str, fingerprints: Optional[Dict[str, Any]]
) -> Optional[Dict[str, Any]]:
    """The computation of cell ``cell_id`` recorded by the earlier page manifest ``old``, or ``None``.

    ``fingerprints`` are the cell's record fingerprints now (``None`` for cells without records); when both
    sides have them and they differ, the earlier timings describe other records and nothing is returned.
    Returns ``{"command", "created_at", "cpu", "wall_s", "new_records", "timings"}``. O(cells of ``old``).
    """
    if not old:
        return None
    for entry, res in zip(old.get("cells") or [], old.get("results") or []):
        if not isinstance(entry, dict) or entry.get("cell") != cell_id:
            continue
        before = (entry.get("runner_manifest") or {}).get("fingerprints")
        if fingerprints and before and before != fingerprints:
            return None
        if entry.get("computed_by"):
            return entry["computed_by"]
        if not entry.get("computed_in_this_invocation"):
            return None
        platform = old.get("platform") or {}
        res = res if isinstance(res, dict) else {}
        return {
            "command": old.get("command"),
            "created_at": old.get("created_at"),
            "cpu": platform.get("cpu_details") or platform.get("cpu"),
            "wall_s": res.get("wall_s"),
            "new_records": res.get("new_records"),
            "timings": res.get("timings"),
        }
    return None

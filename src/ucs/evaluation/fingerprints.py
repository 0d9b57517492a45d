"""Fingerprints of an evaluation's records: what each method selected and answered, one hash each.

A run folder's manifest keeps, per method, the number of records ``n``, the SHA-256 of every
``(seed, query, selected demonstrations)`` in key order (``selections``) and of every ``(seed, query,
parsed answer id)`` (``answers``). Two folders of the same configuration whose fingerprints agree chose the
same demonstrations and got the same answers for every query of every run, so pages made on different
machines can be compared exactly from their manifests alone, without their record files. Where both record
files are at hand, :func:`compare_records` counts the queries that differ.

Command line: ``python -m ucs.evaluation.compare A B`` with two run folders, runner manifests or
``ucs reproduce`` page manifests (``docs/results/<experiment>.manifest.json``, compared cell by cell).

Costs: O(R log R) for R records (a sort by key), one pass of hashing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from ucs.evaluation.run_folder import MANIFEST, RECORDS, RunFolder, read_manifest

__all__ = [
    "HASHED_FIELDS",
    "record_fingerprints",
    "compare_fingerprints",
    "compare_records",
    "load_fingerprints",
]

#: Fields of a fingerprint that must be equal for two methods' records to be called the same.
HASHED_FIELDS = ("selections", "answers")


def _digest(rows: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, separators=(",", ":")).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _by_method(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        out.setdefault(str(r["method"]), []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: (int(r["seed"]), int(r["query"])))
    return out


def _selected(r: Mapping[str, Any]) -> list[int]:
    return [int(i) for i in (r.get("selected") or [])]


def _answer(r: Mapping[str, Any]) -> Optional[int]:
    p = r.get("parsed_id")
    return None if p is None else int(p)


def record_fingerprints(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: ``{"n": R_m, "selections": sha256, "answers": sha256}`` over its records in key order.

    Records are dicts with at least ``method``, ``seed``, ``query``, ``selected`` (demonstration indices)
    and ``parsed_id`` (the parsed label id or ``None``), as the evaluation runner writes them.
    """
    out = {}
    for method, rows in sorted(_by_method(records).items()):
        keys = [(int(r["seed"]), int(r["query"])) for r in rows]
        out[method] = {
            "n": len(rows),
            "selections": _digest([*k, _selected(r)] for k, r in zip(keys, rows)),
            "answers": _digest([*k, _answer(r)] for k, r in zip(keys, rows)),
        }
    return out


def compare_fingerprints(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Optional[bool]]]:
    """Per method of either side: whether ``n``, ``selections`` and ``answers`` agree (``None`` when one side
    lacks the method)."""
    out: dict[str, dict[str, Optional[bool]]] = {}
    for m in sorted(set(a) | set(b)):
        if m not in a or m not in b:
            out[m] = {f: None for f in ("n", *HASHED_FIELDS)}
        else:
            out[m] = {f: a[m].get(f) == b[m].get(f) for f in ("n", *HASHED_FIELDS)}
    return out


def compare_records(
    a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Per method: records present in both (``common``), and among them how many chose other demonstrations
    (``selections_differ``) or got another parsed answer (``answers_differ``), and how many of those flipped
    correctness (``correct_differ``)."""
    index = {(str(r["method"]), int(r["seed"]), int(r["query"])): r for r in b}
    out: dict[str, dict[str, int]] = {}
    for r in a:
        key = (str(r["method"]), int(r["seed"]), int(r["query"]))
        row = out.setdefault(
            key[0], {"common": 0, "selections_differ": 0, "answers_differ": 0, "correct_differ": 0}
        )
        other = index.get(key)
        if other is None:
            continue
        row["common"] += 1
        row["selections_differ"] += _selected(r) != _selected(other)
        row["answers_differ"] += _answer(r) != _answer(other)
        row["correct_differ"] += bool(r.get("correct")) != bool(other.get("correct"))
    return out


def load_fingerprints(path: "str | Path") -> dict[str, dict[str, dict[str, Any]]]:
    """Fingerprints by cell from a run folder (its records), a runner manifest (cell ``""``) or a page
    manifest (one entry per cell). Raises ``ValueError`` naming the path when it holds none."""
    p = Path(path)
    if p.is_dir():
        folder = RunFolder(p)
        if folder.records.exists():
            return {"": record_fingerprints(folder.read_records())}
        p = folder.manifest
    if not p.exists():
        raise ValueError(
            f"{path}: neither a run folder with {RECORDS} nor a manifest file; give a run folder, "
            f"its {MANIFEST} or a docs/results/<experiment>.manifest.json"
        )
    manifest = read_manifest(p)
    if isinstance(manifest.get("cells"), list):
        found = {
            str(c.get("cell")): (c.get("runner_manifest") or {}).get("fingerprints")
            for c in manifest["cells"]
        }
    else:
        found = {"": manifest.get("fingerprints")}
    kept = {cell: fp for cell, fp in found.items() if fp}
    if not kept:
        raise ValueError(
            f"{path}: no fingerprints recorded (manifests written before they were added have none); "
            "compare run folders with their records instead"
        )
    return kept

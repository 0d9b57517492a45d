"""The results committed under docs/results read back whole: every sealed store segment decompresses and every
line passes its checksum, and every page's manifest is valid JSON. A damaged commit fails here, not in a
later run that would quietly recompute (or, for a manifest, refuse) what the repository claims to hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ucs.utils.store import read_lines, verify_line

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
SEGMENTS = sorted((RESULTS / "stores").rglob("*.jsonl.xz"))
MANIFESTS = sorted(RESULTS.rglob("*.manifest.json"))


def test_the_committed_results_are_there():
    assert len(SEGMENTS) >= 10 and len(MANIFESTS) >= 10


@pytest.mark.parametrize("segment", SEGMENTS, ids=lambda p: p.name[:12])
def test_every_committed_store_line_verifies(segment, recwarn):
    lines = [ln for ln in read_lines(segment) if ln.strip()]
    assert not recwarn.list, f"{segment} cannot be decompressed: {recwarn.list[0].message}"
    bad = [i for i, ln in enumerate(lines, 1) if verify_line(ln)[0] is None]
    assert lines and not bad, (
        f"{segment}: {len(bad)} of {len(lines)} lines fail their checksum (first: {bad[:3]})"
    )


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: str(p.relative_to(RESULTS)))
def test_every_page_manifest_is_valid_json(manifest):
    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and data

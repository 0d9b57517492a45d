"""Plain-text views of a run folder for the terminal: stage timings and chosen demonstrations.

``ucs evaluate`` ends with these (and ``ucs demo`` shows its demonstrations the same way); they read the
folder through :func:`~ucs.report.data.load_run`, like the HTML report, and need neither jinja2 nor plotly.
"""

from __future__ import annotations

from typing import List, Optional

from ucs.report.data import RunData
from ucs.report.tables import timing_rows

__all__ = ["timings_line", "demonstrations_text", "DATASET_HELP"]

#: What ``--dataset`` accepts (one text for every command that takes it).
DATASET_HELP = (
    "Registry name (banking77, clinc150, hwu64, bbeh_causal_understanding, bbeh_object_properties, "
    "bbeh_shuffled_objects, sample) or the path of a .csv/.tsv/.jsonl table with columns 'text' and 'label' "
    "(one row per example). Its 'split' column (pool/train, test) decides the split when it has one; else "
    "--test-file gives the test rows; else a seeded 80/20 split of its rows."
)


def timings_line(run: RunData) -> Optional[str]:
    """``stage timings (s), this call: evaluate 12.3 · pool_embedding 4.1 ... (N calls recorded)``."""
    rows = timing_rows(run)
    if not rows:
        return None
    last = rows[-1]
    stages = " · ".join(f"{k} {v:.2f}" for k, v in last["stages"])
    return f"stage timings (s), this call: {stages} ({len(rows)} call(s) recorded in pipeline/timings.jsonl)"


def demonstrations_text(run: RunData, query: int = 0, seed: Optional[int] = None) -> str:
    """The demonstrations each method chose for ``query`` (first run seed by default), as ``ucs demo`` shows
    them: ``- 'text' → label  [cluster c, size n]``, then the prediction."""
    seed = run.seeds[0] if seed is None and run.seeds else seed
    lines: List[str] = []
    by_key = {(r["method"], int(r["seed"]), int(r["query"])): r for r in run.records}
    for m in run.methods:
        r = by_key.get((m, int(seed), int(query))) if seed is not None else None
        if r is None:
            continue
        lines.append(
            f"[{m}] demonstrations for query {query} ({run.query_text(query)!r}, gold {r.get('gold')}):"
        )
        for d in run.demonstrations(r):
            c = "" if d.cluster is None else f"  [cluster {d.cluster}, size {d.cluster_size}]"
            lines.append(f"  - {d.text!r} → {d.label}{c}")
        verdict = "right" if r.get("correct") else "wrong"
        lines.append(f"  predicted {r.get('parsed')!r}: {verdict}")
    return "\n".join(lines)

"""The ``hwu64_parse`` results page: which demonstrations help a small reader write a structured parse?

HWU64 utterances → ``scenario_intent(slot=value, …)`` parses made from the dataset's own slot annotations
(:func:`ucs.data.load_dataset` ``("hwu64_parse", form="call")``; pool: fold 1's train set, queries:
``--queries`` of its test set drawn with seed 42). Each backbone writes every query's parse greedily after
``--k`` demonstrations chosen by each row's selector; exact match scores it. Rows: TopK (the reference), TopK
with the most similar demonstration last, MMR, Set-BSR, DPP+UCS and TopK+UCS (its relevance floor), beside the
copy baseline (the chosen demonstration nearest the query, its parse copied with no model). Every answer is
kept in ``--work/<backbone>/records.jsonl`` as it comes (:func:`ucs.experiments.compare_table.grid_table`):
rerun the same command to continue (the answers are also kept, compressed, in
``benchmarks/compare/hwu64_parse_answers/``, which seeds an absent ``--work`` folder), ``--limit`` to stop
after the first N queries for now (``--limit gemma3=300`` for one backbone); the page shows the queries every
row has answered and says how many. The verdict under each table is generated from the paired intervals.

    python benchmarks/compare/hwu64_parse_page.py --backbones smollm2,gemma3 --queries 500 --workers 2 \\
        --out docs/results/compare_hwu64_parse.md
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from ucs import defaults as D

ROOT = Path(__file__).resolve().parents[2]

#: (row name, cell) of the page, the reference first.
ROWS = [
    ("TopK", "topk:{k}:selected"),
    ("TopK (most similar last)", "topk:{k}:similar_last"),
    ("MMR", "mmr:{k}:selected"),
    ("Set-BSR", "bsr:{k}:selected"),
    ("DPP+UCS", "dpp+ucs:{k}:selected"),
    ("TopK+UCS (floor)", "topk+ucs:{k}:selected"),
]


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ci(ci: Any, sign: bool = False) -> str:
    if not ci:
        return ""
    f = "{:+.1f}" if sign else "{:.1f}"
    return f"[{f.format(100 * ci[0])}, {f.format(100 * ci[1])}]"


def verdict(rows: List[Dict[str, Any]], names: Dict[str, str]) -> str:
    """One paragraph from the intervals: rows above / below TopK beyond doubt, and the reference against its
    copy baseline."""
    ref = next(r for r in rows if r["reference"])
    up = [names[r["cell"]] for r in rows if not r["reference"] and r["delta_ci"] and r["delta_ci"][0] > 0]
    down = [names[r["cell"]] for r in rows if not r["reference"] and r["delta_ci"] and r["delta_ci"][1] < 0]
    same = [names[r["cell"]] for r in rows if not r["reference"] and names[r["cell"]] not in up + down]
    parts = [
        f"Above TopK beyond doubt: {', '.join(up) if up else 'no row'}.",
        f"Below it: {', '.join(down) if down else 'no row'}.",
        f"Within noise of it: {', '.join(same) if same else 'no row'}.",
    ]
    lo, hi = ref.get("over_copy_ci") or (None, None)
    if lo is not None:
        word = "beats" if lo > 0 else ("loses to" if hi < 0 else "does not differ beyond doubt from")
        parts.append(
            f"TopK's model {word} copying the nearest chosen demonstration's parse "
            f"({100 * ref['over_copy']:+.1f} points {_ci(ref['over_copy_ci'], True)})."
        )
    return " ".join(parts)


def table(rows: List[Dict[str, Any]], names: Dict[str, str]) -> List[str]:
    out = [
        "| row | cell | exact match % [95 % CI] | Δ vs TopK, points [paired 95 % CI] | copy baseline % | "
        "model − copy, points [paired 95 % CI] |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: list(names).index(r["cell"])):
        delta = "—" if r["reference"] else f"{100 * r['delta']:+.1f} {_ci(r['delta_ci'], True)}"
        over = (
            ""
            if r.get("over_copy") is None
            else f"{100 * r['over_copy']:+.1f} {_ci(r['over_copy_ci'], True)}"
        )
        out.append(
            f"| {names[r['cell']]} | {r['cell']} | {_pct(r['accuracy'])} {_ci(r['ci'])} | {delta} | "
            f"{_pct(r.get('copy'))} | {over} |"
        )
    return out


def restore_answers(work: Path, answers: Path) -> None:
    """Seed an absent ``work`` folder from the committed answers (``records.jsonl.xz`` and ``compare.json``),
    so a run on a fresh machine continues instead of starting over; every line is checked again when read."""
    if (work / "records.jsonl").exists() or not (answers / "records.jsonl.xz").is_file():
        return
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(answers / "compare.json", work / "compare.json")
    (work / "records.jsonl").write_bytes(lzma.decompress((answers / "records.jsonl.xz").read_bytes()))


def save_answers(work: Path, answers: Path) -> None:
    """Commit-sized copy of ``work``'s answers (the records, xz-compressed, and the folder's key)."""
    if not (work / "records.jsonl").is_file():
        return
    answers.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work / "compare.json", answers / "compare.json")
    (answers / "records.jsonl.xz").write_bytes(lzma.compress((work / "records.jsonl").read_bytes()))


def run_backbone(name: str, pool: list, queries: list, a: argparse.Namespace) -> Dict[str, Any]:
    from ucs.experiments.compare_table import grid_table
    from ucs.experiments.generate import default_max_new_tokens, generating_predictor
    from ucs.models import BackbonePool

    restore_answers(a.work / name, a.answers / name)
    bb = BackbonePool(name, workers=a.workers, weights=a.weights)
    try:
        new = default_max_new_tokens(bb.count_tokens, [e["label"] for e in pool])
        predictor = generating_predictor(bb, new)
        cells = [c.format(k=a.k) for _, c in ROWS]
        rows = grid_table(
            pool,
            queries,
            predictor,
            cells,
            out=a.work / name,
            metric="exact",
            seed=0,
            limit=a.limit.get(name, a.limit.get("*")),
        )
    finally:
        bb.close()
        save_answers(a.work / name, a.answers / name)
    import json

    done = json.loads((a.work / name / "table.json").read_text())["n_queries"]
    return {"rows": rows, "n": done, "max_new_tokens": new}


def limits(text: str) -> Dict[str, int]:
    """``--limit``: ``"300"`` (every backbone) or ``"smollm2=500,gemma3=300"`` → ``{backbone: N}`` (``"*"``:
    every backbone not named)."""
    out: Dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, n = part.rpartition("=")
        if not n.isdigit() or int(n) < 1:
            raise argparse.ArgumentTypeError(
                f"{part!r}: give a positive number of queries, e.g. 300 or gemma3=300"
            )
        out[name.strip() or "*"] = int(n)
    return out


def main() -> None:
    from ucs.data import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backbones", default="smollm2,gemma3")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument(
        "--weights", default=D.COMPARE_WEIGHTS, help="GGUF weights: file, f32 or f16 (ucs compare's)"
    )
    ap.add_argument(
        "--limit",
        type=limits,
        default="",
        help="answer only the first N queries for now: N, or "
        "BACKBONE=N,... (a backbone not named: every query)",
    )
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "hwu64_parse")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "compare_hwu64_parse.md")
    ap.add_argument(
        "--answers",
        type=Path,
        default=Path(__file__).with_name("hwu64_parse_answers"),
        help="committed answers: seed an absent --work folder, updated after each backbone",
    )
    ap.add_argument("--save-answers", action="store_true", help="only copy --work's answers to --answers")
    a = ap.parse_args()
    if a.save_answers:
        for name in a.backbones.split(","):
            save_answers(a.work / name, a.answers / name)
        return
    ds = load_dataset("hwu64_parse", a.data_dir, form="call")
    pool = [{"text": t, "label": y} for t, y in zip(ds.pool.texts, ds.label_text(ds.pool.labels))]
    test = [{"text": t, "label": y} for t, y in zip(ds.test.texts, ds.label_text(ds.test.labels))]
    pick = np.random.default_rng(42).permutation(len(test))[: a.queries]
    queries = [test[i] for i in sorted(pick.tolist())]
    names = {c.format(k=a.k): n for n, c in ROWS}
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "unknown",
    )
    lines = [
        "# Which demonstrations help a small reader write a parse? (`hwu64_parse`, exact match)",
        "",
        "HWU64 utterances → `scenario_intent(slot=value, …)` parses from the dataset's slot annotations; "
        "pool "
        f"{len(pool)} examples (fold 1 train), {a.queries} test queries drawn with seed 42; k = {a.k} "
        "demonstrations in the order each row names; the backbone writes greedily, one line, scored by exact "
        "match. Copy baseline: the chosen demonstration nearest the query, its parse copied with no model. Δ "
        "and "
        "model − copy are paired over the same queries (bootstrap, 95 %).",
        "",
        f"- machine: {cpu}, {len(os.sched_getaffinity(0))} cores; Python {sys.version.split()[0]}",
        f"- command: `python benchmarks/compare/hwu64_parse_page.py --backbones {a.backbones} --queries "
        f"{a.queries} --k {a.k} --weights {a.weights}`"
        + (
            " (`--limit "
            + ",".join(f"{k}={v}" if k != "*" else str(v) for k, v in a.limit.items())
            + "` so far)"
            if a.limit
            else ""
        ),
        "",
    ]
    for name in a.backbones.split(","):
        got = run_backbone(name, pool, queries, a)
        lines += [
            f"## {name}",
            "",
            f"{got['n']} of {a.queries} queries answered by every row "
            f"(answers up to {got['max_new_tokens']} tokens).",
            "",
            *table(got["rows"], names),
            "",
            "**Verdict.** " + verdict(got["rows"], names),
            "",
        ]
        a.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

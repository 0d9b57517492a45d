"""Compare the answers of two evaluation folders made on the same test queries.

For every (method, run, query) present in both ``records.jsonl`` files: whether the prompts are the same
(same demonstrations in the same order), whether the predictions agree, and each side's accuracy. Used to
check that a cheaper numeric setting (``--dtype bfloat16``) answers like the reference (float32).

Usage::

    python benchmarks/models/compare_runs.py runs/banking77-likelihood runs/banking77-likelihood-bf16
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(folder: Path) -> dict:
    out = {}
    with open(folder / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            out[(r["method"], r["seed"], r["query"])] = r
    return out


def compare(a: dict, b: dict) -> list[dict]:
    rows: dict = defaultdict(lambda: {"n": 0, "same_prompt": 0, "same_pred": 0, "acc_a": 0, "acc_b": 0})
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        row = rows[key[0]]
        row["n"] += 1
        row["same_prompt"] += ra["prompt_sha256"] == rb["prompt_sha256"]
        row["same_pred"] += ra["parsed_id"] == rb["parsed_id"]
        row["acc_a"] += bool(ra["correct"])
        row["acc_b"] += bool(rb["correct"])
    return [{"method": m, **r} for m, r in rows.items()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="reference evaluation folder")
    ap.add_argument("b", type=Path, help="evaluation folder to compare")
    args = ap.parse_args(argv)
    rows = compare(load(args.a), load(args.b))
    if not rows:
        raise SystemExit("the two folders share no (method, run, query) record")
    print("| method | records | same prompt | same prediction | accuracy A | accuracy B |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        n = r["n"]
        print(
            f"| {r['method']} | {n} | {r['same_prompt']} | {r['same_pred']} ({r['same_pred'] / n:.1%}) | "
            f"{100 * r['acc_a'] / n:.1f} | {100 * r['acc_b'] / n:.1f} |"
        )


if __name__ == "__main__":
    main()

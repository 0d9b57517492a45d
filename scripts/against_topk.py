"""Render a run folder's selectors against TopK: accuracy, paired Δ against TopK, the share of demonstrations
with the query's label, and the no-LM vote with the model's gain over it.

    python scripts/against_topk.py RUN_DIR [RUN_DIR ...] --out docs/results/PAGE.md \
        --title "..." --command "..."

Every number is computed from the folders' records (``ucs.evaluation.summary``: paired bootstrap over the same
queries, 95 %); nothing is typed in. Each folder is one dataset of one ``ucs evaluate`` run that includes
``topk`` among its selectors.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import List

from ucs.evaluation.records import read_records
from ucs.evaluation.summary import demonstration_vote, label_agreement, paired_delta, summarize
from ucs.utils.cpu import describe_machine


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _delta(d) -> str:
    if d is None:
        return "—"
    star = "\\*" if d["ci"][0] > 0 or d["ci"][1] < 0 else ""
    return f"{100 * d['delta']:+.1f} [{100 * d['ci'][0]:+.1f}, {100 * d['ci'][1]:+.1f}]{star}"


def folder_table(run: Path) -> List[str]:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    pool = [
        json.loads(line)["label"]
        for line in (run / "pipeline" / "pool.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    records = read_records(run / "records.jsonl")
    # the records' gold ids index the dataset's label list; a pool label no query has gets an id of its own
    ids = {str(r["gold"]): int(r["gold_id"]) for r in records if r.get("gold_id") is not None}
    unseen = {y: -(i + 1) for i, y in enumerate(sorted(set(pool) - set(ids)))}
    label_ids = [ids.get(y, unseen.get(y)) for y in pool]
    seeds = manifest["seeds"]["run_seeds"]
    summary = summarize(records, run_seeds=seeds)
    vote = demonstration_vote(records, label_ids, run_seeds=seeds)
    share = label_agreement(records, label_ids, run_seeds=seeds)
    methods = [m for m in manifest["methods"] if m in summary["methods"]]
    top = summary["methods"]["topk"]
    lines = [
        f"### {results.get('dataset', run.name)}",
        "",
        f"{results.get('data', {}).get('n_pool', '?')} pool examples; {top['n_queries']} test queries × "
        f"{len(seeds)} run seed(s); machine {describe_machine(manifest.get('platform', {}))}",
        "",
        "| selector | accuracy % [95 % CI] | − TopK, points [paired 95 % CI] | own-label share % | no-LM "
        "vote % | "
        "model − vote, points |",
        "|---|---|---|---|---|---|",
    ]
    for m in methods:
        s = summary["methods"][m]
        acc = f"{_pct(s['mean'])} [{_pct(s['ci'][0])}, {_pct(s['ci'][1])}]"
        vs_top = "—" if m == "topk" else _delta(paired_delta(s, top))
        own = _pct(share[m]["mean"]) if m in share else "—"
        v = vote.get(m)
        lines.append(
            f"| {m} | {acc} | {vs_top} | {own} | {_pct(v['mean']) if v else '—'} | "
            f"{_delta(paired_delta(s, v)) if v else '—'} |"
        )
    return lines + [""]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--command", required=True, help="the command that made the run folders")
    ap.add_argument("--intro", default="")
    args = ap.parse_args(argv)
    lines = [f"# {args.title}", ""]
    if args.intro:
        lines += [args.intro, ""]
    lines += [
        f"Command: `{args.command}`; page: `python scripts/against_topk.py {' '.join(map(str, args.runs))} "
        f"--out {args.out} ...`",
        "",
    ]
    for run in args.runs:
        lines += folder_table(run)
    lines += [
        "\\* = the paired interval excludes 0. The no-LM vote is the majority label of the selector's own "
        "demonstrations (ties: the first shown); for TopK it is the k-nearest-neighbour classifier."
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

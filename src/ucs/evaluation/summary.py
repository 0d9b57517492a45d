"""The summary of an evaluation's records: per-method accuracy with intervals, paired differences, the
demonstrations' vote, and its tables (``results.json`` / ``results.md`` in a run folder). The HTML report of a
run folder is :mod:`ucs.report`'s."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ucs.evaluation.manifest import TEST_DOUBLE_NOTE
from ucs.evaluation.matching import Matcher, get_matcher
from ucs.evaluation.metrics import bootstrap_ci, mean_std, paired_bootstrap_ci
from ucs.evaluation.prompts import shown_demonstrations
from ucs.evaluation.run_folder import RunFolder
from ucs.utils.io import atomic_write_json, atomic_write_text

__all__ = [
    "summarize",
    "rematch",
    "strict_matcher_summary",
    "paired_delta",
    "label_agreement",
    "to_markdown",
    "write_report",
    "grid_markdown",
    "demonstration_vote",
    "majority_label",
]


def summarize(
    records: Iterable[dict],
    run_seeds: Sequence[int] | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    bootstrap_seed: int = 0,
) -> dict:
    """Per-method accuracy: per run, mean ± population std over runs, bootstrap CI over queries.

    Returns ``{"methods": {method: {...}}, "confidence": ..., "n_boot": ...}``. For each method: ``runs``
    (seed → ``n``, ``correct``, ``accuracy``, ``unmatched``, ``demos_dropped``), ``mean``, ``std``, ``ci``
    (over the queries answered in every run; ``None`` if there are none), ``complete`` (every listed run
    answered the same, non-empty set of queries) and ``per_query`` (those queries and their accuracy averaged
    over runs, for :func:`paired_delta`).
    """
    by_method: dict[str, dict[int, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        by_method[r["method"]][int(r["seed"])][int(r["query"])] = r
    out: dict = {"confidence": confidence, "n_boot": n_boot, "methods": {}}
    for method in by_method:
        runs = by_method[method]
        seeds = list(run_seeds) if run_seeds is not None else sorted(runs)
        per_run = {}
        for s in seeds:
            recs = list(runs.get(s, {}).values())
            n = len(recs)
            correct = sum(bool(r["correct"]) for r in recs)
            per_run[str(s)] = {
                "n": n,
                "correct": correct,
                "accuracy": correct / n if n else None,
                "unmatched": sum(r.get("parsed") is None for r in recs),
                "demos_dropped": sum(int(r.get("n_dropped", 0)) for r in recs),
            }
        accs = [v["accuracy"] for v in per_run.values() if v["accuracy"] is not None]
        mean, std = mean_std(accs) if accs else (None, None)
        query_sets = [set(runs.get(s, {})) for s in seeds]
        common = sorted(set.intersection(*query_sets)) if query_sets else []
        ci = None
        if common:
            mat = np.array([[bool(runs[s][q]["correct"]) for q in common] for s in seeds], dtype=np.float64)
            ci = list(bootstrap_ci(mat, n_boot=n_boot, confidence=confidence, seed=bootstrap_seed))
        complete = bool(common) and all(len(qs) == len(common) for qs in query_sets)
        out["methods"][method] = {
            "runs": per_run,
            "mean": mean,
            "std": std,
            "ci": ci,
            "n_queries": len(common),
            "complete": complete,
            # per-query accuracy averaged over runs, for paired comparisons between methods (paired_delta)
            "per_query": {"query": common, "accuracy": mat.mean(axis=0).tolist() if common else []},
            # which CPU kinds computed the answers (records written before provenance existed: "not recorded")
            "answered_on": dict(
                sorted(
                    Counter(
                        r.get("answered_on", "not recorded") for s in seeds for r in runs.get(s, {}).values()
                    ).items()
                )
            ),
        }
    return out


def rematch(records: Iterable[dict], label_names: Sequence[str], matcher: Matcher) -> list[dict]:
    """The generated records matched again by ``matcher``: copies with ``parsed``, ``parsed_id`` and
    ``correct`` recomputed from each record's ``raw_output``.

    Records without a generated output (likelihood mode) are left out. The same outputs under two matching
    rules isolate what the rule alone adds to an accuracy. Time O(records · labels).
    """
    out = []
    for r in records:
        raw = r.get("raw_output")
        if not isinstance(raw, str):
            continue
        p = matcher(raw, label_names)
        out.append(
            {
                **r,
                "parsed": None if p is None else label_names[p],
                "parsed_id": p,
                "correct": p is not None and int(p) == int(r["gold_id"]),
            }
        )
    return out


def strict_matcher_summary(
    records: Iterable[dict],
    label_names: Sequence[str],
    answer_marker: str,
    run_seeds: Sequence[int] | None = None,
    n_boot: int = 2000,
) -> dict:
    """:func:`summarize`'s per-method summaries of the same generated outputs under the strict matcher
    (:class:`~ucs.evaluation.matching.StrictMatcher`, cutting after ``answer_marker``).

    For runs matched by the paper's lenient rule: the difference between the two is credit the lenient rule
    gives to outputs that are not a label (``"cannot be determined"`` counted as ``"No"``). Returns
    ``{method: summary}``, empty when no record holds a generated output.
    """
    strict = get_matcher("strict", markers=(answer_marker,))
    again = rematch(records, label_names, strict)
    return summarize(again, run_seeds=run_seeds, n_boot=n_boot)["methods"] if again else {}


def _per_query_stat(
    records: Iterable[dict],
    value: Any,
    field: str,
    run_seeds: Sequence[int] | None,
    n_boot: int,
    confidence: float,
    bootstrap_seed: int,
) -> dict:
    """Per method, ``value(record)`` averaged over runs per query (records where it is ``None`` skipped), with
    its bootstrap CI over the queries every run answered: ``{method: {"mean", "ci", "n_queries", "per_query":
    {"query", field}}}``."""
    by: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        v = value(r)
        if v is not None:
            by[r["method"]][int(r["seed"])][int(r["query"])] = float(v)
    out: dict = {}
    for method, runs in by.items():
        seeds = list(run_seeds) if run_seeds is not None else sorted(runs)
        common = sorted(set.intersection(*(set(runs.get(s, {})) for s in seeds))) if seeds else []
        if not common:
            continue
        mat = np.array([[runs[s][q] for q in common] for s in seeds], dtype=np.float64)
        ci = bootstrap_ci(mat, n_boot=n_boot, confidence=confidence, seed=bootstrap_seed)
        out[method] = {
            "mean": float(mat.mean()),
            "ci": list(ci),
            "n_queries": len(common),
            "per_query": {"query": common, field: mat.mean(axis=0).tolist()},
        }
    return out


def _demonstration_stat(
    records: Iterable[dict],
    pool_labels: Sequence[int] | np.ndarray,
    per_prompt: Any,
    field: str,
    run_seeds: Sequence[int] | None,
    n_boot: int,
    confidence: float,
    bootstrap_seed: int,
) -> dict:
    """:func:`_per_query_stat` of ``per_prompt(demonstration labels, gold id)`` over the records that have a
    gold label id and demonstrations — those the prompt holds (:func:`shown_demonstrations`: a prompt cut to
    fit the context holds only part of its selection)."""
    labels = np.asarray(pool_labels)

    def value(r: dict) -> Optional[float]:
        gold = r.get("gold_id")
        sel = shown_demonstrations(
            r.get("selected") or [], int(r.get("n_dropped") or 0), r.get("dropped_from", "end")
        )
        return None if gold is None or not sel else float(per_prompt(labels[np.asarray(sel)], int(gold)))

    return _per_query_stat(records, value, field, run_seeds, n_boot, confidence, bootstrap_seed)


def label_agreement(
    records: Iterable[dict],
    pool_labels: Sequence[int] | np.ndarray,
    run_seeds: Sequence[int] | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    bootstrap_seed: int = 0,
) -> dict:
    """Per method, the share of each prompt's demonstrations whose label is the query's own (gold) label.

    A relevance measure of the selections themselves: a coverage prior that pulls in other intents lowers it.
    Records without a gold label id (generative tasks) or without demonstrations are skipped.

    Returns ``{method: {"mean", "ci", "n_queries", "per_query": {"query", "share"}}}`` over the queries every
    run answered (the share averaged over runs per query; CI as in :func:`summarize`); compare two methods
    with ``paired_delta(a, b, field="share")``. Time O(records · budget).
    """
    return _demonstration_stat(
        records,
        pool_labels,
        lambda demo, gold: np.mean(demo == gold),
        "share",
        run_seeds,
        n_boot,
        confidence,
        bootstrap_seed,
    )


def majority_label(labels: Sequence[int]) -> int:
    """The most frequent label of a prompt's demonstrations; a tie goes to the one that appears first."""
    counts: dict[int, int] = {}
    for y in labels:
        counts[int(y)] = counts.get(int(y), 0) + 1
    best = max(counts.values())
    return next(int(y) for y in labels if counts[int(y)] == best)


def demonstration_vote(
    records: Iterable[dict],
    pool_labels: Sequence[int] | np.ndarray,
    run_seeds: Sequence[int] | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    bootstrap_seed: int = 0,
) -> dict:
    """The no-LM baseline: per method, how often the majority label of a prompt's own demonstrations
    (:func:`majority_label`) is the query's gold label — what the prompt says without any language model.

    For TopK these demonstrations are the query's nearest neighbours, so its vote is the k-NN classifier of
    the retrieval space. Same return form as :func:`summarize`'s methods (field ``accuracy``), so
    ``paired_delta(summary["methods"][m], vote[m])`` is the model's gain over the vote. Time O(records ·
    budget).
    """
    return _demonstration_stat(
        records,
        pool_labels,
        lambda demo, gold: majority_label(demo) == gold,
        "accuracy",
        run_seeds,
        n_boot,
        confidence,
        bootstrap_seed,
    )


def paired_delta(
    a: dict, b: dict, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0, field: str = "accuracy"
) -> dict | None:
    """Difference ``a − b`` of two methods' summaries (:func:`summarize`, or :func:`label_agreement` with
    ``field="share"``) on the queries both answered in every run, with its paired bootstrap CI
    (:func:`~ucs.evaluation.metrics.paired_bootstrap_ci`).

    Returns ``{"delta", "ci", "n_queries"}``, or ``None`` when either summary has no per-query data (summaries
    written before it was recorded) or the two share no query.
    """
    pa, pb = (a or {}).get("per_query"), (b or {}).get("per_query")
    if not pa or not pb:
        return None
    acc_b = dict(zip(pb["query"], pb[field]))
    common = [(x, acc_b[q]) for q, x in zip(pa["query"], pa[field]) if q in acc_b]
    if not common:
        return None
    va = np.array([x for x, _ in common])
    vb = np.array([y for _, y in common])
    ci = paired_bootstrap_ci(va, vb, n_boot=n_boot, confidence=confidence, seed=seed)
    return {"delta": float(va.mean() - vb.mean()), "ci": list(ci), "n_queries": len(common)}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def to_markdown(summary: dict, title: str | None = None) -> str:
    """A markdown table: method, mean ± std (%), CI, per-run accuracies, unmatched outputs, queries; and a
    second one for the strict matcher's reading of the same outputs when the summary has it
    (``strict_matcher``)."""
    conf = int(round(100 * summary.get("confidence", 0.95)))
    lines = [f"## {title}", ""] if title else []
    if summary.get("test_double"):
        lines += [f"**{TEST_DOUBLE_NOTE}.**", ""]
    data = summary.get("data")
    if isinstance(data, dict):
        lines += [
            f"pool {data.get('n_pool')} examples, test {data.get('n_test')} (split: {data.get('split')}); "
            f"{summary.get('n_queries_requested', '?')} test queries evaluated",
            "",
        ]
    lines += [
        f"| method | accuracy (mean ± std, %) | {conf}% CI (queries) | per run | unmatched | queries |",
        "|---|---|---|---|---|---|",
    ]
    for method, m in summary["methods"].items():
        acc = "—" if m["mean"] is None else f"{100 * m['mean']:.1f} ± {100 * m['std']:.1f}"
        ci = "—" if m["ci"] is None else f"[{_pct(m['ci'][0])}, {_pct(m['ci'][1])}]"
        per_run = ", ".join(_pct(v["accuracy"]) for v in m["runs"].values())
        unmatched = sum(v["unmatched"] for v in m["runs"].values())
        flag = "" if m["complete"] else " (incomplete)"
        lines.append(f"| {method} | {acc} | {ci} | {per_run} | {unmatched} | {m['n_queries']}{flag} |")
    lines += _delta_lines(summary, conf)
    lines += _vote_lines(summary, conf)
    if summary.get("strict_matcher"):
        strict = {"confidence": summary.get("confidence", 0.95), "methods": summary["strict_matcher"]}
        lines += [
            "",
            "The same outputs matched by the strict matcher (an answer must equal a label):",
            "",
            to_markdown(strict).rstrip("\n"),
        ]
    return "\n".join(lines) + "\n"


def _delta_lines(summary: dict, conf: int) -> list:
    """Each UCS form against its base selector: Δ accuracy (points) with its paired interval over the same
    queries (empty when the summary has no UCS form with its base, or no per-query data)."""
    methods = summary.get("methods", {})
    rows = []
    for m, s in methods.items():
        base = m[:-4] if m.endswith("+ucs") else None
        if base not in methods:
            continue
        d = paired_delta(
            s,
            methods[base],
            n_boot=int(summary.get("n_boot", 2000)),
            confidence=float(summary.get("confidence", 0.95)),
        )
        if d is not None:
            sig = "*" if d["ci"][0] > 0 or d["ci"][1] < 0 else ""
            rows.append(
                f"| {m} − {base} | {100 * d['delta']:+.1f}{sig} | [{100 * d['ci'][0]:+.1f}, "
                f"{100 * d['ci'][1]:+.1f}] | {d['n_queries']} |"
            )
    if not rows:
        return []
    return [
        "",
        f"Each UCS form against its base, paired over the same queries (* = the {conf}% interval "
        "excludes 0):",
        "",
        f"| difference | Δ accuracy (points) | {conf}% CI | queries |",
        "|---|---|---|---|",
        *rows,
    ]


def _vote_lines(summary: dict, conf: int) -> list:
    """The no-LM baseline beside each method: its demonstrations' majority label, and the model's paired
    gain."""
    vote, methods = summary.get("vote") or {}, summary.get("methods", {})
    rows = []
    for m, v in vote.items():
        d = paired_delta(
            methods.get(m),
            v,
            n_boot=int(summary.get("n_boot", 2000)),
            confidence=float(summary.get("confidence", 0.95)),
        )
        gain = (
            "—"
            if d is None
            else (
                f"{100 * d['delta']:+.1f} [{100 * d['ci'][0]:+.1f}, {100 * d['ci'][1]:+.1f}]"
                + ("*" if d["ci"][0] > 0 or d["ci"][1] < 0 else "")
            )
        )
        rows.append(f"| {m} | {_pct(v['mean'])} | [{_pct(v['ci'][0])}, {_pct(v['ci'][1])}] | {gain} |")
    if not rows:
        return []
    return [
        "",
        "No-LM baseline: the majority label of each prompt's own demonstrations, with no language model "
        "(for TopK, the k-nearest-neighbour vote):",
        "",
        f"| method | vote accuracy (%) | {conf}% CI | model − vote, points [{conf}% CI] |",
        "|---|---|---|---|",
        *rows,
    ]


def write_report(
    out_dir: "str | os.PathLike[str]", summary: dict, title: str | None = None
) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.md`` atomically into ``out_dir``."""
    folder = RunFolder(out_dir)
    j = atomic_write_json(folder.results, summary)
    m = atomic_write_text(folder.results_markdown, to_markdown(summary, title))
    return j, m


def grid_markdown(summaries: "dict[str, dict]", digits: int = 1) -> str:
    """The paper's table layout: one row per method, one column per dataset, cells ``mean ± std`` (%).

    ``summaries`` maps a column name (dataset) to a :func:`summarize` result; methods missing from a
    dataset show ``—``. Rows follow the order of first appearance.
    """
    cols = list(summaries)
    methods: list[str] = []
    for s in summaries.values():
        for m in s["methods"]:
            if m not in methods:
                methods.append(m)
    lines = ["| method | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for m in methods:
        cells = []
        for c in cols:
            r = summaries[c]["methods"].get(m)
            if r is None or r["mean"] is None:
                cells.append("—")
            else:
                cells.append(f"{100 * r['mean']:.{digits}f} ± {100 * r['std']:.{digits}f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

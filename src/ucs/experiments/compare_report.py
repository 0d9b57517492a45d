"""How a comparison reads: the validation table (every cell, Δ vs the reference, the round it left), the test
table (the validated cell and the reference) and the recommendation, as markdown and as a self-contained
page."""

from __future__ import annotations

import html
from typing import Any, Dict, Optional, Sequence, Tuple

__all__ = ["markdown", "page"]


def _pct(x: Optional[float], ci: Optional[Sequence[float]] = None) -> str:
    if x is None:
        return "—"
    return f"{100 * x:.1f}" + ("" if ci is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")


def _delta(d: Optional[float], ci: Optional[Sequence[float]]) -> str:
    if d is None or ci is None:
        return "—"
    star = "*" if ci[0] > 0 or ci[1] < 0 else ""
    return f"{100 * d:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]{star}"


def _vote_cells(r: Dict[str, Any]) -> Tuple[str, str]:
    """The no-LM baseline (%): the vote, or the copy of a scored comparison, and the model's gain over it
    (points [95 % CI], ``*`` when it excludes 0)."""
    base = "copy" if r.get("copy") is not None else "vote"
    if r.get(base) is None:
        return "—", "—"
    return f"{100 * r[base]:.1f}", _delta(r.get(f"over_{base}"), r.get(f"over_{base}_ci"))


def _names(info: Dict[str, Any]) -> Tuple[str, str, str]:
    """The score's, the baseline's and the gain's column names: accuracy and the no-LM vote for labels, the
    metric's mean score and the copy baseline for a scored comparison."""
    if info.get("metric"):
        return f"{info['metric']} score %", "copy %", "model − copy"
    return "accuracy %", "no-LM vote %", "model − vote"


def _race_line(info: Dict[str, Any]) -> str:
    race = info.get("race") or {}
    if not race:
        return ""
    saved = race.get("saved_share")
    return (
        f"Validation: {race['queries_used']} of {race['validation_queries']} queries in {race['rounds']} of "
        f"{race['planned_rounds']} planned rounds of {race['round_size']} (stopped: {race['stopped']}; "
        f"early stopping {'on, α = ' + str(race['alpha']) if race['early_stop'] else 'off'}); "
        f"{race['asked']} of {race['full']} validation prompts asked"
        + (f" ({100 * saved:.0f} % saved)." if saved is not None else ".")
    )


def markdown(result: Any) -> str:
    """The comparison as markdown: the race, the validation table, the test table and the recommendation."""
    info, ref = result.info, result.info.get("reference", "topk")
    lines = [
        _race_line(info),
        "",
        f"Δ = cell minus the reference **{ref}** on the same queries [paired 95 % bootstrap interval]; "
        "* = the interval excludes 0. A cell is selector:k:order.",
        "",
        "| rank | cell | {} [95 % CI] | Δ vs reference, points | left at round | queries | "
        "own-label share % | {} | {}, points | select ms/query | predict ms/query |".format(*_names(info)),
        "|---:|---|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for i, r in enumerate(result.rows, 1):
        vote, over = _vote_cells(r)
        left = "—" if r.get("left_round") is None else str(r["left_round"])
        lines.append(
            f"| {i} | {r['cell']} | {_pct(r['accuracy'], r['ci'])} | {_delta(r['delta'], r['delta_ci'])} "
            f"| {left} | {r['n_queries']} | {_pct(r['own_label'])} | {vote} | {over} | "
            f"{r['select_ms']:.2f} | {r['predict_ms']:.1f} |"
        )
    if result.test_rows:
        n_test = result.test_rows[0]["n_queries"]
        lines += [
            "",
            f"Test: {n_test} held-out queries the race never saw.",
            "",
            "| role | cell | {} [95 % CI] | Δ vs reference, points |".format(_names(info)[0]),
            "|---|---|---|---|",
        ]
        for r in result.test_rows:
            lines.append(
                f"| {r['role']} | {r['cell']} | {_pct(r['accuracy'], r['ci'])} | "
                f"{_delta(r['delta'], r['delta_ci'])} |"
            )
    if info.get("embed_ms") is not None:
        lines += [
            "",
            f"Query embedding (once per query, shared by every cell): {info['embed_ms']:.1f} ms/query.",
        ]
    if info.get("metric"):
        lines += [
            "",
            f"Copy: the answer of each prompt's demonstration most similar to the query, with no model, "
            f"scored with {info['metric']}; model − copy is the model's paired gain over it.",
        ]
    else:
        lines += [
            "",
            "No-LM vote: the majority label of each prompt's own demonstrations, with no model (for "
            "TopK the k-nearest-neighbour vote); model − vote is the model's paired gain over it.",
        ]
    lines += ["", f"recommended: **{result.recommended_cell}** ({info.get('why', '')})"]
    if result.index_dir is not None:
        cell = info.get("recommended") or {}
        lines.append(
            f"saved as an index: `{result.index_dir}` ({cell.get('selector')}, demonstrations in order "
            f"{cell.get('order')!r}; pass k={cell.get('k')}: SelectorIndex.load(dir).select(query, "
            f"k={cell.get('k')}), UCSExampleSelector.load(dir, k={cell.get('k')}), "
            f"UCSFewShot.attach(program, SelectorIndex.load(dir), k={cell.get('k')}))"
        )
    return "\n".join(line for line in lines if line is not None) + "\n"


def _html_tables(result: Any) -> str:
    """The validation table (every cell) and the test table (the validated cell and the reference) as HTML."""
    esc = html.escape
    score, base, gain = _names(result.info)
    head = [
        "rank",
        "cell",
        f"{score} [95 % CI]",
        "Δ vs reference [95 % CI]",
        "left at round",
        "queries",
        "own-label %",
        base,
        gain,
        "select ms",
        "predict ms",
    ]
    body = []
    for i, r in enumerate(result.rows, 1):
        cells = [
            str(i),
            r["cell"],
            _pct(r["accuracy"], r["ci"]),
            _delta(r["delta"], r["delta_ci"]),
            "—" if r.get("left_round") is None else str(r["left_round"]),
            str(r["n_queries"]),
            _pct(r["own_label"]),
            *_vote_cells(r),
            f"{r['select_ms']:.2f}",
            f"{r['predict_ms']:.1f}",
        ]
        body.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    parts = [
        "<h3>Validation</h3><table>"
        + "<tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr>"
        + "".join(body)
        + "</table>",
        "<p class='muted'>* = the paired interval excludes 0. Own-label %: the share of demonstrations that "
        "carry the query's label. "
        + (
            "Copy: the answer of the demonstration most similar to the query, with no model."
            if result.info.get("metric")
            else "No-LM vote: the majority label of the prompt's demonstrations."
        )
        + "</p>",
    ]
    if result.test_rows:
        rows = "".join(
            f"<tr><td>{esc(r['role'])}</td><td>{esc(r['cell'])}</td>"
            f"<td>{esc(_pct(r['accuracy'], r['ci']))}</td><td>{esc(_delta(r['delta'], r['delta_ci']))}"
            "</td></tr>"
            for r in result.test_rows
        )
        parts.append(
            f"<h3>Test: {result.test_rows[0]['n_queries']} held-out queries the race never saw</h3>"
            f"<table id='test-table'><tr><th>role</th><th>cell</th><th>{esc(score)} [95 % CI]</th>"
            f"<th>Δ vs reference [95 % CI]</th></tr>{rows}</table>"
        )
    return "".join(parts)


def page(
    result: Any,
    records: Sequence[dict],
    queries: Sequence[Dict[str, Any]],
    pool: Sequence[Dict[str, Any]],
    text_key: str,
    label_key: str,
    n_shown: int = 5,
) -> str:
    """A self-contained page (:mod:`ucs.experiments.compare_page`): the verdict, a forest plot of every cell's
    Δ, a k × order heat map per selector, the race's rounds, the tables, and the first ``n_shown`` queries
    with each cell's demonstrations as numbered lists (own-label ones marked) and answer."""
    from ucs.experiments.compare_page import compare_page

    return compare_page(
        result,
        records,
        queries,
        pool,
        (text_key, label_key),
        _html_tables(result),
        _race_line(result.info),
        n_shown,
    )

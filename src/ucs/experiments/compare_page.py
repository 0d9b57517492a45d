"""``compare.html``: a comparison to look at. A forest plot of every cell's Δ against the reference
(validation, paired intervals; the test confirmation and the recommended cell marked), a k × order heat map
per selector, how the rounds of the race eliminated cells, the tables, and the first queries' demonstrations
as numbered lists.

One self-contained file: inline CSS and SVG, no script, a Content-Security-Policy that forbids every request
(the run report's palette, without its plotly.js, so ``ucs compare`` needs no optional dependency). Every text
from the data is HTML-escaped.
"""

from __future__ import annotations

import html
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ucs.evaluation.summary import majority_label

__all__ = ["compare_page", "round_rows", "N_SHOWN"]

#: Queries whose demonstrations the page lists (the first ones of the validation race).
N_SHOWN = 5
_OWN = "<span class='badge own'>own label</span>"
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0;\
background:#fafafa}
header{background:#1d3557;color:#fff;padding:12px 24px;position:sticky;top:0;z-index:10}
header h1{margin:0;font-size:20px}header nav a{color:#cfe3ff;margin-right:14px;text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:8px 24px 40px}
section{scroll-margin-top:76px;background:#fff;border:1px solid #e3e3e3;border-radius:6px;\
padding:8px 18px 14px;
margin:16px 0}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}h3{font-size:15px;margin:12px 0 4px}
table{border-collapse:collapse;margin:8px 0}th,td{border-bottom:1px solid #eee;padding:4px 10px;\
text-align:left;
vertical-align:top}thead th,tr:first-child th{background:#f3f5f8}main table{display:block;max-width:100%;
overflow-x:auto}.muted{color:#666;font-size:12.5px}.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-size:16px;margin:6px 0}.verdict b{color:#1d3557}
svg text{font:12px system-ui,sans-serif;fill:#222}svg .tick{fill:#666;font-size:11px}
.heatmaps{display:flex;flex-wrap:wrap;gap:18px}.heatmap td.heat-cell{min-width:92px;text-align:center;
border:2px solid #fff}.heatmap td.heat-cell .d{font-weight:600;font-size:14px}\
.heatmap td.heat-cell .a{font-size:11px;
color:#444}.heatmap td.left{opacity:.55}.heatmap td.recommended{border:2px solid #c9a227}
.heatmap td.absent{color:#bbb;text-align:center}.badge{display:inline-block;border-radius:9px;padding:0 7px;
font-size:11px;font-weight:600;background:#e9ecef;color:#333;margin-left:4px}.badge.own{background:#d8f3dc;
color:#1b5e20}.badge.left{background:#f1f1f1;color:#666}.badge.rec{background:#fff3cd;color:#5c4400}
.badge.right{background:#d8f3dc;color:#1b5e20}.badge.wrong{background:#fde2e4;color:#c1121f}
.bar{display:inline-block;height:10px;background:#457b9d;border-radius:2px;vertical-align:middle;\
margin-right:6px}
.query-card{border:1px solid #e3e3e3;border-radius:6px;padding:8px 12px;margin:12px 0}
.query-card .qtext{font-weight:600}.cell-block{border-left:4px solid #ccc;margin:8px 0 4px;padding:2px 10px}
.cell-block.right{border-left-color:#2a9d8f}.cell-block.wrong{border-left-color:#e63946}
.cell-block summary{cursor:pointer}.cell-block .cname{font-weight:600;margin-right:6px}
ol.demos{margin:4px 0 2px 22px;padding:0}ol.demos li{margin:2px 0}ol.demos .dlabel{color:#1d3557}
ol.demos li.own-label .dlabel{font-weight:700;color:#1b5e20}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _pts(x: Optional[float]) -> str:
    return "—" if x is None else f"{100 * x:+.1f}"


def _ci_pts(ci: Optional[Sequence[float]]) -> str:
    return "" if not ci else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


# ----------------------------------------------------------------------------------------------- forest plot
def _ticks(lo: float, hi: float) -> List[float]:
    """Round tick values (points) covering [lo, hi], five to ten of them."""
    span = max(hi - lo, 1e-9)
    step = next((s for s in (0.5, 1, 2, 2.5, 5, 10, 20, 25, 50) if span / s <= 8), 100)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _forest_range(rows: Sequence[dict], test: Optional[dict]) -> Tuple[float, float]:
    vals = [0.0]
    for r in list(rows) + ([test] if test else []):
        vals += [100 * v for v in (r.get("delta_ci") or [])] + (
            [100 * r["delta"]] if r.get("delta") is not None else []
        )
    lo, hi = min(vals), max(vals)
    pad = max(0.06 * (hi - lo), 1.0)
    return lo - pad, hi + pad


def _forest_row(r: dict, y: float, x, rec: str, ref: str, test: Optional[dict], width: int) -> List[str]:
    """One cell's row: its band (the recommended cell's highlighted), name, interval, point, numbers, and the
    test confirmation under the validated cell."""
    cell, classes = r["cell"], ["forest-row"]
    left = r.get("left_round")
    classes += ["recommended"] if cell == rec else []
    classes += ["left"] if left is not None else []
    out = [
        f"<g class='{' '.join(classes)}' data-cell='{_e(cell)}' opacity='{0.55 if left is not None else 1}'>"
    ]
    if cell == rec:
        out.append(f"<rect x='0' y='{y - 11}' width='{width}' height='{44 if test else 22}' fill='#fff3cd'/>")
    name = cell + (" (reference)" if cell == ref else "")
    bold = " style='font-weight:700'" if cell == rec else ""
    out.append(f"<text x='8' y='{y + 4}'{bold}>{_e(name)}</text>")
    if r.get("delta") is not None and r.get("delta_ci"):
        lo, hi = (x(100 * v) for v in r["delta_ci"])
        d = x(100 * r["delta"])
        colour = "#2a9d8f" if r["delta_ci"][0] > 0 else "#e63946" if r["delta_ci"][1] < 0 else "#457b9d"
        out += [
            f"<line class='ci' x1='{lo:.1f}' x2='{hi:.1f}' y1='{y}' y2='{y}' stroke='{colour}' "
            f"stroke-width='2'/>",
            f"<circle class='point' cx='{d:.1f}' cy='{y}' r='5' fill='{colour}'><title>{_e(cell)}: Δ "
            f"{_pts(r['delta'])} points {_ci_pts(r['delta_ci'])} on validation</title></circle>",
        ]
        txt = f"{_pts(r['delta'])} {_ci_pts(r['delta_ci'])}"
    else:
        out.append(
            f"<rect class='point ref' x='{x(0) - 5:.1f}' y='{y - 5}' width='10' height='10' fill='#fff' "
            f"stroke='#1d3557' stroke-width='2'><title>{_e(cell)}: the reference</title></rect>"
        )
        txt = "reference"
    txt += "" if left is None else f"  · left at round {left}"
    out.append(f"<text x='{width - 8}' y='{y + 4}' text-anchor='end'>{_e(txt)}</text>")
    if test:
        out += _forest_test(test, y + 22, x, width)
    return out + ["</g>"]


def _forest_test(t: dict, y: float, x, width: int) -> List[str]:
    """The validated cell on the test queries: a diamond with its paired interval."""
    ok = bool(t.get("delta_ci")) and t["delta_ci"][0] > 0
    out = [f"<text x='24' y='{y + 4}' class='tick'>test confirmation ({t['n_queries']} queries)</text>"]
    if t.get("delta") is not None and t.get("delta_ci"):
        lo, hi, d = x(100 * t["delta_ci"][0]), x(100 * t["delta_ci"][1]), x(100 * t["delta"])
        out += [
            f"<line x1='{lo:.1f}' x2='{hi:.1f}' y1='{y}' y2='{y}' stroke='#b5838d' stroke-width='2' "
            f"stroke-dasharray='4 2'/>",
            f"<path class='forest-test' d='M{d:.1f} {y - 6}l6 6l-6 6l-6-6z' "
            f"fill='{'#c9a227' if ok else '#999'}'><title>test: Δ {_pts(t['delta'])} points "
            f"{_ci_pts(t['delta_ci'])}"
            f"{' (above 0: confirmed)' if ok else ' (not above 0: not confirmed)'}</title></path>",
            f"<text x='{width - 8}' y='{y + 4}' text-anchor='end' class='tick'>test {_pts(t['delta'])} "
            f"{_e(_ci_pts(t['delta_ci']))} {'confirmed' if ok else 'not confirmed'}</text>",
        ]
    return out


def forest_svg(rows: Sequence[dict], reference: str, recommended: str, test: Optional[dict]) -> str:
    """The forest plot: one row per cell (best first), Δ against the reference in points with its paired
    validation interval; the validated cell's test interval beneath it (a diamond)."""
    width, left, right, top = 980, 250, 230, 30
    lo, hi = _forest_range(rows, test)

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    validated = test.get("cell") if test else None
    ys, y = [], top + 12
    for r in rows:
        ys.append(y)
        y += 44 if r["cell"] == validated else 22
    height = y + 26
    out = [
        f"<svg id='forest' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='forest plot of Δ against {_e(reference)}'>"
    ]
    for t in _ticks(lo, hi):
        style = "stroke='#666' stroke-dasharray='3 3'" if t == 0 else "stroke='#eee'"
        out += [
            f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='{top}' y2='{height - 22}' {style}/>",
            f"<text class='tick' x='{x(t):.1f}' y='{height - 8}' text-anchor='middle'>{t:+g}</text>",
        ]
    out.append(
        f"<text x='{x(0):.1f}' y='{top - 10}' text-anchor='middle' class='tick'>Δ = 0 "
        f"(no difference from {_e(reference)})</text>"
    )
    for r, yy in zip(rows, ys):
        out += _forest_row(r, yy, x, recommended, reference, test if r["cell"] == validated else None, width)
    return "\n".join(out + ["</svg>"])


# ---------------------------------------------------------------------------------------------- heat maps
def _heat_colour(d: Optional[float], scale: float) -> str:
    """White at 0, green above, red below, saturating at ``scale`` points."""
    if d is None:
        return "#f3f5f8"
    t = max(-1.0, min(1.0, 100 * d / scale))
    end = (42, 157, 143) if t >= 0 else (230, 57, 70)
    rgb = (round(255 + abs(t) * 0.75 * (c - 255)) for c in end)
    return "#%02x%02x%02x" % tuple(rgb)


def _heat_cell(r: Optional[dict], rec: str, scale: float) -> str:
    if r is None:
        return "<td class='absent' title='not in the grid (this selector ignores the order)'>·</td>"
    classes = ["heat-cell"] + (["left"] if r.get("left_round") is not None else [])
    classes += ["recommended"] if r["cell"] == rec else []
    d = "ref" if r.get("reference") else _pts(r.get("delta"))
    acc = "—" if r.get("accuracy") is None else f"{100 * r['accuracy']:.1f} %"
    badges = "" if r.get("left_round") is None else f"<span class='badge left'>left r{r['left_round']}</span>"
    badges += "<span class='badge rec'>recommended</span>" if r["cell"] == rec else ""
    title = f"{r['cell']}: Δ {_pts(r.get('delta'))} {_ci_pts(r.get('delta_ci'))}, score {acc}"
    return (
        f"<td class='{' '.join(classes)}' data-cell='{_e(r['cell'])}' style='background:"
        f"{_heat_colour(r.get('delta'), scale)}' title='{_e(title)}'><div class='d'>{_e(d)}</div>"
        f"<div class='a'>{_e(acc)}</div>{badges}</td>"
    )


def heat_maps(rows: Sequence[dict], recommended: str) -> str:
    """One table per selector: k down, order across; each cell's Δ (points, coloured) and score."""
    by_sel: Dict[str, Dict[Tuple[int, str], dict]] = {}
    for r in rows:
        by_sel.setdefault(r["selector"], {})[(int(r["k"]), r["order"])] = r
    ks = sorted({int(r["k"]) for r in rows})
    orders = list(dict.fromkeys(r["order"] for r in sorted(rows, key=lambda r: r["order"] != "selected")))
    scale = max([abs(100 * r["delta"]) for r in rows if r.get("delta") is not None] + [1.0])
    out = ["<div class='heatmaps'>"]
    for sel, cells in by_sel.items():
        head = "".join(f"<th>{_e(o)}</th>" for o in orders)
        body = "".join(
            f"<tr><th>k = {k}</th>"
            + "".join(_heat_cell(cells.get((k, o)), recommended, scale) for o in orders)
            + "</tr>"
            for k in ks
            if any((k, o) in cells for o in orders)
        )
        out.append(
            f"<table class='heatmap' data-selector='{_e(sel)}'><caption><b>{_e(sel)}</b></caption>"
            f"<tr><th>k \\ order</th>{head}</tr>{body}</table>"
        )
    return "".join(out) + "</div>"


# ------------------------------------------------------------------------------------------------- rounds
def round_rows(info: Dict[str, Any], cells: Sequence[str], records: Sequence[dict]) -> List[Dict[str, Any]]:
    """Per round of the race: ``round``, ``queries`` (validation queries answered so far), ``racing`` (the
    cells asked in it), ``left`` (those eliminated at its look) and ``leader`` (the racing cell with the
    highest mean score so far; ``None`` without the validation order)."""
    race = info.get("race") or {}
    order = (info.get("split") or {}).get("validation_order") or []
    size, used, left = race.get("round_size") or 1, race.get("queries_used") or 0, race.get("left") or {}
    score = {
        (r["method"], int(r["query"])): float(r.get("score", float(bool(r.get("correct"))))) for r in records
    }
    out = []
    for k in range(1, int(race.get("rounds") or 0) + 1):
        n = min(k * size, used)
        racing = [c for c in cells if left.get(c) is None or left[c] >= k]
        means = {c: sum(score.get((c, q), 0.0) for q in order[:n]) / n for c in racing if order and n}
        out.append(
            {
                "round": k,
                "queries": n,
                "racing": racing,
                "left": [c for c in cells if left.get(c) == k],
                "leader": max(means, key=means.get) if means else None,
                "leader_score": max(means.values()) if means else None,
            }
        )
    return out


def rounds_table(info: Dict[str, Any], cells: Sequence[str], records: Sequence[dict]) -> str:
    """The race round by round: cells still racing (a bar), who left at its look, the leader so far."""
    rows = round_rows(info, cells, records)
    if not rows:
        return "<p class='muted'>No race was recorded.</p>"
    n = max(len(cells), 1)
    body = []
    for r in rows:
        lead = "—" if r["leader"] is None else f"{_e(r['leader'])} ({100 * r['leader_score']:.1f} %)"
        gone = ", ".join(_e(c) for c in r["left"]) or "<span class='muted'>none</span>"
        body.append(
            f"<tr class='round-row' data-racing='{len(r['racing'])}'><td class='num'>{r['round']}</td>"
            f"<td class='num'>{r['queries']}</td><td style='white-space:nowrap'><span class='bar' "
            f"style='width:{max(2, round(160 * len(r['racing']) / n))}px'></span>{len(r['racing'])} of "
            f"{len(cells)}</td><td>{gone}</td><td>{lead}</td></tr>"
        )
    race = info["race"]
    return (
        "<table id='rounds-table'><thead><tr><th>round</th><th>validation queries so far</th><th>cells racing"
        "</th><th>left at this round's look</th><th>leader so far (mean score)</th></tr></thead><tbody>"
        + "".join(body)
        + f"</tbody></table><p class='muted'>The race stopped: {_e(race.get('stopped'))}. "
        "A cell leaves when it is worse than the leader beyond doubt (Bonferroni over cells and rounds); the "
        "reference is asked every round. The final leader is the validated cell.</p>"
    )


# ------------------------------------------------------------------------------------------------ queries
def _verdict(rec: dict, scored: bool) -> Tuple[str, str]:
    """(css class, badge HTML) of one answer: right/wrong, or its score in [0, 1] for a scored comparison."""
    s = float(rec.get("score", float(bool(rec.get("correct")))))
    if scored:
        cls = "right" if s >= 0.5 else "wrong"
        return cls, f"<span class='badge {cls}'>score {s:.2f}</span>"
    cls = "right" if rec.get("correct") else "wrong"
    return cls, f"<span class='badge {cls}'>{'✓ right' if cls == 'right' else '✗ wrong'}</span>"


def _baseline(rec: dict, labels: List[str], gold: str, scored: bool) -> str:
    """The no-LM line of one prompt: its demonstrations' majority label, or the copy answer and its score."""
    if scored:
        if rec.get("copy_score") is None:
            return ""
        return f" · copy: <q>{_e(rec.get('copy'))}</q> (score {float(rec['copy_score']):.2f})"
    if not labels:
        return ""
    ids = {y: i for i, y in enumerate(dict.fromkeys(labels))}
    vote = next(y for y, i in ids.items() if i == majority_label([ids[y] for y in labels]))
    return f" · vote: {_e(vote)} ({'right' if vote == gold else 'wrong'})"


def _cell_block(
    row: dict, rec: dict, pool: Sequence[dict], gold: str, keys: Tuple[str, str], scored: bool, open_: bool
) -> str:
    text_key, label_key = keys
    cls, badge = _verdict(rec, scored)
    labels = [str(pool[i][label_key]) for i in rec["selected"]]
    items = []
    for i, y in zip(rec["selected"], labels):
        own, mark = (" own-label", _OWN) if y == gold else ("", "")
        items.append(
            f"<li class='demo{own}'>{_e(pool[i][text_key])} → <span class='dlabel'>{_e(y)}</span>{mark}</li>"
        )
    n_own = sum(y == gold for y in labels)
    return (
        f"<details class='cell-block {cls}' data-cell='{_e(row['cell'])}'{' open' if open_ else ''}><summary>"
        f"<span class='cname'>{_e(row['cell'])}</span> answered <q>{_e(rec.get('prediction'))}</q> {badge}"
        f"<span class='muted'> · {n_own} of {len(labels)} demonstrations carry the query's label"
        f"{_baseline(rec, labels, gold, scored)}</span></summary><ol class='demos'>{''.join(items)}</ol>"
        "</details>"
    )


def query_cards(
    result: Any,
    records: Sequence[dict],
    queries: Sequence[dict],
    pool: Sequence[dict],
    keys: Tuple[str, str],
    n_shown: int,
) -> str:
    """The first ``n_shown`` validation queries (answering order) with every cell's prompt as a numbered
    list."""
    text_key, label_key = keys
    by = {(r["method"], int(r["query"])): r for r in records}
    order = list((result.info.get("split") or {}).get("validation_order") or range(len(queries)))
    answered = [q for q in order if any((row["cell"], q) in by for row in result.rows)]
    scored = bool(result.info.get("metric"))
    keep = {
        result.recommended_cell,
        result.info.get("reference"),
        (result.info.get("validated") or {}).get("cell"),
    }
    out = [
        f"<p class='muted'>The first {min(n_shown, len(answered))} of the {len(answered)} validation queries "
        "the race answered, in answering order; every answer is in records.jsonl. Demonstrations are listed "
        "in prompt order; <span class='badge own'>own label</span> marks those carrying the query's gold "
        "label. The recommended cell, the validated one and the reference are open.</p>"
    ]
    for q in answered[:n_shown]:
        ex = queries[q]
        gold = str(ex[label_key])
        blocks = [
            _cell_block(row, by[(row["cell"], q)], pool, gold, keys, scored, row["cell"] in keep)
            for row in result.rows
            if (row["cell"], q) in by
        ]
        out.append(
            f"<article class='query-card' data-query='{q}'><div class='qtext'>{_e(ex[text_key])}</div>"
            f"<div class='muted'>gold label: <b>{_e(gold)}</b> · query {q}</div>{''.join(blocks)}</article>"
        )
    return "".join(out)


# --------------------------------------------------------------------------------------------------- page
def _verdict_html(result: Any, race_line: str) -> str:
    info = result.info
    return (
        f"<p class='verdict'>Recommended: <b id='recommended'>{_e(result.recommended_cell)}</b></p>"
        f"<p>{_e(info.get('why', ''))}</p><p class='muted'>{_e(race_line)}</p>"
    )


def _forest_section(result: Any) -> str:
    info = result.info
    test = next(
        (
            r
            for r in result.test_rows
            if str(r.get("role", "")).startswith("validated") and r.get("delta") is not None
        ),
        None,
    )
    score = "mean score" if info.get("metric") else "accuracy"
    return (
        "<section id='forest-plot'><h2>Every cell against the reference</h2>"
        f"<p class='muted'>Δ = the cell's {score} minus the reference <b>{_e(info.get('reference'))}</b>'s "
        "on the same validation queries, in points, with the paired 95 % bootstrap interval (green: above 0, "
        "red: below, blue: includes 0). Faded rows left the race early (fewer queries, wider intervals). The "
        "diamond under the validated cell is its Δ on the held-out test queries, which decides the "
        "recommendation (highlighted).</p>"
        + forest_svg(result.rows, str(info.get("reference")), result.recommended_cell, test)
        + "</section>"
    )


def compare_page(
    result: Any,
    records: Sequence[dict],
    queries: Sequence[dict],
    pool: Sequence[dict],
    keys: Tuple[str, str],
    tables: str,
    race_line: str,
    n_shown: int = N_SHOWN,
) -> str:
    """The whole page. ``keys`` = (text key, label key); ``tables`` is the validation and test tables' HTML
    (:func:`ucs.experiments.compare_report.page` makes them), ``race_line`` the race in one sentence."""
    cells = [r["cell"] for r in result.rows]
    title = f"ucs compare — {len(cells)} cells, {result.n_queries} held-out queries"
    nav = "".join(
        f"<a href='#{a}'>{b}</a>"
        for a, b in (
            ("verdict", "verdict"),
            ("forest-plot", "forest plot"),
            ("heat", "k × order"),
            ("race", "rounds"),
            ("tables", "tables"),
            ("queries", "queries"),
        )
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_e(title)}</h1><nav>{nav}</nav></header><main>",
        f"<section id='verdict'><h2>Verdict</h2>{_verdict_html(result, race_line)}</section>",
        _forest_section(result),
        "<section id='heat'><h2>k × order, per selector</h2><p class='muted'>Each square: Δ against the "
        "reference (points, coloured: green above 0, red below) and the cell's validation score; <span "
        "class='badge left'>left rN</span> = eliminated at round N's look; a gold frame marks the "
        "recommended cell. Selectors that ignore the order have one column.</p>"
        + heat_maps(result.rows, result.recommended_cell)
        + "</section>",
        "<section id='race'><h2>How the rounds eliminated "
        f"cells</h2>{rounds_table(result.info, cells, records)}</section>",
        f"<section id='tables'><h2>Tables</h2>{tables}</section>",
        "<section id='queries'><h2>Queries and their demonstrations</h2>"
        + query_cards(result, records, queries, pool, keys, n_shown)
        + "</section>",
        "</main><footer class='muted' style='text-align:center;padding:10px'>Written by ucs compare; this "
        "file makes no network request.</footer></body></html>",
    ]
    return "\n".join(parts) + "\n"

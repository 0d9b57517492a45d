"""compare.html as HTML text, from a small comparison with a fake predictor and the hash-seeded embedder
double (ucs.testing): the forest plot has one row per cell, the heat maps one square per cell, the rounds add
up to the race, the demonstrations are numbered lists with own-label marks, user texts are escaped, nothing is
fetched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ucs.testing.doubles import DummyEmbedder

LABELS = ("card", "loan", "fee", "atm")
XSS = "<script>alert(1)</script>"


def examples(n: int = 100):
    """Labelled examples; every seventh text starts with a script tag that the page must show as text."""
    return [
        {
            "text": f"{XSS if i % 7 == 0 else ''}question {i} about my {LABELS[i % 4]} number {i % 5}",
            "label": LABELS[i % 4],
        }
        for i in range(n)
    ]


def by_k(text, demos):
    """Right exactly when it sees 4 demonstrations: the k = 4 cells win, the others score 0."""
    return "card" if len(demos) != 4 else text.split(" about my ")[1].split(" ")[0]


def small_compare(out: Path):
    """A comparison of 2 selectors × k 2, 4 × 2 orders (random ignores the order: 6 cells), raced in
    rounds."""
    from ucs import compare

    return compare(
        examples(),
        by_k,
        selectors=["topk", "random"],
        k=[2, 4],
        orders=["selected", "similar_last"],
        n_queries=60,
        round_size=10,
        embedder=DummyEmbedder(dim=16),
        out=out,
    )


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("cmp")
    mp.setenv("UCS_CACHE_DIR", str(root / "cache"))
    try:
        res = small_compare(root / "o")
    finally:
        mp.undo()
    return res, root / "o"


def test_the_page_is_self_contained_and_escapes_user_texts(compared):
    _, folder = compared
    page = (folder / "compare.html").read_text(encoding="utf-8")
    assert "default-src 'none'" in page and "<script" not in page.lower()  # no script at all, the tag escaped
    assert not re.search(r"\b(src|href)\s*=\s*['\"]?(https?:)?//", page) and "<link" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_forest_heat_maps_and_rounds_cover_every_cell(compared):
    from ucs.evaluation.records import read_records
    from ucs.experiments.compare_page import round_rows

    res, folder = compared
    page = (folder / "compare.html").read_text(encoding="utf-8")
    cells = [r["cell"] for r in res.rows]
    assert len(cells) == 6
    assert re.findall(r"<g class='forest-row[^']*' data-cell='([^']+)'", page) == cells  # best first
    assert len(re.findall(r"<g class='forest-row recommended", page)) == 1
    assert page.count("class='forest-test'") == 1  # the validated cell's test interval
    assert sorted(re.findall(r"<td class='heat-cell[^']*' data-cell='([^']+)'", page)) == sorted(cells)
    assert len(re.findall(r"<table class='heatmap' data-selector=", page)) == 2
    race = res.info["race"]
    for cell, rnd in race["left"].items():
        square = re.search(rf"data-cell='{re.escape(cell)}'.*?</td>", page.split("class='heatmaps'")[1], re.S)
        assert f"left r{rnd}" in square.group(0)
    rounds = round_rows(res.info, cells, read_records(folder / "records.jsonl"))
    assert [r["round"] for r in rounds] == list(range(1, race["rounds"] + 1))
    assert sorted(c for r in rounds for c in r["left"]) == sorted(race["left"])
    assert [len(r["racing"]) for r in rounds] == sorted((len(r["racing"]) for r in rounds), reverse=True)
    assert rounds[-1]["leader"] == race["leader"] == res.info["validated"]["cell"]
    assert page.count("class='round-row'") == race["rounds"]


def test_demonstrations_are_numbered_lists_with_own_label_marks(compared):
    from ucs.evaluation.records import read_records
    from ucs.experiments.compare import split_examples

    res, folder = compared
    page = (folder / "compare.html").read_text(encoding="utf-8")
    order = res.info["split"]["validation_order"]
    shown = [int(q) for q in re.findall(r"<article class='query-card' data-query='(\d+)'", page)]
    assert shown == order[:5]  # the first five validation queries, in answering order
    assert "The first 5 of the" in page
    recs = [r for r in read_records(folder / "records.jsonl") if int(r["query"]) in shown]
    pool, _ = split_examples(examples(), 60, 0)
    n_items = sum(len(r["selected"]) for r in recs)
    n_own = sum(pool[i]["label"] == r["gold"] for r in recs for i in r["selected"])
    assert page.count("<li class='demo") == n_items and page.count("<ol class='demos'>") == len(recs)
    assert 0 < n_own < n_items and page.count("<li class='demo own-label'>") == n_own
    assert page.count("badge own'>own label</span></li>") == n_own
    assert page.count("✓ right") + page.count("✗ wrong") == len(recs)
    assert re.search(r"vote: (card|loan|fee|atm) \((right|wrong)\)", page)
    json.loads((folder / "compare.json").read_text())  # the page is written beside an intact compare.json

"""compare.html in a real browser (Debian's headless Chromium through Playwright): it loads from disk without
a console error or a request, the forest plot and the heat maps hold one mark per cell, and the demonstration
lists carry their own-label marks."""

from __future__ import annotations

import pytest

from tests.experiments.test_compare_page import small_compare

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("cmp")
    mp.setenv("UCS_CACHE_DIR", str(root / "cache"))
    try:
        return small_compare(root / "o"), root / "o" / "compare.html"
    finally:
        mp.undo()


def n(page, selector: str) -> int:
    return page.eval_on_selector_all(selector, "els => els.length")


def test_compare_page_renders_offline_with_every_cell(browser, compared, tmp_path):
    from tests.report.conftest import PageLog

    res, path = compared
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    try:
        log = PageLog(page)
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        assert log.errors == [] and log.dialogs == []
        assert log.requests == [path.resolve().as_uri()]  # the file itself, nothing else
        cells = [r["cell"] for r in res.rows]
        assert n(page, "#forest g.forest-row") == len(cells) and n(page, "#forest .point") == len(cells)
        assert n(page, "#forest g.forest-row.recommended") == 1 and n(page, "#forest .forest-test") == 1
        box = page.locator("#forest").bounding_box()
        assert box and box["width"] > 500 and box["height"] > 22 * len(cells)  # drawn, not collapsed
        assert n(page, "table.heatmap") == 2 and n(page, "table.heatmap td.heat-cell") == len(cells)
        assert n(page, "table.heatmap td.heat-cell.left") == len(res.info["race"]["left"])
        assert n(page, "#rounds-table tr.round-row") == res.info["race"]["rounds"]
        assert n(page, "#queries article.query-card") == 5
        own = n(page, "ol.demos li.own-label")
        assert own > 0 and n(page, "ol.demos li.own-label .badge.own") == own
        weight = page.eval_on_selector("ol.demos li.own-label .dlabel", "e => getComputedStyle(e).fontWeight")
        assert int(weight) >= 600  # the own label is bold
        shot = tmp_path / "compare.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    finally:
        page.close()

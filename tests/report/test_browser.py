"""The report in a real browser (Debian's headless Chromium through Playwright): it renders offline, its plots
hold the expected points, its filters and search work, and user texts run nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.report.conftest import XSS_POOL, XSS_QUERY

from ucs.report import load_run, write_report  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report(run_dir) -> Path:
    return write_report(run_dir)


def n(page, selector: str) -> int:
    return page.eval_on_selector_all(selector, "els => els.length")


def visible_cards(page) -> int:
    return n(page, "#q-list .query-card")


def test_renders_offline_without_errors(open_report, report, tmp_path):
    page, log = open_report(report)
    page.wait_for_timeout(300)
    assert log.errors == []
    assert log.requests and all(u.startswith("file://") for u in log.requests), log.requests
    assert log.dialogs == []
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_plots_hold_the_expected_points(open_report, report, run_dir):
    run = load_run(run_dir)
    page, _ = open_report(report)
    n_pool = len(run.pool_texts)
    assert n(page, "#fig-scatter .scatterlayer path.point") == n_pool  # every pool item drawn (small pool)
    assert n(page, "#fig-accuracy .scatterlayer path.point") == len(run.methods)
    assert n(page, "#fig-delta .scatterlayer path.point") == 1  # dpp+ucs − dpp
    sizes = set(__import__("numpy").bincount(run.cluster_ids(42)).tolist())
    assert n(page, "#fig-spectrum .barlayer path") == len(sizes)  # one bar per distinct cluster size


def test_filters_and_search_change_what_is_shown(open_report, report, run_dir):
    run = load_run(run_dir)
    page, _ = open_report(report)
    n_q = len(run.queries)
    assert visible_cards(page) == n_q
    assert n(page, "#q-list .method-block") == n_q * len(run.methods)

    page.select_option("#f-method", "dpp+ucs")
    assert n(page, "#q-list .method-block") == n_q
    assert set(
        page.eval_on_selector_all("#q-list .method-block", "els => els.map(e => e.dataset.method)")
    ) == {"dpp+ucs"}

    page.select_option("#f-method", "")
    wrong = [r for r in run.records if r["seed"] == 42 and not r["correct"]]
    page.select_option("#f-correct", "0")
    assert n(page, "#q-list .method-block") == len(wrong)
    assert n(page, "#q-list .method-block.right") == 0
    page.select_option("#f-correct", "")

    page.select_option("#f-label", "transfer")
    golds = page.eval_on_selector_all("#q-list .gold", "els => els.map(e => e.textContent)")
    assert golds and set(golds) == {"gold label: transfer"}
    page.select_option("#f-label", "")

    page.fill("#f-search", "TODAY")  # case-insensitive; in four queries and no pool text
    texts = page.eval_on_selector_all("#q-list .qtext", "els => els.map(e => e.textContent)")
    assert sorted(texts) == sorted(q["text"] for q in run.queries if "today" in q["text"]) and len(texts) == 4
    page.fill("#f-search", "no such text anywhere")
    assert visible_cards(page) == 0 and "showing 0 of 0" in page.text_content("#q-count")

    page.fill("#f-search", "")
    page.select_option("#f-seed", "43")
    assert visible_cards(page) == n_q


def test_user_texts_show_as_text_and_run_nothing(open_report, report, run_dir):
    page, log = open_report(report)
    page.fill("#f-search", "alert(")  # the cards whose query or demonstrations carry markup
    demo_texts = page.eval_on_selector_all("#q-list .dtext", "els => els.map(e => e.textContent)")
    assert any(t.startswith(XSS_POOL) for t in demo_texts)
    qtexts = page.eval_on_selector_all("#q-list .qtext", "els => els.map(e => e.textContent)")
    assert XSS_QUERY in qtexts
    assert n(page, "#q-list script") == 0 and n(page, "#q-list img") == 0  # nothing became an element
    i = next(k for k, t in enumerate(load_run(run_dir).pool_texts) if t.startswith(XSS_POOL))
    page.evaluate("i => Plotly.Fx.hover('fig-scatter', [{curveNumber: 0, pointNumber: i}])", i)
    hover = page.text_content("#fig-scatter .hoverlayer")
    assert XSS_POOL in hover and "label: balance" in hover  # the hover label shows the markup as text
    assert log.dialogs == [] and log.errors == []
    assert page.evaluate("() => document.querySelectorAll('script').length") == len(
        page.eval_on_selector_all("script", "els => els.filter(e => !e.src)")
    )  # every script inline, none loaded


def test_large_pool_report_renders_a_sample(open_report, tmp_path):
    from tests.report.test_build import write_synthetic_run
    from ucs.report import MAX_SCATTER_POINTS

    root = write_synthetic_run(tmp_path / "big", n_pool=6000, n_queries=120, seeds=(42,))
    page, log = open_report(write_report(root))
    assert n(page, "#fig-scatter .scatterlayer path.point") == MAX_SCATTER_POINTS
    assert visible_cards(page) == 50  # the first page of 120 queries
    page.click("#q-more")
    assert visible_cards(page) == 100
    assert log.errors == [] and all(u.startswith("file://") for u in log.requests)


@pytest.mark.slow
def test_report_of_a_real_demo_run(open_report, tmp_path):
    """``ucs demo`` with the embedded SmolLM2 backbone (llama.cpp) end to end, then its report in the
    browser."""
    pytest.importorskip("llama_cpp")
    from typer.testing import CliRunner

    from ucs.cli import app

    out = tmp_path / "demo"
    res = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"}).invoke(
        app,
        ["demo", "--queries", "3", "--budget", "3", "--cache-dir", str(tmp_path / "c"), "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert f"report: {out / 'report.html'}" in res.output
    run = load_run(out)
    page, log = open_report(out / "report.html")
    assert log.errors == [] and all(u.startswith("file://") for u in log.requests)
    assert "smollm2" in page.text_content("#summary").lower()
    assert n(page, "#fig-scatter .scatterlayer path.point") == len(run.pool_texts) > 0
    assert n(page, "#fig-accuracy .scatterlayer path.point") == 4
    assert visible_cards(page) == 3 and n(page, "#q-list .method-block") == 3 * 4
    assert n(page, "#q-list .demo") == 3 * 4 * 3
    page.screenshot(path=str(tmp_path / "demo-report.png"), full_page=True)


def test_readable_at_800_px_and_a_test_double_run_says_so(browser, report, tmp_path):
    page = browser.new_page(viewport={"width": 800, "height": 900})
    try:
        page.goto(report.resolve().as_uri())
        page.wait_for_load_state("load")
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 800  # no sideways page scroll
        banner = page.locator("#test-double-banner")
        assert banner.is_visible() and "test double" in banner.inner_text().lower()
        # every shown demonstration carries the score it was chosen with; those with the query's label are
        # marked
        scored_blocks = "#q-list .method-block:not([data-method='random'])"  # Random chooses with no score
        shown, scored = n(page, f"{scored_blocks} li.demo"), n(page, f"{scored_blocks} li.demo .dscore")
        assert shown > 0 and scored == shown
        own = page.eval_on_selector_all(
            "#q-list .query-card",
            "cards => cards.map(c => [c.querySelector('.gold').textContent.split(': ')[1], "
            "Array.from(c.querySelectorAll('li.demo')).map(li => [li.classList.contains('own-label'), "
            "li.querySelector('.dlabel').textContent.replace(' → ', '')])])",
        )
        assert all(flag == (label == gold) for gold, demos in own for flag, label in demos)
        assert any(flag for _, demos in own for flag, _ in demos)
        page.screenshot(path=str(tmp_path / "narrow.png"))
    finally:
        page.close()

"""Run folders for the report tests, and the headless Chromium they open them in.

The run folders come from the real pipeline (clusterer, selectors, runner) with the weight-free dummy
backbone; the browser is Debian's Chromium driven by Playwright. Browser tests skip where Chromium or
Playwright is absent, except under CI (``CI=true``), where they fail: a CI that cannot run them must say so.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("plotly")

#: Pool texts and queries that must be shown as text and never run.
XSS_POOL = "<script>alert(1)</script> what is my balance"
XSS_QUERY = "<img src=x onerror=alert(2)> show my savings"
LABELS = ("balance", "transfer", "card_lost", "exchange_rate")
TEMPLATES = {
    "balance": [
        "what is my balance",
        "how much money do i have",
        "show my account balance",
        "balance please",
    ],
    "transfer": [
        "send money to my friend",
        "transfer 20 euros to anna",
        "move cash to savings",
        "wire funds abroad",
    ],
    "card_lost": ["i lost my card", "my card was stolen", "block my card now", "cannot find my debit card"],
    "exchange_rate": [
        "what is the euro rate",
        "dollar to yen rate",
        "exchange rate for pounds",
        "current fx rate",
    ],
}
#: On the paper preset (its clustering and estimator in the backbone's space), with ridge codes and small
#: sizes.
SMALL = {
    "backbone": "dummy",
    "mode": "likelihood",
    "test_size": 9,
    "n_runs": 2,
    "budget": 4,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector.params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
}


def write_table(path: Path) -> Path:
    """A small banking-intent table with a ``split`` column; several pool texts carry a script tag."""
    rows = []
    for label, texts in TEMPLATES.items():
        for k in range(10):
            text = f"{texts[k % len(texts)]} {k}"
            if label == "balance" and k % 2 == 0:
                text = f"{XSS_POOL} {k}"
            rows.append({"text": text, "label": label, "split": "pool"})
        rows.append({"text": f"{texts[0]} today", "label": label, "split": "test"})
        rows.append({"text": f"{texts[1]} please", "label": label, "split": "test"})
    rows.append({"text": XSS_QUERY, "label": "balance", "split": "test"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def make_run(root: Path, selectors=("random", "dpp", "dpp+ucs"), **kw) -> Path:
    """Run the pipeline on :func:`write_table`'s data into ``root/out``; returns the run folder. ``kw``:
    settings by field or path name (``clusterer.method``)."""
    from ucs.data import load_table
    from ucs.pipeline import Pipeline, PipelineConfig

    ds = load_table(write_table(root / "bank.jsonl"), split_column="split", name="bank-xss")
    cfg = PipelineConfig.resolve(
        "paper", overrides={"dataset": str(root / "bank.jsonl"), "selector.method": selectors, **SMALL, **kw}
    )
    Pipeline(cfg, dataset=ds, cache_dir=root / "cache", out_dir=root / "out", progress=False).run()
    return root / "out"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"))


def chromium_path() -> str | None:
    """Debian's Chromium (``$UCS_CHROMIUM`` overrides), or ``None``."""
    for cand in (
        os.environ.get("UCS_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if cand and Path(cand).is_file():
            return cand
    return None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(
            f"{reason} (CI=true: the report's browser tests must run in CI; .ci/run installs chromium)"
        )
    pytest.skip(reason)


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the report's tests; Playwright's sync API keeps an event loop running in this thread
    while it is open, so it is closed when the report tests end (tests elsewhere call ``asyncio.run``). A
    headless Chromium (Debian's) launched through Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[browser]')")
    exe = chromium_path()
    if exe is None:
        _unavailable("Chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class PageLog:
    """What a page did: console errors, page errors, requests, dialogs."""

    def __init__(self, page) -> None:
        self.errors: list = []
        self.requests: list = []
        self.dialogs: list = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

        def on_dialog(d) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)


@pytest.fixture
def open_report(browser):
    """``open_report(path) -> (page, log)``: the report loaded from disk, plots drawn."""
    pages = []

    def _open(path: Path):
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        pages.append(page)
        log = PageLog(page)
        page.goto(Path(path).resolve().as_uri())
        page.wait_for_load_state("load")
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        return page, log

    yield _open
    for p in pages:
        p.close()

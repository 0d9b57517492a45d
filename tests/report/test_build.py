"""The report as HTML text: self-contained, deterministic, escaped, complete, and small for a large pool."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from tests.report.conftest import XSS_POOL, XSS_QUERY

from ucs.report import MAX_SCATTER_POINTS, build_report, load_run, write_report  # noqa: E402


def test_report_is_self_contained_and_deterministic(run_dir):
    html = build_report(run_dir)
    assert html == build_report(run_dir)  # same folder, same bytes
    assert html.count("window.PlotlyConfig") == 1 and len(re.findall(r"plotly\.js v\d", html)) == 1  # JS once
    assert not re.search(r"<script[^>]+\bsrc\s*=", html) and not re.search(r"<link\b", html)
    assert "default-src 'none'" in html  # the page itself forbids any request


def test_user_texts_are_escaped(run_dir):
    html = build_report(run_dir)
    run = load_run(run_dir)
    assert any(t.startswith(XSS_POOL) for t in run.pool_texts)
    assert any(q["text"] == XSS_QUERY for q in run.queries)
    for raw in ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>"):
        assert raw not in html


def test_report_contents(run_dir):
    run = load_run(run_dir)
    html = build_report(run_dir)
    assert run.methods == ["random", "dpp", "dpp+ucs"]  # the order asked for
    for m in run.methods:
        assert f"<tr><td>{m}</td>" in html
    assert "dpp+ucs − dpp" in html  # the UCS form's paired Δ row
    for section in ("accuracy-table", "delta-table", "coverage-table", "health-table", "timings-table"):
        assert f'id="{section}"' in html
    assert f"All\n    {len(run.pool_texts)} pool items are drawn" in html
    assert set(run.label_agreement) == {
        "random",
        "dpp",
        "dpp+ucs",
    }  # relevance of the prompts, in the coverage table
    share = run.label_agreement["dpp"]["mean"]
    table = re.search(r'id="coverage-table">(.*?)</table>', html, re.S).group(1)
    row = re.search(r"<tr><td>dpp</td>(.*?)</tr>", table, re.S).group(1)
    assert f"<td>{100 * share:.1f}</td>" in row
    assert "bank-xss" in html and run.manifest["key"]["dataset"]["fingerprint"] in html
    data = json.loads(
        re.search(r'<script type="application/json" id="ucs-data">(.*?)</script>', html, re.S).group(1)
    )
    assert set(data["rows"]) == {"42", "43"} and len(data["queries"]) == 9
    demos = data["rows"]["42"]["dpp"]["0"][2]
    assert len(demos) == 4 and all(d[1] is not None and d[2] >= 1 for d in demos)  # cluster id and size


def test_write_report_default_and_explicit_paths(run_dir, tmp_path):
    assert write_report(run_dir) == run_dir / "report.html"
    out = write_report(run_dir, tmp_path / "sub" / "r.html")
    assert out.read_text(encoding="utf-8") == (run_dir / "report.html").read_text(encoding="utf-8")


def test_not_a_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        build_report(tmp_path)


def test_folder_without_pipeline_run_files_still_reports(run_dir, tmp_path):
    """Folders written before the pipeline kept texts and clusters: tables and records, no explorer."""
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    shutil.rmtree(old / "pipeline")
    html = build_report(old)
    assert 'id="accuracy-table"' in html and "has no pool projection" in html and "has no pool texts" in html


def write_synthetic_run(
    root,
    n_pool=15_000,
    n_queries=500,
    methods=("random", "topk", "dpp", "dpp+ucs", "votek", "votek+ucs"),
    seeds=(42, 43, 44),
    budget=5,
    n_labels=77,
):
    """A run folder of the size of a large evaluation, in the files' own formats (no model, no pipeline)."""
    from ucs.evaluation.summary import summarize

    rng = np.random.default_rng(0)
    words = np.array(
        "account card transfer balance rate fee limit pin top up refund cash atm pending".split()
    )
    texts = [" ".join(rng.choice(words, size=int(rng.integers(6, 14)))) + f" #{i}" for i in range(n_pool)]
    labels = [f"intent_{i % n_labels}" for i in range(n_pool)]
    p = root / "pipeline"
    (p / "clusters").mkdir(parents=True)
    (p / "pool.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in zip(texts, labels))
    )
    (p / "queries.jsonl").write_text(
        "".join(
            json.dumps({"query": q, "text": texts[q] + " ?", "gold": labels[q]}) + "\n"
            for q in range(n_queries)
        )
    )
    files = {}
    for s in seeds:
        ids = rng.zipf(1.6, size=n_pool) % 3000
        np.save(p / "clusters" / f"seed{s}_q0.1.npy", np.unique(ids, return_inverse=True)[1].astype(np.int64))
        files[str(s)] = {"0.1": f"clusters/seed{s}_q0.1.npy"}
    (p / "clusters.json").write_text(
        json.dumps({"default_q": 0.1, "q_by_method": {m: 0.1 for m in methods}, "files": files})
    )
    np.save(p / "projection.npy", rng.normal(size=(n_pool, 2)).astype(np.float32))
    records = []
    for m in methods:
        for run, s in enumerate(seeds):
            for q in range(n_queries):
                pred = labels[q] if rng.random() < 0.6 else labels[(q + 1) % n_pool]
                records.append(
                    {
                        "method": m,
                        "seed": s,
                        "run": run,
                        "query": q,
                        "selected": rng.integers(0, n_pool, size=budget).tolist(),
                        "parsed": pred,
                        "gold": labels[q],
                        "correct": pred == labels[q],
                        "n_dropped": 0,
                    }
                )
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = summarize(records, run_seeds=seeds, n_boot=200)
    summary.update(dataset="synthetic", mode="likelihood", n_queries_requested=n_queries)
    (root / "results.json").write_text(json.dumps(summary))
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "key": {"dataset": {"name": "synthetic"}},
                "methods": list(methods),
                "seeds": {"run_seeds": list(seeds)},
                "status": "complete",
            }
        )
    )
    return root


def test_large_pool_report_stays_under_10_mb(tmp_path):
    root = write_synthetic_run(tmp_path / "big")
    out = write_report(root)
    size = out.stat().st_size
    assert size < 10_000_000, f"{size / 1e6:.1f} MB"
    html = out.read_text(encoding="utf-8")
    assert (
        f"sample of {MAX_SCATTER_POINTS} of them" in html and f"{MAX_SCATTER_POINTS} of 15000 items" in html
    )


def test_health_figures_of_a_known_partition():
    from sklearn.metrics import adjusted_mutual_info_score

    from ucs.report.tables import health

    ids = np.array([0, 0, 0, 1, 2])
    y = ["a", "a", "b", "b", "c"]
    h = health(ids, y)
    assert (h["n_clusters"], h["largest_fraction"], h["singleton_fraction"]) == (3, 0.6, 0.4)
    p = np.array([0.6, 0.2, 0.2])
    assert h["effective_clusters"] == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    assert h["purity"] == pytest.approx(0.8)  # (2 + 1 + 1) / 5
    assert h["ami"] == pytest.approx(adjusted_mutual_info_score([0, 0, 1, 1, 2], ids))
    assert health(ids)["ami"] is None

"""The results-page table: every cell on every query, resumable query by query, Δ and the copy baseline paired
over the queries every cell answered — with ucs.testing's hash embedder (orchestration), and SmolLM2 writing
parses of real HWU64 utterances in two worker processes (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.experiments.test_compare_generate import EMB, _nearest_label, _parses
from ucs.experiments.compare_table import grid_table

CELLS = ["topk:2:selected", "topk:2:similar_last", "random:2:selected"]


def test_every_cell_answers_every_query_and_a_limit_resumes_query_by_query(tmp_path):
    data = _parses(30)
    pool, queries = data[:20], data[20:]
    asked = []

    def predictor(text, demos):
        asked.append(text)
        return _nearest_label(text, demos)

    rows = grid_table(
        pool, queries, predictor, CELLS, out=tmp_path / "t", metric="exact", embedder=EMB, limit=4
    )
    assert len(asked) == 4 * 3 and {r["n_queries"] for r in rows} == {4}
    rows = grid_table(pool, queries, predictor, CELLS, out=tmp_path / "t", metric="exact", embedder=EMB)
    assert len(asked) == 10 * 3  # only the queries the first call left
    assert {r["cell"] for r in rows} == set(CELLS) and {r["n_queries"] for r in rows} == {10}
    ref = next(r for r in rows if r["reference"])
    assert ref["cell"] == CELLS[0] and ref["delta"] is None
    for r in rows:  # the predictor copies the nearest demonstration: no gain over the copy baseline
        assert r["over_copy"] == pytest.approx(0.0) and r["accuracy"] == pytest.approx(r["copy"])
    saved = json.loads((tmp_path / "t" / "table.json").read_text())
    assert saved["n_queries"] == 10 and saved["planned_queries"] == 10
    assert len((tmp_path / "t" / "records.jsonl").read_text().splitlines()) == 30
    grid_table(pool, queries, predictor, CELLS, out=tmp_path / "t", metric="exact", embedder=EMB)
    assert len(asked) == 30  # finished: nothing asked again
    with pytest.raises(ValueError, match="other inputs"):
        grid_table(pool, queries, predictor, CELLS[:2], out=tmp_path / "t", metric="exact", embedder=EMB)
    with pytest.raises(ValueError, match="cells is empty"):
        grid_table(pool, queries, predictor, [], out=tmp_path / "u", metric="exact", embedder=EMB)


@pytest.mark.slow  # SmolLM2 through llama.cpp in two processes, all-MiniLM-L6-v2, the real HWU64 files
def test_smollm2_in_two_workers_writes_parses_the_table_scores(shared_data, tmp_path):
    from ucs.data import load_dataset
    from ucs.experiments.generate import default_max_new_tokens, generating_predictor
    from ucs.models import BackbonePool, load_backbone

    ds = load_dataset("hwu64_parse", shared_data)
    names = ds.label_text(ds.pool.labels)
    pool = [{"text": t, "label": y} for t, y in zip(ds.pool.texts[:400], names[:400])]
    queries = [{"text": t, "label": y} for t, y in zip(ds.test.texts[:4], ds.label_text(ds.test.labels[:4]))]
    with BackbonePool("smollm2", workers=2, context_length=1024) as bb:
        new = default_max_new_tokens(bb.count_tokens, [e["label"] for e in pool])
        rows = grid_table(
            pool,
            queries,
            generating_predictor(bb, new),
            ["topk:4:selected", "mmr:4:selected"],
            out=tmp_path / "t",
            metric="exact",
        )
    one = generating_predictor(
        load_backbone("smollm2", engine="llama", n_threads=1, context_length=1024), new
    )
    recs = [json.loads(x) for x in (tmp_path / "t" / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 8 and {r["n_queries"] for r in rows} == {4}
    for r in recs[:2]:  # the workers wrote what one process writes
        demos = [pool[i] for i in r["selected"]]
        assert r["prediction"] == one(queries[r["query"]]["text"], demos)
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["copy"] is not None for r in rows)
    assert np.isfinite([r["over_copy"] for r in rows]).all()

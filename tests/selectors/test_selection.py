"""The Selection result: exports with pool texts, round trips."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
from selector_data import make_pool

from ucs.selectors import DPPSelector, Selection, UCSPrior, VoteKSelector


def test_json_and_csv_exports_show_what_each_query_got(tmp_path):
    pool, queries, cids, labels, texts, qtexts = make_pool(q=3)
    s = DPPSelector(prior=UCSPrior(cids)).fit(pool, labels=labels, texts=texts).select(queries, 4)
    obj = json.loads(
        s.to_json(tmp_path / "sel.json", pool_texts=texts, pool_labels=labels, query_texts=qtexts)
    )
    assert obj == json.loads((tmp_path / "sel.json").read_text())
    recs = obj["records"]
    assert len(recs) == 12
    assert recs[0]["text"] == texts[s.indices[0, 0]] and recs[0]["query_text"] == qtexts[0]
    assert recs[5]["label"] == labels[s.indices[1, 1]]
    assert obj["params"]["prior"]["cluster_ids"]["n"] == len(cids)
    text = s.to_csv(tmp_path / "sel.csv", pool_texts=texts)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 12 and rows[3]["text"] == texts[s.indices[0, 3]]
    assert float(rows[0]["phi"]) == s.phi[0]
    back = Selection.from_dict(json.loads(s.to_json()))
    assert np.array_equal(back.indices, s.indices) and np.array_equal(back.phi, s.phi)
    assert np.array_equal(back.clusters_covered, s.clusters_covered)


def test_query_independent_export_once_or_per_query():
    pool, queries, cids, labels, texts, qtexts = make_pool(q=3)
    s = VoteKSelector().fit(pool).select(queries, 2)
    assert [r["query"] for r in s.to_records(texts)] == [-1, -1]
    per_q = s.to_records(texts, query_texts=qtexts)
    assert [r["query"] for r in per_q] == [0, 0, 1, 1, 2, 2]
    assert np.array_equal(s.row(2), s.indices[0])


def test_zero_shot_selection_exports():
    pool, queries, *_ = make_pool(q=2)
    s = DPPSelector().fit(pool).select(queries, 0)
    assert s.indices.shape == (2, 0)
    assert Selection.from_dict(json.loads(s.to_json())).indices.shape == (2, 0)
    assert s.to_csv().strip() == "query,position,pool_index,score"

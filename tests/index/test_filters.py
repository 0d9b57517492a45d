"""SelectorIndex.select(where=..., dedupe=...): metadata filters and near-duplicate suppression."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.index import SelectorIndex
from ucs.index.filters import greedy_distinct
from ucs.testing.doubles import DummyBackbone, DummyEmbedder, DummyLM

METHODS = [
    "topk",
    "topk+ucs",
    "dpp",
    "dpp+ucs",
    "mmr",
    "labelaware",
    "votek",
    "votek+ucs",
    "cover",
    "random",
    "mdl",
    "mdl+ucs",
    "bsr",
]
# methods that use no clustering: under a filter they equal an index fitted on the matching examples alone
NO_CLUSTERS = ["topk", "dpp", "mmr", "labelaware", "votek", "random", "mdl", "bsr"]


def _examples(n=90):
    return [
        {
            "text": f"item {i} word{i % 7}",
            "label": f"L{i % 5}",
            "lang": "de" if i % 3 == 0 else "en",
            "tier": "abc"[i % 4 % 3],
            "year": 2000 + i % 4,
        }
        for i in range(n)
    ]


def _index(method="topk", tmp_path=None, examples=None, embedder=None, **kw):
    emb = embedder or DummyBackbone(dim=16)
    return SelectorIndex(
        emb,
        method,
        input_keys=["text"],
        output_key="label",
        cache_dir=tmp_path,
        lm=DummyLM() if method.startswith("mdl") else None,
        **kw,
    ).fit(examples or _examples())


def _brute_force(index, rows, query_embedding, k):
    """TopK over ``rows`` alone: cosine, most similar first, ties by smaller index."""
    unit = index.embeddings_[rows] / np.linalg.norm(index.embeddings_[rows], axis=1, keepdims=True)
    sims = unit.astype(np.float64) @ (query_embedding / np.linalg.norm(query_embedding))
    order = np.lexsort((rows, -sims))[:k]
    return rows[order]


@pytest.mark.parametrize("search", ["exact", "hnsw"])
@pytest.mark.parametrize(
    "where",
    [
        {"lang": "de"},
        {"tier": ["a", "b"]},
        {"lang": "en", "year": [2001, 2003]},
        {"lang": "de", "year": 2002},
    ],
)  # the last: 33 of 400 rows
def test_filtered_topk_equals_brute_force_on_the_matching_rows(tmp_path, search, where):
    pytest.importorskip("faiss") if search == "hnsw" else None
    ex = _examples(400)
    index = _index("topk", tmp_path, ex, candidate_search=search)
    rows = np.array(
        [
            i
            for i, e in enumerate(ex)
            if all(e[f] in (v if isinstance(v, list) else [v]) for f, v in where.items())
        ]
    )
    queries = [f"query {j}" for j in range(12)]
    qe = index.embed_queries(queries)
    got = index.select(queries, k=8, query_embeddings=qe, where=where, order="selected")
    for q, s in zip(qe, got):
        np.testing.assert_array_equal(s.indices, _brute_force(index, rows, q, 8))
        assert s.n_matched == rows.size and s.note is None
        assert all(
            all(s.examples[j][f] in (v if isinstance(v, list) else [v]) for f, v in where.items())
            for j in range(8)
        )


def test_fewer_matches_than_k_returns_them_all_with_a_note(tmp_path):
    index = _index("dpp+ucs", tmp_path)
    sel = index.select(
        "item 3", k=8, where={"lang": "de", "year": 2000}
    )  # i % 3 == 0 and i % 4 == 0: 8 of 90
    assert sel.n_matched == 8 and len(sel.indices) == 8 and sel.note is None
    sel = index.select("item 3", k=10, where={"lang": "de", "year": 2000})
    assert sel.n_matched == 8 and sorted(sel.indices.tolist()) == list(range(0, 90, 12))
    assert "matched 8 example(s), fewer than k=10" in sel.note
    assert sel.to_dict()["n_matched"] == 8 and "fewer than k=10" in sel.to_dict()["note"]
    none = index.select("item 3", k=4, where={"lang": ["fr"]})
    assert none.n_matched == 0 and none.indices.size == 0 and none.examples == [] and "matched 0" in none.note
    assert "n_matched" not in index.select("item 3", k=4).to_dict()  # no filter, no field


@pytest.mark.parametrize(
    "where, match",
    [
        (
            {"lnag": "de"},
            r"field 'lnag', which no example has; filter on one of \['label', 'lang', 'text', 'tier', ",
        ),
        ({"lang": {"de": 1}}, r"where\['lang'\] holds dict .*give a str, a number or a bool"),
        ({"lang": []}, r"where\['lang'\] is an empty list"),
        ({"lang": [["de"]]}, r"where\['lang'\] holds list"),
        (
            {"year": "2001"},
            r"where\['year'\] holds str '2001' but the examples' 'year' values are int or float; pass int",
        ),
        ({"lang": float("nan")}, r"where\['lang'\] holds float nan"),
        ({1: "de"}, r"where has the key 1; name example fields with strings"),
        ([("lang", "de")], r"where must be a dict of field -> value"),
    ],
)
def test_a_bad_filter_names_the_field_and_the_fix(tmp_path, where, match):
    index = _index("topk", tmp_path)
    with pytest.raises(ValueError, match=match):
        index.select("item 3", k=4, where=where)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_chooses_only_among_the_matching_examples(tmp_path, method):
    ex = _examples()
    index = _index(method, tmp_path, ex)
    rows = [i for i, e in enumerate(ex) if e["tier"] in ("a", "c")]
    got = index.select(["item 3 word3", "item 50 word1"], k=6, where={"tier": ["a", "c"]})
    for s in got:
        assert len(set(s.indices.tolist())) == 6 and set(s.indices.tolist()) <= set(rows)
        assert s.n_matched == len(rows) and s.method == index.method_
        assert s.clusters_covered == len(set(index.cluster_ids_[s.indices].tolist()))
    if method in NO_CLUSTERS:  # the method ran on the matching examples alone
        alone = _index(method, tmp_path, [ex[i] for i in rows])
        for q, s in zip(["item 3 word3", "item 50 word1"], got):
            np.testing.assert_array_equal(s.indices, np.asarray(rows)[alone.select(q, k=6).indices])


@pytest.mark.parametrize("method", ["topk", "dpp+ucs", "votek+ucs"])
def test_filters_survive_save_and_load_and_see_added_examples(tmp_path, method):
    index = _index(method, tmp_path)
    before = index.select("item 4 word4", k=5, where={"lang": "en"})
    index.save(tmp_path / "ix")
    loaded = SelectorIndex.load(tmp_path / "ix", embedder=index.embedder, warmup=False)
    assert loaded.examples_ == index.examples_ and loaded.examples_[3]["year"] == 2003
    after = loaded.select("item 4 word4", k=5, where={"lang": "en"})
    np.testing.assert_array_equal(before.indices, after.indices)
    loaded.add_examples([{"text": "item 4 word4", "label": "L0", "lang": "fr", "tier": "z", "year": 1999}])
    new = loaded.select("item 4 word4", k=1, where={"lang": "fr"})
    assert new.n_matched == 1 and new.indices.tolist() == [90]


# ------------------------------------------------------------------ near-duplicates
def _planted_duplicates(table_embedder, copies=3, groups=10, dim=24):
    """``groups`` far-apart points, each with ``copies`` near-identical examples (cosine > 0.99)."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((groups, dim))
    table, ex = {}, []
    for g in range(groups):
        for c in range(copies):
            text = f"group {g} copy {c}"
            table[text] = centres[g] + 0.01 * rng.standard_normal(dim)
            ex.append({"text": text, "label": f"G{g}", "lang": "de" if g % 2 else "en"})
    query = centres[:4].mean(axis=0)
    table["the query"] = query
    return table_embedder(table), ex


def _max_pair_cos(index, idx):
    u = index.embeddings_[idx] / np.linalg.norm(index.embeddings_[idx], axis=1, keepdims=True)
    g = u.astype(np.float64) @ u.T.astype(np.float64)
    return float(np.max(g[np.triu_indices(len(idx), 1)])) if len(idx) > 1 else -1.0


@pytest.mark.parametrize("method", ["topk", "dpp", "mmr", "votek", "random", "labelaware", "topk+ucs"])
def test_dedupe_leaves_no_pair_above_the_threshold_and_keeps_k(tmp_path, table_embedder, method):
    emb, ex = _planted_duplicates(table_embedder)
    index = _index(method, tmp_path, ex, embedder=emb, clusterer={"method": "kmeans", "n_clusters": 5})
    plain = index.select("the query", k=6, order="selected")
    deduped = index.select("the query", k=6, dedupe=0.95, order="selected")
    assert len(deduped.indices) == 6 and deduped.note is None
    assert _max_pair_cos(index, deduped.indices) < 0.95
    if method == "topk":  # the next most similar distinct example replaces each dropped copy
        assert _max_pair_cos(index, plain.indices) > 0.99
        unit = index.embeddings_ / np.linalg.norm(index.embeddings_, axis=1, keepdims=True)
        q = emb.embed(["the query"])[0]
        ranked = np.lexsort((np.arange(len(ex)), -(unit.astype(np.float64) @ (q / np.linalg.norm(q)))))
        expect = ranked[greedy_distinct(unit[ranked].astype(np.float64), 0.95, 6)]
        np.testing.assert_array_equal(deduped.indices, expect)
        assert len({ex[i]["label"] for i in deduped.indices}) == 6  # one copy of each group


def test_dedupe_with_a_filter_and_a_pool_without_enough_distinct_examples(tmp_path, table_embedder):
    emb, ex = _planted_duplicates(table_embedder)
    index = _index("topk", tmp_path, ex, embedder=emb, clusterer={"method": "kmeans", "n_clusters": 5})
    sel = index.select("the query", k=8, where={"lang": "de"}, dedupe=0.95)  # 5 groups of 3 copies match
    assert sel.n_matched == 15 and len(sel.indices) == 5 and all(ex[i]["lang"] == "de" for i in sel.indices)
    assert "near-duplicates (cosine >= 0.95) were dropped" in sel.note and "5 of k=8" in sel.note
    batch = index.select(["the query", "group 1 copy 0"], k=3, where={"lang": "de"}, dedupe=0.95)
    assert [len(s.indices) for s in batch] == [3, 3] and batch[1].indices[-1] in (3, 4, 5)  # vote_last order


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.5, True, "0.9", float("nan")])
def test_dedupe_threshold_is_validated(tmp_path, bad):
    index = _index("topk", tmp_path, embedder=DummyEmbedder(dim=8))
    with pytest.raises(ValueError, match=r"dedupe must be a cosine threshold in \(0, 1\]"):
        index.select("item 1", k=3, dedupe=bad)

"""SelectorIndex: fit, select, save/load with verification, add_examples, refit, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import ucs
from ucs.clustering import LatentClusterer
from ucs.estimators import UnseenCoverage
from ucs.index import IndexIntegrityError, SelectorIndex
from ucs.testing.doubles import DummyEmbedder, DummyLM


def _planted(n_clusters=8, per=12, dim=48, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, dim))
    rows, texts, labels = [], [], []
    for c in range(n_clusters):
        for j in range(per + 3):
            rows.append(centres[c] + 0.05 * rng.standard_normal(dim))
            texts.append(f"c{c} item {j}")
            labels.append(f"L{c}")
    return np.asarray(rows), texts, labels, per


def _same_partition(a, b):
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_top_level_export():
    assert ucs.SelectorIndex is SelectorIndex
    assert "SelectorIndex" in ucs.__all__ and ucs.__version__


@pytest.mark.parametrize("method", ["dict_dbscan", "dbscan"])
def test_add_examples_then_select_equals_a_fresh_fit(tmp_path, table_embedder, method):
    rows, texts, labels, per = _planted()
    emb = table_embedder(dict(zip(texts, rows)))
    examples = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    old = [e for i, e in enumerate(examples) if i % (per + 3) < per]
    new = [e for i, e in enumerate(examples) if i % (per + 3) >= per]
    clusterer = LatentClusterer(method=method, dbscan_k=3, dbscan_q=0.99, n_atoms=16, pca_dim=24)
    kw = dict(method="dpp+ucs", output_key="label", clusterer=clusterer, cache_dir=tmp_path, random_state=3)
    grown = SelectorIndex(emb, **kw).fit(old).add_examples(new)
    fresh = SelectorIndex(emb, **kw).fit(old + new)
    assert grown.last_placement_ == {"joined": len(new), "singletons": 0}
    # the premise: the new examples join existing clusters, and a refit finds the same partition
    assert _same_partition(grown.cluster_ids_, fresh.cluster_ids_)
    assert 8 <= grown.n_clusters_ <= 10  # the planted clusters (DBSCAN may split one at this radius)
    queries = [f"c{c} item 0" for c in range(8)]
    a, b = grown.select(queries, k=6), fresh.select(queries, k=6)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.indices, y.indices)
        assert x.phi == y.phi and x.clusters_covered == y.clusters_covered
        assert x.clusters_covered == len(set(x.cluster_ids.tolist()))  # the selector's count after the refit
        assert x.examples == y.examples


def test_far_example_becomes_a_singleton_and_refit_reclusters(tmp_path, table_embedder):
    rows, texts, labels, per = _planted()
    far = {"far away": np.random.default_rng(9).standard_normal(rows.shape[1]) * 5}
    emb = table_embedder({**dict(zip(texts, rows)), **far})
    examples = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    clusterer = {"dbscan_k": 3, "dbscan_q": 0.99, "n_atoms": 16, "pca_dim": 24}
    idx = SelectorIndex(emb, "topk+ucs", output_key="label", clusterer=clusterer, cache_dir=tmp_path).fit(
        examples
    )
    n_clusters = idx.n_clusters_
    idx.add_examples([{"text": "far away", "label": "?"}])
    assert idx.last_placement_ == {"joined": 0, "singletons": 1}
    assert idx.n_clusters_ == n_clusters + 1 and idx.cluster_ids_[-1] == idx.cluster_ids_.max()
    assert idx.refit().n_examples_ == len(examples) + 1 and idx.n_added_ == 0


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_save_load_identical_selections_on_real_data(tmp_path, minilm, banking_examples, embed_cache):
    examples, queries = banking_examples
    idx = SelectorIndex(minilm, "dpp+ucs", output_key="label", cache_dir=embed_cache, random_state=1).fit(
        examples
    )
    before = idx.select(queries, k=8)
    idx.save(tmp_path / "ix")
    loaded = SelectorIndex.load(tmp_path / "ix", embedder=minilm)
    after = loaded.select(queries, k=8)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.scores, b.scores)
        np.testing.assert_array_equal(a.cluster_ids, b.cluster_ids)
        assert a.phi == b.phi and a.examples == b.examples
    # real retrieval: most demonstrations share the query's intent neighbourhood (not random picks)
    assert before[0].query == queries[0] and len(before[0].examples) == 8
    assert 1 < idx.n_clusters_ < len(examples)


@pytest.mark.slow  # loads all-MiniLM-L6-v2
def test_phi_is_the_coverage_of_the_subset(minilm, banking_examples, embed_cache):
    examples, queries = banking_examples
    for method in ("dpp", "dpp+ucs", "votek+ucs"):
        idx = SelectorIndex(minilm, method, cache_dir=embed_cache, input_keys=["text"]).fit(examples)
        s = idx.select(queries[0], k=6)
        cov = UnseenCoverage("binomial", t=5.0).fit(idx.cluster_ids_)  # the project's default estimator
        assert s.phi == pytest.approx(cov.phi(s.indices.tolist()), rel=1e-12)
        assert s.clusters_covered == len(set(s.cluster_ids.tolist()))
        assert list(s.examples[0]) == ["text", "label"]


def test_restart_never_reembeds(tmp_path):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(30)]
    emb = DummyEmbedder(dim=16)
    SelectorIndex(emb, "topk", output_key="a", cache_dir=tmp_path).fit(ex)
    assert emb.n_texts_embedded_ == 30
    fresh = DummyEmbedder(dim=16)  # a new process: same identity, empty memory
    SelectorIndex(fresh, "topk", output_key="a", cache_dir=tmp_path).fit(ex)
    assert fresh.n_texts_embedded_ == 0


@pytest.mark.parametrize(
    "target", ["embeddings.npy", "cluster_ids.npy", "examples.json", "clusterer/state.npz"]
)
def test_tampered_files_are_refused(tmp_path, target):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(40)]
    d = (
        SelectorIndex(DummyEmbedder(dim=16), "dpp+ucs", output_key="a", cache_dir=tmp_path)
        .fit(ex)
        .save(tmp_path / "ix")
    )
    assert d == tmp_path / "ix" / "versions" / "1"
    path = d / target
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(IndexIntegrityError, match=target.replace("/", ".")):
        SelectorIndex.load(tmp_path / "ix")


def test_load_refuses_another_embedder_and_unknown_format(tmp_path):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(10)]
    d = SelectorIndex(DummyEmbedder(dim=16), "topk", cache_dir=tmp_path).fit(ex).save(tmp_path / "ix")
    with pytest.raises(ValueError, match="not the one this index was built with"):
        SelectorIndex.load(tmp_path / "ix", embedder=DummyEmbedder(dim=16, seed=1))
    man = d / "index.json"
    meta = json.loads(man.read_text())
    meta["format"] = "ucs.index/999"
    man.write_text(json.dumps(meta))
    with pytest.raises(IndexIntegrityError, match="format"):
        SelectorIndex.load(tmp_path / "ix")


@pytest.mark.parametrize("edit", ["method", "unseal", "example_count"])
def test_a_hand_edited_manifest_is_refused(tmp_path, edit):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(10)]
    d = (
        SelectorIndex(DummyEmbedder(dim=16), "dpp+ucs", output_key="a", cache_dir=tmp_path)
        .fit(ex)
        .save(tmp_path / "ix")
    )
    assert SelectorIndex.load(tmp_path / "ix").method_ == "dpp+ucs"
    man = d / "index.json"
    meta = json.loads(man.read_text())
    if edit == "method":
        meta["params"]["method"] = "topk"
    elif edit == "unseal":
        del meta["sha256"]
    else:
        meta["n_examples"] = 9
    man.write_text(json.dumps(meta))
    with pytest.raises(IndexIntegrityError, match="index.json fails its SHA-256 check"):
        SelectorIndex.load(tmp_path / "ix")


def test_hnsw_search_saves_and_loads(tmp_path):
    pytest.importorskip("faiss")
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(300)]
    emb = DummyEmbedder(dim=24)
    idx = SelectorIndex(emb, "dpp+ucs", output_key="a", candidate_search="hnsw", cache_dir=tmp_path).fit(ex)
    before = idx.select(["question 5", "question 77"], k=5)
    loaded = SelectorIndex.load(idx.save(tmp_path / "ix"), embedder=emb)
    after = loaded.select(["question 5", "question 77"], k=5)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.indices, b.indices)
    assert before[0].indices[0] == 5  # the query's own example is found


def test_query_independent_and_small_pools(tmp_path):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(60)]
    idx = SelectorIndex(DummyEmbedder(dim=16), "votek+ucs", cache_dir=tmp_path).fit(ex)
    a, b = idx.select("anything", k=5), idx.select(None, k=5)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.clusters_covered == len(set(a.cluster_ids.tolist()))
    assert len(idx.select(["x", "y", "z"], k=5)) == 3
    for n in (1, 2, 5):
        small = SelectorIndex(DummyEmbedder(dim=16), "dpp+ucs", cache_dir=tmp_path).fit(ex[:n])
        s = small.select("question 1", k=4)
        assert len(s.examples) == min(4, n)
        small.add_examples(ex[n : n + 2])
        assert small.n_examples_ == n + 2
    assert len(idx.select("q", k=0).examples) == 0


def test_example_keys_and_query_embeddings(tmp_path):
    ex = [{"q": f"question {i}", "a": str(i % 3), "meta": i} for i in range(40)]
    emb = DummyEmbedder(dim=16)
    idx = SelectorIndex(emb, "dpp", input_keys=["q"], output_key="a", cache_dir=tmp_path).fit(ex)
    by_text = idx.select({"q": "question 3"}, k=3, example_keys=["q", "a"])
    by_vec = idx.select(query_embeddings=emb.embed(["question 3"])[0], k=3, example_keys=["q", "a"])
    np.testing.assert_array_equal(by_text.indices, by_vec.indices)
    assert all(set(e) == {"q", "a"} for e in by_text.examples)
    assert json.loads(json.dumps(by_text.to_dict()))["indices"] == by_text.indices.tolist()


def test_mdl_needs_an_lm_and_runs_with_one(tmp_path):
    ex = [{"q": f"question {i}", "a": f"label{i % 3}"} for i in range(40)]
    with pytest.raises(ValueError, match="pass lm="):
        SelectorIndex(DummyEmbedder(dim=16), "mdl+ucs", output_key="a", cache_dir=tmp_path).fit(ex)
    idx = SelectorIndex(
        DummyEmbedder(dim=16), "mdl+ucs", output_key="a", lm=DummyLM(), cache_dir=tmp_path
    ).fit(ex)
    s = idx.select("question 4", k=3)
    assert len(s.examples) == 3 and s.method == "mdl+ucs"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "nope"}, "unknown method"),
        ({"selector_params": {"bogus": 1}}, "bogus"),
        ({"candidate_search": "ivf"}, "candidate_search"),
        ({"output_key": "q"}, "also in input_keys"),
        ({"input_keys": ["missing"]}, "missing"),
    ],
)
def test_bad_parameters_name_the_fix(tmp_path, kwargs, match):
    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(10)]
    params = {"input_keys": ["q"], **kwargs}
    with pytest.raises(ValueError, match=match):
        SelectorIndex(DummyEmbedder(dim=16), cache_dir=tmp_path, **params).fit(ex)


@pytest.mark.parametrize("method", ["dict_kmeans", "kmeans", "dict_hdbscan", "dict_argmax"])
def test_other_clustering_methods_fit_add_save_load(tmp_path, table_embedder, method):
    rows, texts, labels, per = _planted()
    emb = table_embedder(dict(zip(texts, rows)))
    examples = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    old = [e for i, e in enumerate(examples) if i % (per + 3) < per]
    new = [e for i, e in enumerate(examples) if i % (per + 3) >= per]
    clusterer = LatentClusterer(method=method, n_atoms=16, pca_dim=24)
    idx = SelectorIndex(emb, "dpp+ucs", output_key="label", clusterer=clusterer, cache_dir=tmp_path).fit(old)
    idx.add_examples(new)
    assert idx.n_examples_ == len(examples) and idx.cluster_ids_.shape == (len(examples),)
    before = idx.select("c3 item 0", k=5)
    loaded = SelectorIndex.load(idx.save(tmp_path / "ix"), embedder=emb)
    np.testing.assert_array_equal(loaded.select("c3 item 0", k=5).indices, before.indices)
    assert loaded.refit().n_clusters_ >= 1


_BAD_VALUES = [
    (None, "NoneType None, not"),
    ("", "is empty"),
    ("   ", "only whitespace"),
    (["a"], "list"),
    ({"a": 1}, "dict"),
    (True, "bool"),
    (float("nan"), "nan"),
]


@pytest.mark.parametrize("value, what", _BAD_VALUES, ids=lambda v: repr(v)[:12])
def test_a_bad_label_is_refused_naming_the_example_and_key(tmp_path, value, what):
    ex = [{"q": f"question {i}", "a": f"label{i % 3}"} for i in range(10)]
    bad = [dict(e) for e in ex[:4]]
    bad[2]["a"] = value

    def make():
        return SelectorIndex(DummyEmbedder(dim=16), "topk", output_key="a", cache_dir=tmp_path)

    with pytest.raises(ValueError, match=rf"example 2, field 'a' \(output_key\) .*{re.escape(what)}"):
        make().fit(bad + ex[4:])
    idx = make().fit(ex)
    with pytest.raises(ValueError, match=rf"example 2, field 'a' \(output_key\) .*{re.escape(what)}"):
        idx.add_examples(bad)
    assert idx.n_examples_ == 10 and all(e["a"] is not value for e in idx.examples_)  # nothing was added


@pytest.mark.parametrize(
    "value, what",
    [
        (None, "NoneType"),
        ("", "is empty"),
        (" \n", "only whitespace"),
        (3, "int 3, not text"),
        (["x"], "list"),
    ],
    ids=lambda v: repr(v)[:12],
)
def test_a_bad_input_text_is_refused_naming_the_example_and_key(tmp_path, value, what):
    ex = [{"q": f"question {i}", "a": f"label{i % 3}"} for i in range(6)]
    bad = [dict(e) for e in ex[:3]]
    bad[1]["q"] = value

    def make():
        return SelectorIndex(
            DummyEmbedder(dim=16), "topk", input_keys=["q"], output_key="a", cache_dir=tmp_path
        )

    with pytest.raises(ValueError, match=rf"example 1, field 'q' .*{re.escape(what)}"):
        make().fit(bad + ex)
    with pytest.raises(ValueError, match=rf"example 1, field 'q' .*{re.escape(what)}"):
        make().fit(ex).add_examples(bad)


def test_integer_class_ids_and_numeric_answers_round_trip_through_save_and_load(tmp_path):
    ids = np.arange(12) % 3  # numpy integers, as a user's label array gives them
    ex = [{"q": f"question {i}", "a": ids[i]} for i in range(12)]
    emb = DummyEmbedder(dim=16)
    idx = SelectorIndex(emb, "labelaware", output_key="a", cache_dir=tmp_path).fit(ex)
    idx.add_examples([{"q": "question 12", "a": 2}, {"q": "question 13", "a": np.int32(1)}])
    assert [e["a"] for e in idx.examples_] == [*(ids.tolist()), 2, 1]
    assert all(type(e["a"]) is int for e in idx.examples_)  # numpy integers are stored as the ints they equal
    assert type(ex[0]["a"]) is np.int64  # the caller's dicts are left as they were
    loaded = SelectorIndex.load(idx.save(tmp_path / "ix"), embedder=emb)
    assert loaded.examples_ == idx.examples_ and all(type(e["a"]) is int for e in loaded.examples_)
    s = loaded.select("question 4", k=3)
    assert s.examples == idx.select("question 4", k=3).examples
    assert all(type(e["a"]) is int for e in s.examples)
    answers = [{"q": f"sum {i}", "a": [0.5, 12.25, -3.0][i % 3]} for i in range(9)]
    num = SelectorIndex(emb, "topk", output_key="a", cache_dir=tmp_path).fit(answers)
    assert SelectorIndex.load(num.save(tmp_path / "num"), embedder=emb).examples_ == answers


def test_loading_an_index_saved_with_a_null_label_is_refused(tmp_path):
    """An index written before labels were checked (its files consistent, one label null) is not used."""
    from ucs.utils.integrity import seal_record
    from ucs.utils.io import hash_file

    ex = [{"q": f"question {i}", "a": str(i % 3)} for i in range(8)]
    idx = SelectorIndex(DummyEmbedder(dim=16), "topk", output_key="a", cache_dir=tmp_path).fit(ex)
    d = idx.save(tmp_path / "ix")
    stored = json.loads((d / "examples.json").read_text())
    stored[5]["a"] = None
    (d / "examples.json").write_text(json.dumps(stored))
    man = json.loads((d / "index.json").read_text())
    man["files"]["examples.json"] = hash_file(d / "examples.json")
    (d / "index.json").write_text(json.dumps(seal_record(man)))
    with pytest.raises(ValueError, match=r"examples.json: example 5, field 'a' \(output_key\) is NoneType"):
        SelectorIndex.load(d, embedder=DummyEmbedder(dim=16))


def test_set_method_refits_only_the_selector(tmp_path):
    ex = [{"q": f"question {i % 7} variant {i}", "a": f"label{i % 4}"} for i in range(40)]
    emb = DummyEmbedder(dim=16)
    idx = SelectorIndex(emb, "topk", output_key="a", cache_dir=tmp_path).fit(ex)
    fresh = SelectorIndex(emb, "mmr", output_key="a", cache_dir=tmp_path).fit(ex)
    topk = idx.select("question 3", k=5).indices
    embedded, clusters = emb.n_texts_embedded_, idx.cluster_ids_.copy()
    assert idx.set_method("MMR").method_ == "mmr"
    assert emb.n_texts_embedded_ == embedded  # nothing re-embedded, nothing re-clustered
    assert np.array_equal(idx.cluster_ids_, clusters)
    mmr = idx.select("question 3", k=5).indices
    np.testing.assert_array_equal(mmr, fresh.select("question 3", k=5).indices)
    assert mmr.tolist() != topk.tolist()  # the premise: the two methods choose differently here
    with pytest.raises(ValueError, match="unknown method"):
        idx.set_method("nope")
    with pytest.raises(ValueError, match="pass lm="):
        idx.set_method("mdl")
    assert idx.method_ == "mmr" and idx.select("question 3", k=5).indices.tolist() == mmr.tolist()

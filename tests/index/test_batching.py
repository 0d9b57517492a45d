"""Micro-batched serving (ucs.index.batching, ucs serve's worker) answers each request exactly as alone, and
additions never stop or corrupt selections: real MiniLM where the embedding is shared, test doubles for
orchestration."""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from ucs.embedding.onnx_query import length_groups
from ucs.index import SelectorIndex
from ucs.index.batching import BATCHED_METHODS, SelectionBatcher
from ucs.testing import DummyEmbedder


def _examples(n: int = 60):
    return [
        {"text": f"utterance {i} about topic {i % 7}", "label": f"l{i % 5}", "lang": "de" if i % 2 else "en"}
        for i in range(n)
    ]


def _same(a, b) -> bool:
    """Two selections equal bit for bit (indices, scores, cluster ids, Φ, examples)."""
    return (
        np.array_equal(a.indices, b.indices)
        and np.array_equal(a.scores, b.scores, equal_nan=True)
        and np.array_equal(a.cluster_ids, b.cluster_ids)
        and a.phi == b.phi
        and a.examples == b.examples
        and a.clusters_covered == b.clusters_covered
        and a.query == b.query
    )


# ---------------------------------------------------------------------------------------------- length groups
def _cost(groups, lengths, overhead):
    return sum(overhead + len(g) * max(lengths[i] for i in g) for g in groups)


@pytest.mark.parametrize("seed", range(12))
def test_length_groups_are_the_cheapest_runs(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 60, size=int(rng.integers(1, 9))).tolist()
    groups = length_groups(lengths, overhead=16)
    assert sorted(int(i) for g in groups for i in g) == list(range(len(lengths)))
    s = sorted(lengths)
    best = min(  # every split of the sorted lengths into runs
        sum(16 + (b - a) * s[b - 1] for a, b in zip((0,) + cut, cut + (len(s),)))
        for r in range(len(s))
        for cut in itertools.combinations(range(1, len(s)), r)
    )
    assert _cost(groups, lengths, 16) == best


def test_length_groups_respect_the_largest_call():
    groups = length_groups([10] * 150, overhead=16, max_group=64)
    assert len(groups) == 3 and max(len(g) for g in groups) == 64  # the fewest calls of at most 64 texts
    assert sorted(int(i) for g in groups for i in g) == list(range(150))


# ---------------------------------------------------------------------------------------------- real model
def test_onnx_queries_embedded_together_equal_each_alone(minilm, banking_examples):
    _, queries = banking_examples
    minilm.embed_queries(["warm up"])  # builds (and checks) the query encoder
    if minilm.query_backend_ != "onnx":
        pytest.skip(f"ONNX Runtime does not answer here: {minilm.query_backend_reason_}")
    assert minilm.query_batch_invariant
    together = minilm.embed_queries(queries)
    alone = np.concatenate([minilm.embed_queries([q]) for q in queries])
    assert np.array_equal(together, alone)


def test_served_batches_equal_unbatched_selections_with_minilm(
    tmp_path, minilm, banking_examples, embed_cache
):
    """Concurrent HTTP requests, answered in shared batches, get the rows of an in-process select of each
    alone."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    httpx = pytest.importorskip("httpx")
    from ucs.index.service import ServedIndex, create_app

    examples, queries = banking_examples
    folder = tmp_path / "index"
    SelectorIndex(minilm, "topk", input_keys=["text"], output_key="label", cache_dir=embed_cache).fit(
        examples
    ).save(folder)
    served = ServedIndex(folder, embedder=minilm, reload_interval_s=60, batch_window_s=0.02)
    app = create_app(served)
    local = SelectorIndex.load(folder, embedder=minilm)

    async def hammer():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            bodies = [{"query": q, "k": 6} for q in queries] + [{"queries": queries[:3], "k": 6}]
            return await asyncio.gather(*[client.post("/v1/select", json=b) for b in bodies])

    try:
        answers = asyncio.run(hammer())
        assert served.batcher.largest_batch_ > 1, "the requests were not answered together"
    finally:
        served.close()
    for q, res in zip(queries + [None], answers):
        assert res.status_code == 200
        rows = res.json()["results"]
        for row, text in zip(rows, [q] if q is not None else queries[:3]):
            want = local.select(text, 6)
            assert row["indices"] == want.indices.tolist() and row["examples"] == want.examples
            assert row["scores"] == want.scores.tolist() and row["phi"] == want.phi
            assert row["cluster_ids"] == want.cluster_ids.tolist() and row["query"] == text


# ---------------------------------------------------------------------------------------------- the batcher
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("method", BATCHED_METHODS)
def test_batched_methods_select_as_alone(method, workers):
    pytest.importorskip("faiss", reason="row-invariant exact search needs faiss (the fast extra)")
    index = SelectorIndex(DummyEmbedder(dim=16), method, input_keys=["text"], output_key="label").fit(
        _examples()
    )
    assert index.search_.row_invariant
    queries = [f"utterance {i} about topic {i % 3}" for i in range(0, 40, 3)] + ["something else"]
    batcher = SelectionBatcher(window_s=0.05, workers=workers)
    try:
        futures = [
            batcher.submit(index, [q], 5, order=order)
            for q, order in zip(queries, itertools.cycle([None, "similar_first"]))
        ]
        futures.append(batcher.submit(index, queries[:4], 5, order="selected"))
        got = [f.result(timeout=30) for f in futures]
        assert batcher.largest_batch_ > 1
    finally:
        batcher.close()
    for q, order, rows in zip(queries, itertools.cycle([None, "similar_first"]), got):
        assert len(rows) == 1 and _same(rows[0], index.select(q, 5, order=order))
    assert all(_same(r, index.select(q, 5, order="selected")) for r, q in zip(got[-1], queries[:4]))


def test_a_bad_request_fails_alone_and_filters_run_unbatched():
    index = SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    )
    batcher = SelectionBatcher(window_s=0.05)
    try:
        good = batcher.submit(index, ["utterance 3 about topic 3"], 4)
        bad = batcher.submit(index, ["utterance 4"], 4, where={"colour": "red"})
        filtered = batcher.submit(index, ["utterance 5"], 4, where={"lang": "de"}, dedupe=0.99)
        assert _same(good.result(timeout=30)[0], index.select("utterance 3 about topic 3", 4))
        with pytest.raises(ValueError, match="colour"):
            bad.result(timeout=30)
        want = index.select("utterance 5", 4, where={"lang": "de"}, dedupe=0.99)
        assert _same(filtered.result(timeout=30)[0], want) and filtered.result()[0].n_matched == 30
        assert batcher.call(lambda a, b: a + b, 2, 3) == 5
    finally:
        batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit(index, ["x"], 1)


def test_a_lone_client_never_waits_for_the_window():
    index = SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    )
    batcher = SelectionBatcher(window_s=30.0)
    try:
        for q in ("utterance 1", "utterance 2", "utterance 3"):  # one at a time: each after a batch of one
            rows = batcher.submit(index, [q], 3).result(timeout=10)  # a 30 s window would time this out
            assert _same(rows[0], index.select(q, 3))
        assert batcher.largest_batch_ == 1 and batcher.n_batches_ == 3
    finally:
        batcher.close()


def test_batcher_settings_are_checked():
    with pytest.raises(ValueError, match="window_s"):
        SelectionBatcher(window_s=-1)
    with pytest.raises(ValueError, match="max_queries"):
        SelectionBatcher(max_queries=0)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="workers"):
            SelectionBatcher(workers=bad)


def test_workers_answer_side_by_side():
    """Two calls that each wait for the other finish only when two workers run them at the same time."""
    batcher = SelectionBatcher(workers=2)
    meet = threading.Barrier(2, timeout=10)
    try:
        with ThreadPoolExecutor(2) as pool:
            names = list(
                pool.map(
                    lambda _: batcher.call(lambda: (meet.wait(), threading.current_thread().name)[1]),
                    range(2),
                )
            )
        assert sorted(names) == ["ucs-serve-batcher-0", "ucs-serve-batcher-1"]
    finally:
        batcher.close()


# ---------------------------------------------------------------------------------------------- additions
@pytest.mark.parametrize("method", ["topk", "topk+ucs", "dpp+ucs", "votek"])
def test_adding_to_a_copy_equals_a_refit_selector_and_leaves_the_original(method):
    index = SelectorIndex(DummyEmbedder(dim=16), method, input_keys=["text"], output_key="label").fit(
        _examples()
    )
    before = index.select("utterance 9 about topic 2", 4)
    new = [{"text": f"a new utterance {i}", "label": "l1", "lang": "en"} for i in range(3)]
    grown = index.copy().add_examples(new, embeddings=index.embed_examples(new))
    assert index.n_examples_ == 60 and index.search_.pool.shape[0] == 60 and grown.n_examples_ == 63
    assert _same(index.select("utterance 9 about topic 2", 4), before)
    ref = grown.copy()._fit_selector()  # the selector refit from scratch on the grown pool
    assert np.array_equal(grown.selector_.pool_, ref.selector_.pool_)
    assert grown.selector_.labels_ == ref.selector_.labels_ and grown.selector_.texts_ == ref.selector_.texts_
    assert np.array_equal(grown.selector_.cluster_ids_, ref.selector_.cluster_ids_)
    for q in ("a new utterance 1", "utterance 9 about topic 2"):
        assert _same(grown.select(q, 4), ref.select(q, 4))
    same = SelectorIndex(DummyEmbedder(dim=16), method, input_keys=["text"], output_key="label").fit(
        _examples()
    )
    same.add_examples(new)  # embedded here: the same rows
    assert _same(same.select("a new utterance 2", 4), grown.select("a new utterance 2", 4))


def test_add_examples_checks_given_embeddings():
    index = SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    )
    with pytest.raises(ValueError, match="embeddings has shape"):
        index.add_examples([{"text": "x", "label": "l1"}], embeddings=np.zeros((2, 16)))
    with pytest.raises(ValueError, match="dimension"):
        index.add_examples([{"text": "x", "label": "l1"}], embeddings=np.zeros((1, 8)))
    assert index.n_examples_ == 60


def test_selections_go_on_while_an_addition_saves(tmp_path, monkeypatch):
    """The save runs off the worker: a selection completes while the addition is held inside its save."""
    from ucs.index.service import ServedIndex

    folder = tmp_path / "index"
    SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    ).save(folder)
    served = ServedIndex(folder, embedder=DummyEmbedder(dim=16), reload_interval_s=0)
    saving, answered = threading.Event(), threading.Event()
    real_save = SelectorIndex.save

    def held_save(self, directory):
        saving.set()
        assert answered.wait(30), "no selection was answered while the addition saved"
        return real_save(self, directory)

    monkeypatch.setattr(SelectorIndex, "save", held_save)
    adder = threading.Thread(target=served.add, args=([{"text": "held", "label": "l0", "lang": "en"}],))
    adder.start()
    try:
        assert saving.wait(30)
        rows = served.select(served.current(), ["utterance 2 about topic 2"], 3).result(timeout=10)
        assert rows[0].indices.size == 3 and served.index.version_ == 1
        answered.set()
        adder.join(30)
        assert served.index.version_ == 2 and served.index.n_examples_ == 61
    finally:
        answered.set()
        served.close()


def test_concurrent_selects_during_additions_see_version_n_or_n_plus_1(tmp_path):
    """Readers hammer the HTTP app while examples are added three times: no error, and every answer comes from
    the version before the addition or the one it saved, with indices valid for that version."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    httpx = pytest.importorskip("httpx")
    from ucs.index.service import ServedIndex, create_app

    folder = tmp_path / "index"
    SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    ).save(folder)
    served = ServedIndex(folder, embedder=DummyEmbedder(dim=16), reload_interval_s=0)
    token = "add-token-0123456789abcdef"
    app = create_app(served, token=token)
    sizes = {1: 60}
    seen = []

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            for step in range(3):
                n = served.index.version_
                done = asyncio.Event()

                async def reader(r):
                    while not done.is_set():
                        res = await client.post(
                            "/v1/select", json={"query": f"utterance {r} about topic 1", "k": 3}
                        )
                        seen.append((n, res.status_code, res.json()))
                        await asyncio.sleep(0)

                async def adder():
                    body = {"examples": [{"text": f"added {step}", "label": "l2", "lang": "en"}]}
                    res = await client.post(
                        "/v1/examples", json=body, headers={"Authorization": f"Bearer {token}"}
                    )
                    assert res.status_code == 200 and res.json()["version"] == n + 1
                    sizes[n + 1] = res.json()["n_examples"]
                    await asyncio.sleep(0.05)  # readers keep going on the new version
                    done.set()

                await asyncio.gather(adder(), *[reader(r) for r in range(6)])

    try:
        asyncio.run(run())
    finally:
        served.close()
    assert sizes == {1: 60, 2: 61, 3: 62, 4: 63}
    assert len(seen) > 30
    for n, status, body in seen:
        assert status == 200 and body["version"] in (n, n + 1)
        (row,) = body["results"]
        assert len(row["indices"]) == 3 and max(row["indices"]) < sizes[body["version"]]
    assert {body["version"] for _, _, body in seen} >= {2, 3, 4}

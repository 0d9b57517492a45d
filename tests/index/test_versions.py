"""Versions of a saved SelectorIndex: atomic switch, retention, old layout, readers during a save, SIGKILL."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ucs.index import IndexIntegrityError, SelectorIndex
from ucs.index.storage import KEEP_VERSIONS
from ucs.testing.doubles import DummyBackbone, DummyEmbedder
from ucs.utils.integrity import seal_record
from ucs.utils.io import hash_file


def _example(i: int) -> dict:
    return {"q": f"question {i % 7} about topic {i}", "a": f"label{i % 3}"}


def _fit(tmp_path, n=20, method="dpp+ucs", emb=None):
    emb = emb or DummyEmbedder(dim=8)
    return SelectorIndex(emb, method, output_key="a", cache_dir=tmp_path / "cache").fit(
        [_example(i) for i in range(n)]
    )


def _legacy_copy(version_dir, dest):
    """The folder layout written before versions (format ucs.index/2: arrays in one arrays.npz)."""
    man = json.loads((version_dir / "index.json").read_text())
    dest.mkdir()
    arrays = {name: np.load(version_dir / f"{name}.npy") for name in man["arrays"]}
    np.savez(dest / "arrays.npz", **arrays)
    shutil.copy(version_dir / "examples.json", dest / "examples.json")
    shutil.copytree(version_dir / "clusterer", dest / "clusterer")
    files = ["examples.json", "arrays.npz"] + [f for f in man["files"] if f.startswith("clusterer/")]
    man.update(format="ucs.index/2", files={f: hash_file(dest / f) for f in files})
    (dest / "index.json").write_text(json.dumps(seal_record(man)))
    return dest


def test_each_save_is_a_new_version_and_old_ones_are_pruned(tmp_path):
    idx = _fit(tmp_path)
    root = tmp_path / "ix"
    assert SelectorIndex.latest_version(root) is None
    for n in range(1, 6):
        assert idx.save(root) == root / "versions" / str(n) and idx.version_ == n
        assert SelectorIndex.latest_version(root) == n and (root / "CURRENT").read_text() == f"{n}\n"
        idx.add_examples([_example(100 + n)])
    assert sorted(p.name for p in (root / "versions").iterdir()) == [
        str(n) for n in range(6 - KEEP_VERSIONS, 6)
    ]
    loaded = SelectorIndex.load(root, warmup=False)
    assert loaded.version_ == 5 and loaded.n_examples_ == 24
    older = SelectorIndex.load(root, warmup=False, version=3)  # a kept version: a rollback
    assert older.version_ == 3 and older.n_examples_ == 22
    with pytest.raises(IndexIntegrityError, match="version 1 .* is not stored"):
        SelectorIndex.load(root, warmup=False, version=1)
    with pytest.raises(ValueError, match="is one version of the index folder"):
        idx.save(root / "versions" / "5")  # a version is never rewritten
    assert SelectorIndex.load(root / "versions" / "4", warmup=False).version_ == 4  # a version's own folder


def test_a_damaged_pointer_is_refused(tmp_path):
    root = tmp_path / "ix"
    _fit(tmp_path).save(root)
    (root / "CURRENT").write_text("2x\n")
    with pytest.raises(IndexIntegrityError, match="not a version number"):
        SelectorIndex.load(root, warmup=False)
    (root / "CURRENT").write_text("7\n")
    with pytest.raises(IndexIntegrityError, match="version 7 .* is not stored"):
        SelectorIndex.load(root, warmup=False)


def test_a_folder_saved_before_versions_loads_and_is_upgraded(tmp_path):
    idx = _fit(tmp_path)
    legacy = _legacy_copy(idx.save(tmp_path / "new"), tmp_path / "old")
    q = idx.embed_queries(["question 3"])
    loaded = SelectorIndex.load(legacy, embedder=DummyEmbedder(dim=8), warmup=False)
    assert loaded.version_ == 0 and SelectorIndex.latest_version(legacy) == 0
    want = idx.select(query_embeddings=q[0], k=4).indices.tolist()
    assert loaded.select(query_embeddings=q[0], k=4).indices.tolist() == want
    loaded.cache_dir = tmp_path / "cache"
    loaded.add_examples([_example(50)])
    loaded.save(legacy)
    assert sorted(p.name for p in legacy.iterdir()) == [".lock", "CURRENT", "versions"]
    again = SelectorIndex.load(legacy, warmup=False)
    assert again.version_ == 1 and again.n_examples_ == 21


def test_a_reader_keeps_serving_its_version_while_a_writer_saves(tmp_path):
    root = tmp_path / "ix"
    writer = _fit(tmp_path)
    writer.save(root)
    reader = SelectorIndex.load(root, warmup=False)
    q = writer.embed_queries(["question 2 about topic"])[0]
    before = reader.select(query_embeddings=q, k=5)
    for i in range(KEEP_VERSIONS + 1):  # version 1's files are removed by the last of these saves
        writer.add_examples([_example(200 + i), _example(300 + i)])
        writer.save(root)
    assert not (root / "versions" / "1").exists()
    assert reader.version_ == 1 and SelectorIndex.latest_version(root) == KEEP_VERSIONS + 2
    after = reader.select(query_embeddings=q, k=5)  # its memory-mapped arrays outlive the removed files
    assert after.indices.tolist() == before.indices.tolist() and reader.n_examples_ == 20
    assert np.array_equal(
        reader.embeddings_, DummyEmbedder(dim=8).embed([_example(i)["q"] for i in range(20)])
    )
    fresh = SelectorIndex.load(root, warmup=False)
    assert fresh.version_ == KEEP_VERSIONS + 2 and fresh.n_examples_ == 20 + 2 * (KEEP_VERSIONS + 1)


def test_arrays_are_memory_mapped_and_set_bsr_tokens_are_stored(tmp_path):
    backbone = DummyBackbone(dim=16)
    idx = _fit(tmp_path, n=30, method="bsr", emb=backbone)
    d = idx.save(tmp_path / "ix")
    man = json.loads((d / "index.json").read_text())
    assert {"bsr_tokens", "bsr_token_offsets", "embeddings", "cluster_ids"} <= set(man["arrays"])
    calls = []
    real = backbone._tokens.embed_tokens
    backbone._tokens.embed_tokens = lambda texts: calls.append(len(texts)) or real(texts)
    loaded = SelectorIndex.load(tmp_path / "ix", embedder=backbone, warmup=False)
    assert calls == []  # the pool's tokens are read, never re-encoded
    tokens = loaded.selector_.pool_tokens_
    for arr in (loaded.embeddings_, loaded.cluster_ids_, tokens.rows, tokens.offsets):
        assert not arr.flags.owndata and not arr.flags.writeable  # views of read-only memory maps
    queries = ["question 4 about topic 9", "label question 1"]
    for text in queries:
        assert loaded.select(text, k=4).indices.tolist() == idx.select(text, k=4).indices.tolist()
    assert calls == [1] * 2 * len(queries)  # only the queries (of both indexes: they share the backbone)


@pytest.mark.parametrize("method", ["votek", "votek+ucs"])
def test_votek_loads_its_stored_vote_graph(tmp_path, monkeypatch, method):
    idx = _fit(tmp_path, n=40, method=method)
    idx.save(tmp_path / "ix")
    import ucs.selectors.votek as votek

    def no_rebuild(*a, **kw):
        raise AssertionError("the vote graph was rebuilt at load")

    monkeypatch.setattr(votek, "build_vote_graph", no_rebuild)
    loaded = SelectorIndex.load(tmp_path / "ix", warmup=False)
    for k in (3, 8):
        assert loaded.select(None, k).indices.tolist() == idx.select(None, k).indices.tolist()
    assert np.array_equal(loaded.selector_.pairs_[0], idx.selector_.pairs_[0])


# ---------------------------------------------------------------------------------------------- SIGKILL
_ZYGOTE = textwrap.dedent("""
    import os, sys
    import faiss  # noqa: F401 - imported once here, not in every forked writer (OpenMP starts only in those)
    from ucs.index import SelectorIndex
    from ucs.testing.doubles import DummyEmbedder

    root, cache = sys.argv[1], sys.argv[2]

    def example(i):
        return {"q": f"question {i % 7} about topic {i}", "a": f"label{i % 3}"}

    def work():  # load the current version, then add one example and save, forever
        idx = SelectorIndex.load(root, embedder=DummyEmbedder(dim=8), warmup=False)
        idx.cache_dir = cache
        while True:
            idx.add_examples([example(idx.n_examples_)])
            idx.save(root)
            os.write(1, f"saved {idx.version_} {idx.n_examples_}\\n".encode())

    for line in sys.stdin:  # one forked writer per line; the test kills it with SIGKILL
        pid = os.fork()
        if pid == 0:
            try:
                work()
            finally:
                os._exit(1)
        os.write(1, f"pid {pid}\\n".encode())
        os.waitpid(pid, 0)
        os.write(1, b"reaped\\n")
""")


def _check_version(root):
    """The loaded index is one complete version: verified files (load hashes them), examples 0..N-1 (each save
    adds the next one), the embeddings and cluster ids of exactly those examples. Returns (version, N)."""
    idx = SelectorIndex.load(root, embedder=DummyEmbedder(dim=8), warmup=False)
    n = idx.n_examples_
    want = [_example(i) for i in range(n)]
    assert idx.examples_ == want, f"version {idx.version_} does not hold examples 0..{n - 1}"
    assert np.array_equal(idx.embeddings_, DummyEmbedder(dim=8).embed([e["q"] for e in want]))
    assert idx.cluster_ids_.shape == (n,) and idx.rep_.shape[0] == n
    return idx.version_, n


def test_sigkill_during_saves_leaves_version_n_or_n_plus_1(tmp_path):
    """A writer killed with SIGKILL at random points of add_examples + save, ≥ 200 times: every time the
    folder loads, verified, as the last version the writer reported saved or the one after it — never a mix.

    The folder is on tmpfs where there is one: a killed process loses nothing the kernel holds, so fsync (for
    power loss) plays no part here and only slows each save down."""
    pytest.importorskip("faiss")
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        tmp_path = Path(tempfile.mkdtemp(prefix="ucs-kill-", dir=shm))
    root, first_n = tmp_path / "ix", 12
    _fit(tmp_path, n=first_n, method="topk").save(root)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    zygote = subprocess.Popen(
        [sys.executable, "-c", _ZYGOTE, str(root), str(tmp_path / "cache")],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    rng, kills, versions, deadline = random.Random(0), 0, set(), time.monotonic() + 60
    last = _check_version(root)
    try:
        while kills < 220 and time.monotonic() < deadline:
            zygote.stdin.write("go\n")
            zygote.stdin.flush()
            line = zygote.stdout.readline()
            while line.startswith("saved "):  # the writer can save before the zygote has written its pid
                last = tuple(int(x) for x in line.split()[1:])
                line = zygote.stdout.readline()
            assert line.startswith("pid "), line
            time.sleep(rng.uniform(0.0, 0.15))  # a writer's load + add + save takes 30-50 ms on tmpfs
            os.kill(int(line.split()[1]), signal.SIGKILL)
            kills += 1
            for line in iter(zygote.stdout.readline, "reaped\n"):
                assert line.startswith("saved "), line
                last = tuple(int(x) for x in line.split()[1:])
            # version n (the last one saved) or the save that was under way: a newer number, one more example
            v, n = _check_version(root)
            assert (v, n) == last or (v > last[0] and n == last[1] + 1), f"loaded {(v, n)} after {last}"
            versions.add(v)
            last = (v, n)
    finally:
        zygote.kill()
        zygote.wait()
        if str(tmp_path).startswith("/dev/shm/"):
            shutil.rmtree(tmp_path, ignore_errors=True)
    print(f"{kills} kills; {len(versions)} distinct versions loaded, 0 unloadable or mixed")
    assert kills >= 200 and len(versions) > 20

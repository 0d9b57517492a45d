"""The keyed JSONL store's sealed xz segments: compaction changes no entry, never rewrites a segment, and
appends go on after it."""

import lzma
import subprocess
import sys

import pytest

from ucs.utils.integrity import DamagedFileWarning
from ucs.utils.store import KeyedJsonlStore, archive_path, compact, segment_paths

FIELDS = {"model": "m", "mode": "likelihood"}


def _store(root):
    return KeyedJsonlStore(root, FIELDS, key_field="k")


def _filled(root, n=50):
    s = _store(root)
    s.put({"k": f"q{i}", "v": [i * 0.1, -i / 3]} for i in range(n))
    return s


def test_compact_keeps_every_entry_and_appends_continue(tmp_path):
    before = dict(_filled(tmp_path)._load())
    with open(_store(tmp_path).path, "a", encoding="utf-8") as fh:
        fh.write('{"k": "torn", "v"')  # an interrupted append: dropped, as readers skip it
    (arc,) = compact(tmp_path)
    s = _store(tmp_path)
    assert arc == archive_path(s.path) and segment_paths(s.path) == [arc] and not s.path.exists()
    assert dict(s._load()) == before
    assert s.put([{"k": "q1", "v": [0]}, {"k": "new", "v": [1]}]) == 1  # q1 is in the archive already
    again = _store(tmp_path)
    assert again.get("new") == {"k": "new", "v": [1]} and again.get("q1") == before["q1"] and len(again) == 51
    first = arc.read_bytes()
    (seg,) = compact(tmp_path)  # only the appended line: a second segment; the first is not rewritten
    assert seg.name == f"{s.key}.1.jsonl.xz" and arc.read_bytes() == first and not again.path.exists()
    assert lzma.open(seg, "rt", encoding="utf-8").read().count("\n") == 1
    assert dict(_store(tmp_path)._load()) == dict(again._load())
    assert compact(tmp_path) == []  # nothing appended since: nothing written


def test_segments_are_read_in_order_and_merge_folds_them(tmp_path):
    _filled(tmp_path, 5)
    compact(tmp_path)
    for i in range(1, 12):  # eleven more segments: "10" and "11" must sort after "2"
        _store(tmp_path).put([{"k": f"s{i}", "v": [i]}])
        compact(tmp_path)
    with open(_store(tmp_path).path, "a", encoding="utf-8") as fh:  # a late duplicate of a sealed key:
        fh.write(_line("q0", [42.0]))  # the first line of a key wins, before and after merging
    s = _store(tmp_path)
    segs = segment_paths(s.path)
    assert [p.name.split(".")[1] for p in segs[1:]] == [str(i) for i in range(1, 12)]
    before = dict(s._load())
    assert before["q0"]["v"] == [0.0, 0.0] and len(before) == 16
    (merged,) = compact(tmp_path, merge=True)
    after = _store(tmp_path)
    assert (
        merged == archive_path(after.path)
        and segment_paths(after.path) == [merged]
        and not after.path.exists()
    )
    assert dict(after._load()) == before
    assert compact(tmp_path, merge=True) == []  # one segment and nothing appended: nothing to do


def _line(key, value):
    from ucs.utils.store import signed_line

    return signed_line({"k": key, "v": value})


def test_a_segment_that_cannot_be_decompressed_is_reported_and_recomputed(tmp_path):
    _filled(tmp_path, 5)
    compact(tmp_path)
    _store(tmp_path).put([{"k": "late", "v": [1]}])
    (seg,) = compact(tmp_path)
    seg.write_bytes(seg.read_bytes()[:-12])  # a truncated copy: the xz stream has no end
    with pytest.warns(DamagedFileWarning, match="cannot be decompressed"):
        s = _store(tmp_path)
        assert s.get("late") is None and len(s) == 5
    assert s.put([{"k": "late", "v": [1]}]) == 1


def test_compact_is_deterministic_and_smaller(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    plain = _filled(a, 400).path.stat().st_size
    _filled(b, 400)
    (x,), (y,) = compact(a), compact(b)
    assert x.read_bytes() == y.read_bytes() and x.stat().st_size < plain / 2


def test_edited_archive_lines_are_skipped_and_recomputed(tmp_path):
    _filled(tmp_path, 5)
    (arc,) = compact(tmp_path)
    text = (
        lzma.open(arc, "rt", encoding="utf-8").read().replace('"k": "q2", "v": [0.2', '"k": "q2", "v": [9.2')
    )
    with lzma.open(arc, "wt", encoding="utf-8") as fh:
        fh.write(text)
    with pytest.warns(DamagedFileWarning, match="checksum"):
        s = _store(tmp_path)
        assert s.get("q2") is None and len(s) == 4
    assert s.put([{"k": "q2", "v": [0.2, -2 / 3]}]) == 1


def test_compact_from_the_command_line(tmp_path):
    _filled(tmp_path, 3)
    out = subprocess.run(
        [sys.executable, "-m", "ucs.utils.store", "compact", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().endswith(".jsonl.xz") and len(_store(tmp_path)) == 3
    _store(tmp_path).put([{"k": "x", "v": [1]}])
    compact(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "ucs.utils.store", "compact", "--merge", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().endswith(f"{_store(tmp_path).key}.jsonl.xz") and len(_store(tmp_path)) == 4
    bad = subprocess.run([sys.executable, "-m", "ucs.utils.store"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "ucs.utils.store", "compact", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "is not a folder" in bad.stderr and "Traceback" not in bad.stderr


def _append_many(root, start, n):
    for i in range(start, start + n):
        _store(root).put([{"k": f"w{i}", "v": [i]}])  # a fresh store per entry: each append reopens the file


def test_a_read_overlapping_a_compaction_sees_every_entry(tmp_path, monkeypatch):
    import ucs.utils.store as store_module

    real = store_module.segment_paths
    before = dict(_filled(tmp_path)._load())
    calls = []

    def compacting_first(path):  # another process seals and removes the file once the reader listed segments
        calls.append(path)
        listed = real(path)
        if len(calls) == 1:
            compact(tmp_path)  # (its own listings come through here too, as calls 2 and later)
        return listed

    monkeypatch.setattr(store_module, "segment_paths", compacting_first)
    assert dict(_store(tmp_path)._load()) == before and not _store(tmp_path).path.exists()


def test_a_read_overlapping_a_merge_lists_the_segments_again(tmp_path, monkeypatch):
    import ucs.utils.store as store_module

    real = store_module.segment_paths
    s = _filled(tmp_path, 5)
    compact(tmp_path)
    s.put([{"k": "late", "v": [1]}])
    compact(tmp_path)
    listed = real(s.path)
    compact(tmp_path, merge=True)  # removes the second segment the reader had listed
    calls = []

    def stale_first(path):
        calls.append(path)
        return listed if len(calls) == 1 else real(path)

    monkeypatch.setattr(store_module, "segment_paths", stale_first)
    got = _store(tmp_path)
    assert len(got) == 6 and got.get("late") == {"k": "late", "v": [1]} and len(calls) == 2


@pytest.mark.skipif(
    sys.platform == "win32", reason="appends and compaction are serialised by flock on POSIX only"
)
def test_compact_while_other_processes_append_loses_nothing(tmp_path):
    import multiprocessing as mp

    _filled(tmp_path)
    ctx = mp.get_context("spawn")
    writers = [ctx.Process(target=_append_many, args=(tmp_path, 1000 * w, 150)) for w in range(2)]
    for p in writers:
        p.start()
    sealed = 0
    while any(p.is_alive() for p in writers):
        sealed += len(compact(tmp_path))
    for p in writers:
        p.join()
        assert p.exitcode == 0
    compact(tmp_path)
    got = _store(tmp_path)._load()
    assert sealed > 1, "the writers finished before compaction overlapped them; the test proved nothing"
    assert {f"w{1000 * w + i}" for w in range(2) for i in range(150)} <= set(got) and len(got) == 350


def test_compact_leaves_other_jsonl_files_alone(tmp_path):
    _filled(tmp_path, 3)
    records = tmp_path / "evals" / "run" / "records.jsonl"  # e.g. a store pointed at a whole work folder
    records.parent.mkdir(parents=True)
    records.write_text('{"method": "dpp"}\n', encoding="utf-8")
    (arc,) = compact(tmp_path)
    assert (
        arc == archive_path(_store(tmp_path).path)
        and records.read_text(encoding="utf-8") == '{"method": "dpp"}\n'
    )
    assert compact(tmp_path, merge=True) == [] and records.exists()


def test_store_files_lists_appendable_and_sealed_keys_only(tmp_path):
    from ucs.utils.store import store_files

    sealed = _filled(tmp_path / "one")
    compact(tmp_path / "one")
    appendable = KeyedJsonlStore(tmp_path / "two", {"model": "other"}, key_field="k")
    appendable.put([{"k": "q", "v": [1]}])
    (tmp_path / "records.jsonl").write_text("{}\n")  # an evaluation's records: not a store file
    paths = store_files(tmp_path)
    assert paths == sorted([sealed.path, appendable.path]) and not sealed.path.exists()
    reopened = KeyedJsonlStore.open_file(sealed.path, "k")
    assert reopened.entries() == _store(tmp_path / "one").entries() and len(reopened) == 50

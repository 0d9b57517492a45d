"""Fault tests of the runner: damaged records, selections, answer stores and manifests; two runs into one
folder; Ctrl-C and ``kill -9`` mid-run, then resume (no record lost, none duplicated)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fakes import make_lm, two_methods
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation import evaluate, read_records
from ucs.utils.integrity import DamagedFileWarning
from ucs.utils.lock import FolderLockedError, folder_lock, read_holder
from ucs.utils.store import signed_line

SRC = Path(__file__).resolve().parents[2] / "src"
TOTAL = 2 * 3 * 40  # methods × runs × queries of the scripted run

_SCRIPT = """
import sys
sys.path[:0] = [{src!r}, {tests!r}]
from fakes import make_lm, two_methods
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation import evaluate
ds = load_dataset("sample")
evaluate(ds, make_lm(delay={delay}), ["oracle", "random"], two_methods(ds), {out!r}, mode="paper",
         protocol=TestProtocol(test_size=40), batch_size=3, progress=False)
"""


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample")


def _key(r):
    return (r["method"], r["seed"], r["query"])


def _run(sample, out, **kw):
    return evaluate(
        sample,
        make_lm(),
        ["oracle", "random"],
        two_methods(sample),
        out,
        mode="paper",
        protocol=TestProtocol(test_size=40),
        batch_size=3,
        progress=False,
        **kw,
    )


def _start(tmp_path, out, delay=0.1):
    """The scripted run in a child process, ``delay`` seconds per model call: 80 calls, so 0.1 s leaves the
    parent ~7 s after the 30th record to interrupt it (0.03 s left ~2 s, which a loaded machine could
    miss)."""
    script = tmp_path / f"run_{out.name}.py"
    script.write_text(
        _SCRIPT.format(src=str(SRC), tests=str(Path(__file__).parent), delay=delay, out=str(out))
    )
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_records(proc, records, n=30, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if records.exists() and records.read_text().count("\n") >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before it could be interrupted: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.02)
    pytest.fail("the run wrote no records in time")


def _assert_complete_and_identical(sample, out, tmp_path):
    recs = read_records(out / "records.jsonl")
    assert len(recs) == TOTAL == len({_key(r) for r in recs})  # 0 lost, 0 duplicated
    assert len((out / "records.jsonl").read_text().splitlines()) >= TOTAL
    ref = _run(sample, tmp_path / "reference")
    by_key = {_key(r): r for r in read_records(ref.records_path)}
    assert all(by_key[_key(r)] == r for r in recs)


def test_ctrl_c_records_interrupted_and_the_resume_completes(sample, tmp_path):
    out = tmp_path / "interrupted"
    proc = _start(tmp_path, out)
    try:
        _wait_for_records(proc, out / "records.jsonl")
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    manifest = json.loads((out / "manifest.json").read_text())
    if (
        manifest["status"] == "complete"
    ):  # the signal reached the child only after its last record: still whole?
        _assert_complete_and_identical(sample, out, tmp_path)
        pytest.xfail(
            "the scripted run finished before Ctrl-C reached it (seen in the full suite on a loaded machine)"
        )
    assert manifest["status"] == "interrupted" and "stopped_at" in manifest
    assert read_holder(out) == {}  # the lock file is emptied on the way out
    n_before = len(read_records(out / "records.jsonl"))
    res = _run(sample, out)
    assert res.n_new_records == TOTAL - n_before
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    _assert_complete_and_identical(sample, out, tmp_path)


def test_second_run_is_refused_then_takes_over_after_kill_9(sample, tmp_path):
    out = tmp_path / "shared"
    proc = _start(tmp_path, out)
    try:
        _wait_for_records(proc, out / "records.jsonl")
        with pytest.raises(FolderLockedError, match=f"in use by process {proc.pid}"):
            _run(sample, out)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert read_holder(out)["pid"] == proc.pid  # the dead holder's record is still there ...
    with folder_lock(out) as info:  # ... and the lock itself is free: taken over as stale
        assert info["stale"]["pid"] == proc.pid
    _run(sample, out)
    _assert_complete_and_identical(sample, out, tmp_path)


def test_wait_queues_behind_the_holder(tmp_path):
    out = tmp_path / "queued"
    code = (
        f"import sys, time; sys.path.insert(0, {str(SRC)!r}); from ucs.utils.lock import folder_lock\n"
        f"with folder_lock({str(out)!r}):\n    print('held', flush=True); time.sleep(1.5)\n"
        f"    open({str(tmp_path / 'finished')!r}, 'w').close()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"held"
        with pytest.raises(FolderLockedError):
            with folder_lock(out):
                pass
        with folder_lock(out, wait=True, poll=0.05) as info:
            assert info["pid"] == os.getpid() and info["stale"] is None
            assert (tmp_path / "finished").exists()  # we got it only once the holder had finished
    finally:
        proc.wait(timeout=30)


def test_damaged_record_lines_are_skipped_and_evaluated_again(sample, tmp_path):
    out = tmp_path / "records"
    _run(sample, out)
    path = out / "records.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[5])
    rec["correct"] = not rec["correct"]  # an edited value, its checksum left as it was
    lines[5] = json.dumps(rec, sort_keys=True) + "\n"
    lines[9] = lines[9][:40] + "\n"  # truncated in the middle of the file
    lines[12] = lines[12].replace('"seed": 4', '"seed": 5')  # an edited key field
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.warns(DamagedFileWarning, match=r"records.jsonl: skipped 3 damaged record"):
        res = _run(sample, out)
    assert res.n_new_records == 3
    with pytest.warns(DamagedFileWarning, match=r"skipped 3 damaged record"):  # the file is never rewritten
        _assert_complete_and_identical(sample, out, tmp_path)


def test_a_damaged_selection_is_moved_aside_and_recomputed(sample, tmp_path):
    out = tmp_path / "sel"
    first = _run(sample, out)
    files = sorted((out / "selections").glob("*.npy"))
    assert files and all((f.parent / (f.name + ".sha256")).is_file() for f in files)
    raw = bytearray(files[0].read_bytes())
    raw[-3] ^= 0x01  # flip a bit of the last index
    files[0].write_bytes(bytes(raw))
    files[1].write_bytes(files[1].read_bytes()[:100])  # truncated
    (out / "records.jsonl").unlink()
    (out / "manifest.json").unlink()
    with pytest.warns(DamagedFileWarning, match="failed verification"):
        again = _run(sample, out)
    assert len(list((out / "selections").glob("*.damaged-*"))) >= 2
    assert again.summary["methods"] == first.summary["methods"]


def test_damaged_or_edited_answer_store_lines_are_not_reused(sample, tmp_path):
    store = tmp_path / "answers"
    kw = dict(mode="greedy", protocol=TestProtocol(test_size=10), progress=False, answer_store=store)
    sel = two_methods(sample)
    first = evaluate(sample, make_lm(), ["oracle", "random"], sel, tmp_path / "a", **kw)
    (path,) = list(store.rglob("*.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    entries = [json.loads(x) for x in lines]
    n_labels = len(sample.label_names)
    edited = dict(entries[0], raw_output="something else")  # edited without its checksum
    lines[0] = json.dumps(edited, sort_keys=True) + "\n"
    bad_id = {k: v for k, v in entries[1].items() if k != "_check"}
    lines[1] = signed_line(dict(bad_id, parsed_id=n_labels + 7))  # checksum fine, label id out of range
    legacy = {k: v for k, v in entries[2].items() if k != "_check"}
    lines[2] = json.dumps(legacy) + "\n"  # written before checksums existed
    lines[3] = lines[3][: len(lines[3]) // 2] + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    hashes = {e["prompt_sha256"] for e in entries[:4]}
    with pytest.warns(DamagedFileWarning, match=r"skipped 4 damaged line"):
        second = evaluate(sample, make_lm(), ["oracle", "random"], two_methods(sample), tmp_path / "b", **kw)
    recs = read_records(second.records_path)
    redone = [r for r in recs if r["prompt_sha256"] in hashes]
    assert redone and not any(r.get("reused") for r in redone)  # asked the model again
    assert second.summary["methods"] == first.summary["methods"]
    assert path.read_text(encoding="utf-8").startswith("".join(lines))  # appended to, never rewritten


def test_a_damaged_manifest_names_the_file_and_the_way_out(sample, tmp_path):
    out = tmp_path / "m"
    _run(sample, out)
    text = (out / "manifest.json").read_text()
    (out / "manifest.json").write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"manifest.json is damaged.*--fresh"):
        _run(sample, out)


def test_another_configuration_is_refused_naming_the_fields(sample, tmp_path):
    out = tmp_path / "cfg"
    _run(sample, out, config={"pipeline": {"retrieval_embedder": "backbone", "lam": 0.1}})
    with pytest.raises(
        ValueError, match=r"config\.pipeline\.retrieval_embedder: \"backbone\" → \"all-minilm-l6-v2\""
    ):
        _run(sample, out, config={"pipeline": {"retrieval_embedder": "all-minilm-l6-v2", "lam": 0.1}})


def test_selection_checksums_cover_what_the_runner_wrote(sample, tmp_path):
    out = tmp_path / "ok"
    _run(sample, out)
    for f in (out / "selections").glob("*.npy"):
        assert np.load(f).dtype == np.int64


def test_selections_of_older_runs_are_range_checked_and_adopted(sample, tmp_path):
    out = tmp_path / "legacy"
    first = _run(sample, out)
    sides = sorted((out / "selections").glob("*.sha256"))
    for s in sides:
        s.unlink()  # as written before checksums existed
    bad = sorted((out / "selections").glob("*.npy"))[0]
    np.save(bad, np.full((1, 4), -9223372036854775808, dtype=np.int64))  # and one with impossible indices
    (out / "records.jsonl").unlink()
    (out / "manifest.json").unlink()
    with pytest.warns(DamagedFileWarning, match="values below 0"):
        again = _run(sample, out)
    assert again.summary["methods"] == first.summary["methods"]
    assert all(s.is_file() for s in sides)  # adopted (or recomputed) files carry a checksum again


class _OneByOneLM(type(make_lm())):
    """make_lm's double, declared to generate one prompt at a time, that stops (Ctrl-C) on call
    ``stop_at``."""

    generates_one_at_a_time = True

    def __init__(self, stop_at=None, **kw):
        base = make_lm()
        super().__init__(answers=base.answers, context_length=base.context_length, **kw)
        self.stop_at, self.sizes = stop_at, []

    def generate(self, prompts, *args, **kwargs):
        self.sizes.append(len(prompts))
        if self.stop_at is not None and len(self.sizes) >= self.stop_at:
            raise KeyboardInterrupt
        return super().generate(prompts, *args, **kwargs)


def _greedy(sample, out, lm, **kw):
    return evaluate(
        sample,
        lm,
        ["oracle", "random"],
        two_methods(sample),
        out,
        mode="greedy",
        protocol=TestProtocol(test_size=20),
        batch_size=8,
        progress=False,
        **kw,
    )


def test_slow_one_by_one_answers_are_recorded_before_their_batch_ends(sample, tmp_path, monkeypatch):
    import ucs.evaluation.runner as runner

    monkeypatch.setattr(runner, "RECORD_EVERY_S", 0.0)  # every prompt "slow": parts stay one prompt long
    out = tmp_path / "stopped"
    lm = _OneByOneLM(stop_at=5)
    with pytest.raises(KeyboardInterrupt):
        _greedy(sample, out, lm)
    assert lm.sizes == [1] * 5
    assert (
        len(read_records(out / "records.jsonl")) == 4
    )  # the 4 answered prompts of the unfinished batch of 8
    res = _greedy(sample, out, _OneByOneLM())
    assert res.n_new_records == 2 * 3 * 20 - 4
    ref = _greedy(sample, tmp_path / "reference", make_lm())  # whole batches, never interrupted
    assert sorted(read_records(out / "records.jsonl"), key=_key) == sorted(
        read_records(ref.records_path), key=_key
    )


def test_fast_answers_grow_to_whole_batches_and_served_models_keep_them(sample, tmp_path):
    fast = _OneByOneLM()
    _greedy(sample, tmp_path / "fast", fast)
    assert (
        fast.sizes[:4] == [1, 2, 4, 1] and max(fast.sizes) == 8
    )  # doubling, capped by the batch, then whole
    served = make_lm()  # no generates_one_at_a_time: a batch is one call, as a server answers it concurrently
    calls = []
    served.generate = lambda prompts, *a, _g=served.generate, **k: (
        calls.append(len(prompts)) or _g(prompts, *a, **k)
    )
    _greedy(sample, tmp_path / "served", served)
    assert calls[:3] == [8, 8, 4]

import json
import os
import stat

import numpy as np
import pytest

from ucs.utils.io import (
    atomic_save_npy,
    atomic_write_json,
    dumps_json,
    atomic_write_text,
    hash_array,
    hash_texts,
    load_npy,
)


def test_atomic_npy_roundtrip(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = atomic_save_npy(tmp_path / "sub" / "a.npy", a)
    np.testing.assert_array_equal(load_npy(p), a)
    assert [x.name for x in p.parent.iterdir()] == ["a.npy"]  # no temp file left behind


def test_atomic_json_sorted(tmp_path):
    p = atomic_write_json(tmp_path / "m.json", {"b": np.int64(2), "a": np.arange(2)})
    assert json.loads(p.read_text()) == {"a": [0, 1], "b": 2}


@pytest.mark.parametrize(
    "obj",
    [
        {"b": np.int64(2), "a": np.arange(3.0), "n": [], "e": {}, "s": ["x", None, True, 1.5e-9]},
        {
            "cells": [{"per_query": {"q": list(range(5)), "acc": [0.0, 1.0]}, "m": [[1, 2], {"k": [3]}]}],
            "z": "é\n",
        },
        [1, [2, [3]], {"a": float("inf")}],
    ],
)
def test_dumps_json_is_the_same_value_as_json_dumps(obj):
    text = dumps_json(obj)
    expected = json.dumps(
        obj, indent=2, sort_keys=True, default=lambda v: v.tolist() if hasattr(v, "tolist") else v
    )
    assert json.loads(text) == json.loads(expected)
    assert text.endswith("\n") and len(text) <= len(expected) + 1
    assert dumps_json(json.loads(text)) == text  # stable under a read-back


def test_inline_scalar_lists_put_vectors_on_one_line(tmp_path):
    p = atomic_write_json(tmp_path / "m.json", {"q": list(range(100))}, inline_scalar_lists=True)
    lines = p.read_text().splitlines()
    assert lines == ["{", '  "q": [' + ", ".join(map(str, range(100))) + "]", "}"]


def test_object_arrays_are_refused(tmp_path):
    with pytest.raises(ValueError):
        atomic_save_npy(tmp_path / "o.npy", np.array([{"x": 1}], dtype=object))


def test_hashes_discriminate():
    assert hash_texts(["ab", "c"]) != hash_texts(["a", "bc"])
    a = np.zeros(4)
    assert hash_array(a) != hash_array(a.astype(np.float32))
    assert hash_array(a) != hash_array(a.reshape(2, 2))


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX permissions only")
def test_atomic_writes_get_umask_permissions_not_mkstemp_0600(tmp_path):
    path = atomic_write_text(tmp_path / "result.md", "x")
    probe = tmp_path / "plain.md"
    probe.write_text("x")
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(probe.stat().st_mode)

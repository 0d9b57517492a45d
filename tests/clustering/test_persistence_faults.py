"""A saved clusterer whose files were damaged or edited is refused on load, naming the file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ucs.clustering import LatentClusterer
from ucs.clustering.persistence import DamagedClustererError, _meta_check
from ucs.utils.io import atomic_save_npz, hash_array

from ._data import planted, small_params


@pytest.fixture()
def saved(tmp_path):
    E, _ = planted(n=200, seed=3)
    c = LatentClusterer(**small_params()).fit(E)
    c.save(tmp_path / "c")
    return tmp_path / "c", c


def _flip(path, offset):
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x10
    path.write_bytes(bytes(raw))


def test_meta_records_hashes_and_size(saved):
    d, c = saved
    meta = json.loads((d / "meta.json").read_text())
    assert meta["format"] == "ucs.clustering/2" and meta["n_samples"] == c.labels_.size
    assert meta["sha256"]["labels_"] == hash_array(c.labels_)
    assert meta["check"] == _meta_check(meta)


@pytest.mark.parametrize(
    "damage",
    [
        "flip-state",
        "truncate-state",
        "flip-labels",
        "edit-eps",
        "edit-params",
        "truncate-meta",
        "drop-hashes",
    ],
)
def test_damage_is_refused_naming_the_file(saved, damage):
    d, _ = saved
    if damage == "flip-state":
        _flip(d / "state.npz", (d / "state.npz").stat().st_size // 2)
    elif damage == "truncate-state":
        (d / "state.npz").write_bytes((d / "state.npz").read_bytes()[:200])
    elif damage == "flip-labels":
        labels = np.load(d / "labels.npy")
        labels[0] += 1
        np.save(d / "labels.npy", labels)
    else:
        meta = json.loads((d / "meta.json").read_text())
        if damage == "edit-eps":
            meta["fitted"]["eps_"] = meta["fitted"]["eps_"] * 2
        elif damage == "edit-params":
            meta["params"]["dbscan_q"] = 0.5
        elif damage == "drop-hashes":
            meta.pop("sha256")
        text = json.dumps(meta)
        (d / "meta.json").write_text(text[: len(text) // 2] if damage == "truncate-meta" else text)
    with pytest.raises(DamagedClustererError, match=str(d)):
        LatentClusterer.load(d)


def test_labels_of_the_wrong_length_are_refused_even_with_matching_hashes(saved):
    d, _ = saved
    with np.load(d / "state.npz") as z:
        st = {k: z[k] for k in z.files}
    st["labels_"] = st["labels_"][:-1]
    atomic_save_npz(d / "state.npz", **st)
    meta = json.loads((d / "meta.json").read_text())
    meta["sha256"] = {k: hash_array(v) for k, v in st.items()}
    meta["check"] = _meta_check(meta)
    (d / "meta.json").write_text(json.dumps(meta))
    np.save(d / "labels.npy", st["labels_"])
    with pytest.raises(DamagedClustererError, match="labels_ has shape"):
        LatentClusterer.load(d)


def test_format_1_directories_still_load_with_shape_checks(saved):
    d, c = saved
    meta = json.loads((d / "meta.json").read_text())
    for k in ("sha256", "check", "n_samples"):
        meta.pop(k)
    meta["format"] = "ucs.clustering/1"
    (d / "meta.json").write_text(json.dumps(meta))
    np.testing.assert_array_equal(LatentClusterer.load(d).labels_, c.labels_)

"""The pipeline's cluster-label cache: damaged or edited files are moved aside and recomputed, never used."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.pipeline import Pipeline, PipelineConfig
from ucs.utils.integrity import DamagedFileWarning

#: On the paper preset (its clustering in the backbone's space), with ridge codes and small sizes.
SMALL = {
    "dataset": "sample",
    "backbone": "dummy",
    "mode": "likelihood",
    "test_size": 6,
    "n_runs": 1,
    "budget": 4,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector": {"params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")}},
}


def _pipe(tmp_path):
    return Pipeline(
        PipelineConfig.resolve("paper", overrides=SMALL), cache_dir=tmp_path / "cache", progress=False
    )


def _damage(path, how):
    raw = bytearray(path.read_bytes())
    if how == "flip":
        raw[-5] ^= 0x01
    elif how == "truncate":
        raw = raw[: len(raw) // 2]
    path.write_bytes(bytes(raw))
    if how == "edit":  # a valid array with other values: only its checksum tells
        arr = np.load(path)
        arr[0] = arr[1] if arr[0] != arr[1] else arr[0] + 1
        np.save(path, arr)
    if how == "no-checksum":
        (path.parent / (path.name + ".sha256")).unlink()


@pytest.mark.parametrize("how", ["flip", "truncate", "edit", "no-checksum"])
def test_damaged_cluster_labels_are_moved_aside_and_recomputed(tmp_path, how):
    ids = _pipe(tmp_path).cluster_ids(42)
    (path,) = list((tmp_path / "cache" / "clusters").rglob("labels_q*.npy"))
    assert (path.parent / (path.name + ".sha256")).is_file()
    _damage(path, how)
    with pytest.warns(DamagedFileWarning, match=str(path)):
        again = _pipe(tmp_path).cluster_ids(42)
    np.testing.assert_array_equal(again, ids)
    assert len(list(path.parent.glob(path.name + ".damaged-*"))) == 1
    np.testing.assert_array_equal(_pipe(tmp_path).cluster_ids(42), ids)  # the recomputed file verifies


def test_labels_out_of_range_are_refused_even_with_a_matching_checksum(tmp_path):
    from ucs.utils.integrity import save_checked_npy

    ids = _pipe(tmp_path).cluster_ids(42)
    (path,) = list((tmp_path / "cache" / "clusters").rglob("labels_q*.npy"))
    save_checked_npy(path, np.full_like(ids, -9223372036854775808))
    with pytest.warns(DamagedFileWarning, match="values below 0"):
        np.testing.assert_array_equal(_pipe(tmp_path).cluster_ids(42), ids)

"""The default k-means (Lloyd on the unit rows in float32 GEMMs, :mod:`ucs.clustering.lloyd`): determinism,
quality, edges."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score

from ucs.clustering import LatentClusterer
from ucs.clustering.lloyd import assign, kmeanspp, lloyd_kmeans, update_centers
from ucs.clustering.neighbors import unit_rows
from ucs.clustering.partition import KMEANS_IMPL, fit_centers, nearest_center, spherical_kmeans
from ucs.clustering.synthetic import make_planted_embeddings

SRC = str(Path(__file__).resolve().parents[2] / "src")

_CHILD = """
import hashlib, sys
import numpy as np
from ucs.clustering import LatentClusterer
from ucs.clustering.synthetic import make_planted_embeddings
E, _ = make_planted_embeddings(n_samples=6000, n_features=32, n_clusters=60, random_state=3)
lab = LatentClusterer(method="kmeans", random_state=7).fit(E).labels_
print(hashlib.sha256(np.ascontiguousarray(lab, dtype=np.int64).tobytes()).hexdigest())
"""


def _child_digest(threads: str) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OPENBLAS_NUM_THREADS": threads,
        "OMP_NUM_THREADS": threads,
    }
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_same_seed_gives_bit_identical_labels_in_separate_processes():
    E, _ = make_planted_embeddings(n_samples=6000, n_features=32, n_clusters=60, random_state=3)
    here = LatentClusterer(method="kmeans", random_state=7).fit(E).labels_
    mine = hashlib.sha256(np.ascontiguousarray(here, dtype=np.int64).tobytes()).hexdigest()
    # two fresh interpreters, one with one BLAS thread and one with two: the labels may not depend on either
    assert _child_digest("1") == _child_digest("2") == mine


def test_the_default_kmeans_is_the_fast_one_and_never_calls_scikit_learn(monkeypatch):
    import sklearn.cluster

    def refuse(*a, **k):
        raise AssertionError("the default k-means must not use scikit-learn's KMeans")

    monkeypatch.setattr(sklearn.cluster, "KMeans", refuse)
    assert KMEANS_IMPL == "lloyd" and LatentClusterer().kmeans_impl == "lloyd"
    E, _ = make_planted_embeddings(n_samples=800, n_features=16, n_clusters=8, random_state=0)
    c = LatentClusterer(method="kmeans", random_state=0).fit(E)
    assert c.n_clusters_ > 1 and c.get_params()["kmeans_impl"] == "lloyd"


@pytest.mark.parametrize("n, clusters", [(3000, 30), (8000, 200)])
def test_ami_on_planted_clusters_is_not_below_scikit_learns(n, clusters):
    E, y = make_planted_embeddings(n_samples=n, n_features=64, n_clusters=clusters, random_state=1)
    ami = {
        impl: np.mean(
            [
                adjusted_mutual_info_score(
                    y, LatentClusterer(method="kmeans", random_state=s, kmeans_impl=impl).fit(E).labels_
                )
                for s in range(6)
            ]
        )
        for impl in ("lloyd", "sklearn")
    }
    # a seed moves either implementation's AMI by ~0.005 (sd): six seeds each, and a drop of 0.005 is a
    # failure (seeding on a sample instead of every row lost 0.01 on such pools)
    assert ami["lloyd"] >= ami["sklearn"] - 0.005, ami


def test_the_sklearn_reference_stays_reachable_and_an_unknown_impl_is_refused_by_name():
    E, _ = make_planted_embeddings(n_samples=400, n_features=16, n_clusters=5, random_state=0)
    ref = LatentClusterer(method="kmeans", n_clusters=5, random_state=0, kmeans_impl="sklearn").fit(E)
    assert ref.n_clusters_ == 5
    with pytest.raises(ValueError, match="kmeans_impl"):
        LatentClusterer(method="kmeans", kmeans_impl="faiss").fit(E)


def test_k_equal_to_n_gives_every_distinct_row_its_own_cluster():
    U = unit_rows(np.random.default_rng(0).standard_normal((12, 5)))
    lab, centers = spherical_kmeans(U, 12, random_state=0)
    assert sorted(lab) == list(range(12)) and centers.shape == (12, 5)
    with pytest.raises(ValueError, match="n_clusters"):
        LatentClusterer(method="kmeans", n_clusters=13).fit(U)


def test_duplicate_rows_share_a_cluster_even_when_k_exceeds_the_distinct_rows():
    base = unit_rows(np.random.default_rng(1).standard_normal((3, 8)))
    U = np.repeat(base, [5, 4, 3], axis=0)
    lab, centers = spherical_kmeans(U, 6, random_state=0)  # 6 centres, 3 distinct rows
    assert len(set(lab)) == 3
    for j in range(3):
        assert len(set(lab[U.tolist().index(base[j].tolist()) :][: [5, 4, 3][j]])) == 1
    assert centers.shape[0] == 3  # a centre nobody is nearest to leaves no id
    same = unit_rows(np.ones((10, 4)))
    assert set(spherical_kmeans(same, 3, random_state=0)[0]) == {0}


def test_float64_input_gives_the_float32_labels():
    E, _ = make_planted_embeddings(n_samples=1500, n_features=24, n_clusters=12, random_state=2)
    a = LatentClusterer(method="kmeans", random_state=4).fit(E.astype(np.float32)).labels_
    b = LatentClusterer(method="kmeans", random_state=4).fit(E.astype(np.float64)).labels_
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n, k", [(2, 1), (2, 2), (3, 2), (5, 5)])
def test_tiny_inputs(n, k):
    U = unit_rows(np.random.default_rng(n).standard_normal((n, 3)))
    lab, centers = spherical_kmeans(U, k, random_state=0)
    assert lab.shape == (n,) and lab[0] == 0 and lab.max() + 1 == centers.shape[0] <= k
    assert np.allclose(np.linalg.norm(centers, axis=1), 1.0, atol=1e-5)
    assert LatentClusterer(method="kmeans", random_state=0).fit(U).labels_.shape == (n,)


def test_assignment_does_not_depend_on_threads_blocks_or_shards():
    rng = np.random.default_rng(5)
    X = unit_rows(rng.standard_normal((10_000, 32)))
    C = unit_rows(rng.standard_normal((50, 32)))
    lab1, best1 = assign(X, C, workers=1)
    lab2, best2 = assign(X, C, workers=2)
    assert np.array_equal(lab1, lab2) and np.array_equal(best1, best2)
    shards = np.concatenate([nearest_center(X[s : s + 3000], C) for s in range(0, 10_000, 3000)])
    assert np.array_equal(shards, lab1)
    assert np.array_equal(lab1, np.argmax(X @ C.T, axis=1))


def test_an_empty_cluster_takes_the_worst_fitting_row():
    X = unit_rows(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]))
    labels = np.array([0, 0, 0])
    best = np.array([1.0, 0.99, 0.1], dtype=np.float32)
    C = update_centers(X, labels, best, 2)
    assert np.allclose(C[1], X[2]) and np.allclose(np.linalg.norm(C, axis=1), 1.0)


def test_kmeanspp_picks_distinct_rows_and_the_fit_is_consistent():
    X = unit_rows(np.random.default_rng(0).standard_normal((300, 6)))
    C = kmeanspp(X, 20, np.random.default_rng(0), n_trials=4)
    assert len({tuple(r) for r in C.tolist()}) == 20
    centers, labels, obj = lloyd_kmeans(X, 20, random_state=0)
    assert np.array_equal(labels, assign(X, centers)[0]) and 0.0 < obj <= 1.0
    c2, l2 = fit_centers(X, 20, random_state=0, n_init=1)
    assert np.array_equal(c2, centers) and np.array_equal(l2, labels)


def test_small_pools_are_fitted_with_ten_full_starts_and_large_samples_with_one_sampled_start():
    from ucs.clustering.partition import LLOYD_MULTI_START_WORK, lloyd_settings

    small, large = lloyd_settings(10_003, 101), lloyd_settings(100_000, 1000)
    assert small == {"n_init": 10, "max_iter": 100, "tol": 0.0, "init_rows": 10_003}
    assert large == {"n_init": 1, "max_iter": 15, "tol": 1e-3, "init_rows": None}
    assert lloyd_settings(LLOYD_MULTI_START_WORK, 1)["n_init"] == 10
    assert lloyd_settings(LLOYD_MULTI_START_WORK + 1, 1)["n_init"] == 1


def test_the_iterations_are_lloyds_nearest_mean_in_l2_and_the_centres_come_back_normalised():
    rng = np.random.default_rng(5)
    X = unit_rows(rng.standard_normal((2000, 12)))
    C = rng.standard_normal((9, 12)).astype(np.float32) * np.float32(0.4)  # means: norms below 1
    lab, score = assign(X, C, offset=0.5 * np.einsum("ij,ij->i", C, C))
    d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    assert np.array_equal(lab, np.argmin(d2, axis=1))
    assert np.allclose(score, 0.5 - 0.5 * d2[np.arange(2000), lab], atol=1e-5)  # <x,c> - |c|^2/2 on unit rows
    M = update_centers(X, lab, score, 9, normalize=False)
    assert np.allclose(M, np.stack([X[lab == j].mean(0) for j in range(9)]), atol=1e-6)
    centers, labels, obj = lloyd_kmeans(X, 9, random_state=0, max_iter=100, tol=0.0)
    assert np.allclose(np.linalg.norm(centers, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(labels, np.argmax(X @ centers.T, axis=1))
    assert obj == pytest.approx(float(np.mean(np.max(X @ centers.T, axis=1))), abs=1e-6)

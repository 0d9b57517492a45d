"""The clusterer battery: scikit-learn's ``check_estimator`` where it applies, for :class:`LatentClusterer`.

:class:`~ucs.clustering.LatentClusterer` is a scikit-learn ``ClusterMixin`` estimator, so scikit-learn's own
battery (parameters, cloning, pickling, fit idempotence, sample-order invariance, ``fit_predict`` ≡
``labels_``, n_features checks …) runs on it. A few checks demand scikit-learn's exact error wording or input
types the project refuses on purpose; :data:`EXPECTED_FAILURES` names each with the reason, and every other
check must pass. Cost: the battery fits each configuration a few dozen times on ≤ 300 × 10 data (seconds).
"""

from __future__ import annotations

from typing import Any, Dict, List

__all__ = ["CLUSTERER_CHECKS", "EXPECTED_FAILURES", "check_clusterer"]

_OWN_WORDING = "refused with the project's own message, which names the parameter and the fix"
#: Checks the clusterer is not meant to pass, with why (scikit-learn's ``expected_failed_checks``).
EXPECTED_FAILURES: Dict[str, str] = {
    "check_complex_data": _OWN_WORDING,
    "check_dtype_object": "object arrays are refused: embeddings are numeric (" + _OWN_WORDING + ")",
    "check_estimators_empty_data_messages": _OWN_WORDING,
    "check_fit2d_1sample": _OWN_WORDING,
    "check_estimator_sparse_tag": "embeddings are dense; sparse input is refused",
    "check_estimator_sparse_array": "embeddings are dense; sparse input is refused (" + _OWN_WORDING + ")",
    "check_estimator_sparse_matrix": "embeddings are dense; sparse input is refused (" + _OWN_WORDING + ")",
}
#: The paper's DBSCAN sets eps at the 1 % quantile of k-NN distances: it is not meant to recover the
#: well-separated blobs of ``check_clustering`` (most points become singletons).
_DBSCAN_FAILURES = {"check_clustering": "the paper's eps (1 % quantile of k-NN distances) splits the blobs"}

#: Small configurations of every method family the battery can fit on its tiny data sets.
CLUSTERER_CHECKS: Dict[str, Dict[str, Any]] = {
    "kmeans": {"method": "kmeans", "n_clusters": 3},
    "dict_kmeans": {"method": "dict_kmeans", "pca_dim": 2, "n_atoms": 3, "n_clusters": 3},
    "dict_dbscan": {"method": "dict_dbscan", "pca_dim": 2, "n_atoms": 3, "dbscan_k": 3},
}


def check_clusterer(name: str) -> List[str]:
    """Run scikit-learn's battery on the :data:`CLUSTERER_CHECKS` configuration ``name``.

    Returns the names of the checks that passed; raises ``AssertionError`` listing any check that failed
    and is not an expected failure (or an expected failure that now passes, so the list stays honest).
    """
    from sklearn.utils.estimator_checks import check_estimator

    from ucs.clustering import LatentClusterer

    if name not in CLUSTERER_CHECKS:
        raise ValueError(f"unknown clusterer configuration {name!r}; valid: {sorted(CLUSTERER_CHECKS)}")
    expected = {**EXPECTED_FAILURES, **(_DBSCAN_FAILURES if name == "dict_dbscan" else {})}
    est = LatentClusterer(random_state=0, **CLUSTERER_CHECKS[name])
    results = check_estimator(est, on_fail=None, expected_failed_checks=expected)
    failed = sorted({r["check_name"] for r in results if r["status"] == "failed"})
    assert not failed, f"LatentClusterer({name}) fails scikit-learn checks: {failed}"
    unexpectedly = sorted(
        {r["check_name"] for r in results if r["check_name"] in expected and r["status"] == "passed"}
    )
    assert not unexpectedly, f"expected failures now pass, remove them from EXPECTED_FAILURES: {unexpectedly}"
    return sorted({r["check_name"] for r in results if r["status"] == "passed"})

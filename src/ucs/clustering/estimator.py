"""``LatentClusterer``: embeddings → discrete latent cluster ids (SPEC §2).

Pipeline of the default method ``dict_dbscan``::

    E ─(standardise?)─(PCA to pca_dim)─► Ẽ ─(dictionary, n_atoms)─► codes r ─(ℓ2)─► r̄
      ─(eps = q-quantile of k-NN cosine distances)─► DBSCAN(eps, min_samples) ─► ids

Noise points become fresh singleton ids after the largest id, in index order, so every pool
item gets a cluster. Variants: ``dbscan`` (the same eps/DBSCAN on the raw embeddings) and
``dict_argmax`` (the atom with the largest ``|r_ij|``).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import NotFittedError

from .. import defaults as D
from ..utils.io import hash_array
from ._validation import check_choice, check_embeddings, check_float, check_int, check_quantile
from .dictionary import encode, learn_dictionary
from .graph import LinkageGraph, canonical_labels, remap_noise
from .neighbors import eps_from_knn, knn, unit_rows
from .partition import KMEANS_IMPL, KMEANS_SETTINGS, default_n_clusters, hdbscan_labels, spherical_kmeans
from .persistence import load_clusterer, persistent, save_clusterer
from .preprocessing import fit_pca, fit_standardizer

__all__ = ["LatentClusterer", "remap_noise"]

METHODS = ("dict_dbscan", "dbscan", "dict_argmax", "dict_kmeans", "kmeans", "dict_hdbscan", "auto")
#: Methods that run on the raw (optionally standardised) rows: no PCA, no dictionary.
RAW_METHODS = ("dbscan", "kmeans")
#: Methods whose partition is an eps cut of the k-NN graph (``eps_``, ``recut``).
EPS_METHODS = ("dict_dbscan", "dbscan")
CODINGS = ("ridge", "omp")
BACKENDS = ("fast", "sklearn")
KNN_ALGORITHMS = ("auto", "exact", "hnsw")


@persistent
class LatentClusterer(ClusterMixin, BaseEstimator):
    """Discretise embeddings into latent clusters (``dict_dbscan`` and its variants).

    Parameters
    ----------
    method : {"dict_dbscan", "dbscan", "dict_argmax", "dict_kmeans", "kmeans", "dict_hdbscan", "auto"}, \
            default="dict_dbscan"
        ``dict_dbscan`` is the paper's. ``dbscan`` and ``kmeans`` skip PCA and the dictionary and cluster
        the ℓ2-normalised rows; ``dict_argmax`` assigns each item to the atom with the largest absolute
        code (at most ``n_atoms`` clusters). ``dict_kmeans`` / ``kmeans``: spherical k-means with
        ``n_clusters`` clusters; ``dict_hdbscan``: scikit-learn's HDBSCAN on the unit codes (noise →
        singletons). ``auto`` chooses among the dictionary methods by the label-free rule of
        :mod:`ucs.clustering.auto` and records its choice in ``auto_choice_``.
    pca_dim : int or None, default=128
        PCA target dimension; skipped when ``None`` or not smaller than the number of features.
    n_atoms : int, default=64
        Dictionary size ``K``.
    coding : {"ridge", "omp"}, default="ridge"
        ``ridge``: closed-form ridge codes (what the paper's method section describes).
        ``omp``: orthogonal matching pursuit with ``omp_n_nonzero`` atoms (what the paper's
        hyper-parameter table and the authors' scripts ran).
    ridge_alpha : float, default=10.0
    omp_n_nonzero : int, default=4
    dict_alpha : float, default=1.0
        Lasso penalty of the codes while *learning* the dictionary (scikit-learn's ``alpha``).
    dict_batch_size : int, default=512
    dict_max_iter : int, default=50
        Maximum epochs of the mini-batch dictionary fit (early stopping as in scikit-learn).
    dbscan_k : int, default=20
        ``k`` of the k-NN distances whose quantile is ``eps``.
    dbscan_q : float in (0, 1), default=0.01
        Quantile ``q``; re-cut for other values with :meth:`recut`.
    min_samples : int, default=1
        DBSCAN ``min_samples`` (counting the point itself).
    standardize : bool, default=False
        Standardise features before PCA.
    backend : {"fast", "sklearn"}, default="fast"
        ``fast``: numpy dictionary learner, blocked/faiss kNN, spanning-forest DBSCAN.
        ``sklearn``: :class:`~sklearn.decomposition.PCA`, ``MiniBatchDictionaryLearning``,
        ``NearestNeighbors`` and ``DBSCAN`` with cosine metric (reference path).
    knn_algorithm : {"auto", "exact", "hnsw"}, default="auto"
        Neighbour search of the fast backend; ``auto`` is exact up to ``exact_knn_max`` rows,
        faiss HNSW above (exact when faiss is absent).
    exact_knn_max : int, default=200000
    graph_k : int or None, default=None
        Neighbours kept per row in the linkage graph (``None``: ``max(2 dbscan_k, 32)``); more
        neighbours leave fewer dense rows to complete when re-cutting at large ``q``.
    n_clusters : int or None, default=None
        ``k`` of the k-means methods; ``None`` is ``⌈√n⌉``
        (:func:`ucs.clustering.partition.default_n_clusters`).
    hdbscan_min_cluster_size : int, default=5
        HDBSCAN's ``min_cluster_size``.
    random_state : int or None, default=None
        Seeds PCA, the dictionary fit and k-means; the same seed gives bit-identical labels.
    kmeans_impl : {"lloyd", "sklearn"}, default="lloyd"
        k-means of the k-means methods. ``lloyd``: Lloyd on float32 matrix products, greedy
        k-means++ (10 starts on small pools, 1 on large ones), at most 15 iterations
        (:mod:`ucs.clustering.lloyd`; 1,000,000 × 128 in seconds). ``sklearn``: scikit-learn's ``KMeans``
        (best of 3 starts), the implementation before 2026-11, whose labels differ; kept as the reference.
        Centres are fitted on a seeded sample of 100,000 rows above that.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster id of every item (noise already remapped to singletons), ``0..n_clusters_-1``.
    n_clusters_ : int
    n_noise_ : int
        Points DBSCAN marked as noise before the remap.
    scaler_ : Standardizer or None
    pca_ : PCAProjection or None
    dictionary_ : ndarray of shape (n_atoms, pca_dim) or None
    codes_ : ndarray of shape (n_samples, n_atoms) or None
        Raw codes (before ℓ2 normalisation).
    eps_ : float or None
        The DBSCAN radius in cosine distance (``None`` for methods without an eps cut).
    cluster_centers_ : ndarray of shape (n_clusters_, n_repr) or None
        Unit-normalised k-means centres in the clustered representation (k-means methods only).
    chosen_method_ : str
        The method that produced ``labels_`` (``auto`` resolves to one of the others).
    auto_choice_ : AutoChoice or None
        What ``auto`` tried and chose (health and silhouette of every candidate).
    kth_distances_ : ndarray of shape (n_samples,) or None
        Cosine distance of every item to its ``dbscan_k``-th neighbour.
    input_hash_ : str
        SHA-256 of the validated input matrix (see :meth:`check_input`).
    timings_ : dict
        Seconds per stage (standardize, pca, dictionary_fit, dictionary_transform, knn, dbscan).

    Notes
    -----
    Time of the default path: PCA ``O(n d d')``, dictionary ``O(epochs · n K (d' + K s))``,
    exact kNN ``O(n² K)`` (HNSW ``O(n log n)`` above ``exact_knn_max``), linkage ``O(n k log n)``.
    Memory ``O(n d)`` for the input plus ``O(n (K + graph_k))``.
    With ``min_samples = 1``, DBSCAN equals the connected components of the eps-graph; the
    fast backend builds a spanning forest once and :meth:`recut` answers a new ``q`` in
    ``O(n)`` with exactly DBSCAN's partition (see :mod:`ucs.clustering.graph`).

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.clustering import LatentClusterer
    >>> rng = np.random.default_rng(0)
    >>> X = np.repeat(np.eye(3, 8), 4, axis=0) + 0.05 * rng.standard_normal((12, 8))  # 3 directions × 4 rows
    >>> LatentClusterer(method="kmeans", n_clusters=3, random_state=0).fit(X).labels_
    array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    >>> paper = LatentClusterer(n_atoms=3, dbscan_k=3, dbscan_q=0.5, random_state=0).fit(X)  # dict_dbscan
    >>> paper.n_clusters_
    3
    >>> paper.recut(0.05)  # a smaller q, a finer cut, without refitting
    array([0, 0, 0, 0, 1, 2, 3, 4, 5, 5, 5, 6])
    """

    def __init__(
        self,
        method: str = D.PAPER_CLUSTERING_METHOD,
        pca_dim: Optional[int] = D.PCA_DIM,
        n_atoms: int = D.N_ATOMS,
        coding: str = D.CODING,
        ridge_alpha: float = D.RIDGE_ALPHA,
        omp_n_nonzero: int = D.OMP_N_NONZERO,
        dict_alpha: float = 1.0,
        dict_batch_size: int = D.DICT_BATCH_SIZE,
        dict_max_iter: int = D.DICT_MAX_ITER,
        dbscan_k: int = D.DBSCAN_K,
        dbscan_q: float = D.DBSCAN_Q,
        min_samples: int = D.MIN_SAMPLES,
        standardize: bool = False,
        backend: str = D.BACKEND,
        knn_algorithm: str = "auto",
        exact_knn_max: int = 200_000,
        graph_k: Optional[int] = None,
        n_clusters: Optional[int] = None,
        hdbscan_min_cluster_size: int = D.HDBSCAN_MIN_CLUSTER_SIZE,
        random_state: Optional[int] = None,
        kmeans_impl: str = KMEANS_IMPL,
    ) -> None:
        self.method = method
        self.pca_dim = pca_dim
        self.n_atoms = n_atoms
        self.coding = coding
        self.ridge_alpha = ridge_alpha
        self.omp_n_nonzero = omp_n_nonzero
        self.dict_alpha = dict_alpha
        self.dict_batch_size = dict_batch_size
        self.dict_max_iter = dict_max_iter
        self.dbscan_k = dbscan_k
        self.dbscan_q = dbscan_q
        self.min_samples = min_samples
        self.standardize = standardize
        self.backend = backend
        self.knn_algorithm = knn_algorithm
        self.exact_knn_max = exact_knn_max
        self.graph_k = graph_k
        self.n_clusters = n_clusters
        self.hdbscan_min_cluster_size = hdbscan_min_cluster_size
        self.random_state = random_state
        self.kmeans_impl = kmeans_impl

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        check_choice(self.method, "method", METHODS)
        check_choice(self.coding, "coding", CODINGS)
        check_choice(self.backend, "backend", BACKENDS)
        check_choice(self.knn_algorithm, "knn_algorithm", KNN_ALGORITHMS)
        check_choice(self.kmeans_impl, "kmeans_impl", tuple(KMEANS_SETTINGS))
        check_int(self.pca_dim, "pca_dim", 1, allow_none=True)
        check_int(self.n_atoms, "n_atoms", 1)
        check_int(self.omp_n_nonzero, "omp_n_nonzero", 1)
        check_int(self.dict_batch_size, "dict_batch_size", 1)
        check_int(self.dict_max_iter, "dict_max_iter", 1)
        check_int(self.dbscan_k, "dbscan_k", 1)
        check_int(self.min_samples, "min_samples", 1)
        check_int(self.exact_knn_max, "exact_knn_max", 1)
        check_int(self.graph_k, "graph_k", 1, allow_none=True)
        check_int(self.n_clusters, "n_clusters", 1, allow_none=True)
        check_int(self.hdbscan_min_cluster_size, "hdbscan_min_cluster_size", 2)
        check_float(self.ridge_alpha, "ridge_alpha", 0.0, strict=True)
        check_float(self.dict_alpha, "dict_alpha", 0.0, strict=True)
        check_quantile(self.dbscan_q, "dbscan_q")
        if not isinstance(self.standardize, (bool, np.bool_)):
            raise ValueError(f"standardize must be True or False; got {self.standardize!r}")
        if self.random_state is not None:
            check_int(self.random_state, "random_state", 0)

    def _check_shape(self, n: int, d: int) -> None:
        uses_dict = self.method not in RAW_METHODS
        if self.n_clusters is not None and self.n_clusters > n and self.method in ("dict_kmeans", "kmeans"):
            raise ValueError(
                f"n_clusters={self.n_clusters} exceeds the {n} samples; set n_clusters <= {n} or None"
            )
        if self.method in EPS_METHODS + ("auto",) and n <= self.dbscan_k:
            raise ValueError(
                f"dbscan_k={self.dbscan_k} needs more than {self.dbscan_k} samples; got {n}. "
                f"Lower dbscan_k (at most {n - 1})."
            )
        if uses_dict:
            if self.pca_dim is not None and self.pca_dim < d and self.pca_dim > n:
                raise ValueError(
                    f"pca_dim={self.pca_dim} exceeds n_samples={n}: PCA cannot find more axes than samples. "
                    f"Set pca_dim <= {n} or pca_dim=None."
                )
            if self.n_atoms > n:
                raise ValueError(
                    f"n_atoms={self.n_atoms} exceeds n_samples={n}: there are not enough samples to learn "
                    "that many "
                    f"atoms. Set n_atoms <= {n}."
                )

    def validate(self) -> "LatentClusterer":
        """Check every parameter (``ValueError`` naming a bad one and how to fix it); returns self."""
        self._check_params()
        return self

    def fit_representation(
        self, E: ArrayLike, timings: Optional[Dict[str, float]] = None
    ) -> "LatentClusterer":
        """Fit only the representation stages on ``E`` (n, d): standardiser, PCA and dictionary (each when the
        method uses it); returns self. :meth:`represent` then maps any rows to what the partition runs on.

        :mod:`ucs.distributed` fits them on a sample on the driver and ships the fitted clusterer to workers,
        so every shard is coded exactly as :meth:`fit` codes its rows. ``timings`` (seconds per stage) is
        filled when given. Cost: the PCA and dictionary fits, ``O(n d d' + steps · batch · d' K)``.
        """
        self._check_params()
        X = check_embeddings(E, "E", min_samples=2)
        self._fit_stages(X, {} if timings is None else timings)
        self.codes_ = None
        return self

    def represent(self, E: ArrayLike) -> NDArray[np.floating]:
        """Rows (m, d) → the representation the partition runs on: dictionary codes (m, K), or the
        (standardised) rows themselves for ``dbscan`` / ``kmeans``. Needs :meth:`fit` or
        :meth:`fit_representation`. Cost ``O(m d d' + m d' K)``."""
        if not hasattr(self, "dictionary_"):
            raise NotFittedError("call fit or fit_representation before represent")
        X = np.asarray(E)
        if self.scaler_ is not None:
            X = self.scaler_.transform(X)
        if self.method in RAW_METHODS:
            return X
        if self.pca_ is not None:
            X = self.pca_.transform(X)
        return self._encode(X)

    # ------------------------------------------------------------------ stages
    def _represent(self, E: NDArray[np.floating], timings: Dict[str, float]) -> NDArray[np.floating]:
        """Standardise / PCA / dictionary; returns the matrix DBSCAN runs on (codes or raw rows)."""
        X = self._fit_stages(E, timings)
        if self.method in RAW_METHODS:
            return X
        t = time.perf_counter()
        self.codes_ = self._encode(X)
        timings["dictionary_transform"] = time.perf_counter() - t
        return self.codes_

    def _fit_stages(self, E: NDArray[np.floating], timings: Dict[str, float]) -> NDArray[np.floating]:
        """Fit the standardiser, PCA and dictionary; returns ``E`` through the first two (what is coded)."""
        X = E
        self.scaler_ = None
        self.pca_ = None
        self.dictionary_ = None
        self.codes_ = None
        self.dict_n_steps_ = 0
        t = time.perf_counter()
        if self.standardize:
            self.scaler_ = fit_standardizer(X)
            X = self.scaler_.transform(X)
        timings["standardize"] = time.perf_counter() - t
        if self.method in RAW_METHODS:
            return X
        t = time.perf_counter()
        if self.pca_dim is not None and self.pca_dim < X.shape[1]:
            self.pca_ = fit_pca(X, self.pca_dim, backend=self.backend, random_state=self.random_state)
            X = self.pca_.transform(X)
        timings["pca"] = time.perf_counter() - t
        t = time.perf_counter()
        fit = learn_dictionary(
            X,
            self.n_atoms,
            alpha=self.dict_alpha,
            batch_size=self.dict_batch_size,
            max_iter=self.dict_max_iter,
            backend=self.backend,
            random_state=self.random_state,
        )
        self.dictionary_ = fit.components
        self.dict_n_steps_ = fit.n_steps
        timings["dictionary_fit"] = time.perf_counter() - t
        return X

    def _encode(self, X: NDArray[np.floating]) -> NDArray[np.floating]:
        """Sparse codes of (PCA-projected) rows against the fitted dictionary, in ``X``'s dtype."""
        if self.backend == "sklearn" and self.coding == "omp":
            from sklearn.decomposition import sparse_encode

            codes = sparse_encode(X, self.dictionary_, algorithm="omp", n_nonzero_coefs=self.omp_n_nonzero)
        else:
            codes = encode(X, self.dictionary_, self.coding, self.ridge_alpha, self.omp_n_nonzero)
        return codes.astype(X.dtype, copy=False)

    def _graph_k(self, n: int) -> int:
        gk = self.graph_k if self.graph_k is not None else max(2 * self.dbscan_k, 32)
        return int(min(max(gk, self.dbscan_k), n - 1))

    def _cluster(self, X: NDArray[np.floating], timings: Dict[str, float]) -> NDArray[np.int64]:
        """Partition the representation ``X`` with ``method`` (``auto``: choose, then partition)."""
        self._graph = None
        self.eps_ = None
        self.kth_distances_ = None
        self.n_noise_ = 0
        self.knn_exact_ = True
        self.cluster_centers_ = None
        self.auto_choice_ = None
        self.chosen_method_ = self.method
        if self.method == "auto":
            return self._cluster_auto(X, timings)
        if self.method == "dict_argmax":
            t = time.perf_counter()
            lab = canonical_labels(np.argmax(np.abs(X), axis=1))
            timings["dbscan"] = time.perf_counter() - t
            return lab
        if self.method not in EPS_METHODS:
            t = time.perf_counter()
            lab = self._partition(unit_rows(X), {"method": self.method})
            timings["partition"] = time.perf_counter() - t
            return lab
        return self._cluster_eps(X, timings)

    def _partition(self, U: NDArray[np.float32], params: Dict[str, Any]) -> NDArray[np.int64]:
        """k-means or HDBSCAN labels of the unit rows ``U``; ``params`` override this clusterer's."""
        method = params["method"]
        if method in ("dict_kmeans", "kmeans"):
            k = params.get("n_clusters", self.n_clusters)
            k = default_n_clusters(U.shape[0]) if k is None else int(k)
            lab, centers = spherical_kmeans(U, k, random_state=self.random_state, impl=self.kmeans_impl)
            self.cluster_centers_ = centers
            self.n_noise_ = 0
            return lab
        if method == "dict_hdbscan":
            mcs = int(params.get("hdbscan_min_cluster_size", self.hdbscan_min_cluster_size))
            lab, self.n_noise_ = hdbscan_labels(U, mcs)
            self.cluster_centers_ = None
            return lab
        raise ValueError(f"no partitioning method {method!r}")  # pragma: no cover - guarded by _check_params

    def _cluster_auto(self, X: NDArray[np.floating], timings: Dict[str, float]) -> NDArray[np.int64]:
        """Label-free choice among the candidates of :func:`ucs.clustering.auto.auto_candidates`."""
        from .auto import auto_candidates, choose_partition

        lab0 = self._cluster_eps(X, timings)  # builds the k-NN graph the dbscan candidates share
        U = unit_rows(X)
        t = time.perf_counter()

        noise0 = self.n_noise_
        state: Dict[int, Any] = {}
        candidates = auto_candidates(U.shape[0])

        def run(params: Dict[str, Any]) -> NDArray[np.int64]:
            if params["method"] == "dict_dbscan":
                ms = int(params.get("min_samples", 1))
                self.n_noise_, self.cluster_centers_ = noise0, None
                lab = lab0 if ms == self.min_samples else self._labels_at(self.eps_, ms)
            else:
                lab = self._partition(U, params)
            state[len(state)] = (self.n_noise_, self.cluster_centers_)
            return lab

        choice, lab = choose_partition(U, candidates, run, random_state=self.random_state)
        self.auto_choice_ = choice
        self.chosen_method_ = choice.chosen["method"]
        self.n_noise_, self.cluster_centers_ = state[candidates.index(choice.chosen)]
        if self.chosen_method_ != "dict_dbscan":
            self._graph, self.eps_, self.kth_distances_ = None, None, None
        timings["auto"] = time.perf_counter() - t
        return lab

    def _cluster_eps(self, X: NDArray[np.floating], timings: Dict[str, float]) -> NDArray[np.int64]:
        """eps heuristic + DBSCAN on the representation ``X``."""
        n = X.shape[0]
        t = time.perf_counter()
        U = unit_rows(X)
        if self.backend == "sklearn":
            from sklearn.neighbors import NearestNeighbors

            self._unit = U
            dist, _ = NearestNeighbors(n_neighbors=self.dbscan_k + 1, metric="cosine").fit(U).kneighbors(U)
            self.kth_distances_ = dist[:, self.dbscan_k].astype(np.float64)
            timings["knn"] = time.perf_counter() - t
            self.eps_ = eps_from_knn(self.kth_distances_, self.dbscan_q)
            t = time.perf_counter()
            lab = self._sklearn_dbscan(U, self.eps_)
            timings["dbscan"] = time.perf_counter() - t
            return lab
        idx, dist, exact = knn(
            U, self._graph_k(n), algorithm=self.knn_algorithm, exact_max=self.exact_knn_max
        )
        self.knn_exact_ = exact
        self.kth_distances_ = dist[:, self.dbscan_k - 1].copy()
        timings["knn"] = time.perf_counter() - t
        self.eps_ = eps_from_knn(self.kth_distances_, self.dbscan_q)
        t = time.perf_counter()
        self._graph = LinkageGraph(U, idx, dist, exact_knn=exact)
        lab = self._labels_at(self.eps_)
        timings["dbscan"] = time.perf_counter() - t
        return lab

    def _sklearn_dbscan(self, U: NDArray[np.float32], eps: float) -> NDArray[np.int64]:
        from sklearn.cluster import DBSCAN

        lab = DBSCAN(eps=max(eps, 1e-12), min_samples=self.min_samples, metric="cosine").fit_predict(U)
        self.n_noise_ = int((lab < 0).sum())
        return remap_noise(lab)

    def _labels_at(self, eps: float, min_samples: Optional[int] = None) -> NDArray[np.int64]:
        g = self._graph
        ms = self.min_samples if min_samples is None else int(min_samples)
        if ms == 1:
            return g.components(eps)
        from sklearn.cluster import DBSCAN

        lab = DBSCAN(
            eps=max(eps, np.finfo(np.float64).tiny), min_samples=ms, metric="precomputed"
        ).fit_predict(g.eps_graph(eps))
        self.n_noise_ = int((lab < 0).sum())
        return remap_noise(lab)

    # ------------------------------------------------------------------ public API
    def fit(self, E: ArrayLike, y: Any = None) -> "LatentClusterer":
        """Cluster the pool embeddings ``E`` (n_samples, n_features). ``y`` is ignored.

        Returns
        -------
        self
        """
        self._check_params()
        E = check_embeddings(E, "E", min_samples=2)
        n, d = E.shape
        self._check_shape(n, d)
        timings: Dict[str, float] = {}
        self.input_hash_ = hash_array(E)
        self.n_features_in_ = d
        X = self._represent(E, timings)
        self.labels_ = self._cluster(X, timings)
        self.n_clusters_ = int(self.labels_.max()) + 1 if n else 0
        self.timings_ = timings
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "labels_"):
            raise NotFittedError("this LatentClusterer is not fitted yet; call fit(E) first")

    def eps_for(self, q: float) -> float:
        """The eps the heuristic gives for quantile ``q`` on the fitted k-NN distances."""
        self._check_fitted()
        q = check_quantile(q, "q")
        if self.kth_distances_ is None:
            raise ValueError(
                f"method={self.chosen_method_!r} has no DBSCAN stage, so there is no eps to re-cut"
            )
        return eps_from_knn(self.kth_distances_, q)

    def recut(self, q: float) -> NDArray[np.int64]:
        """Labels for a new quantile ``q`` without refitting (the fitted ``labels_`` stay).

        With ``min_samples = 1`` and the fast backend this is a prefix of the sorted spanning
        forest, ``O(n)``: milliseconds at ``n = 15,000``, and exactly the partition DBSCAN gives
        at ``eps_for(q)``. Other settings rerun DBSCAN on the stored graph or codes.
        """
        return self.recut_eps(self.eps_for(q))

    def recut_eps(self, eps: float) -> NDArray[np.int64]:
        """Labels at an explicit cosine radius ``eps`` (see :meth:`recut`)."""
        self._check_fitted()
        eps = check_float(eps, "eps", 0.0)
        if self.kth_distances_ is None:
            raise ValueError(
                f"method={self.chosen_method_!r} has no DBSCAN stage, so there is nothing to re-cut"
            )
        if self._graph is None:  # sklearn backend
            return self._sklearn_dbscan(self._unit, eps)
        return self._labels_at(eps)

    def check_input(self, E: ArrayLike) -> bool:
        """Whether ``E`` is the matrix this clusterer was fitted on (content hash)."""
        self._check_fitted()
        return hash_array(check_embeddings(E, "E", min_samples=1)) == self.input_hash_

    def health(self, y: Optional[ArrayLike] = None):
        """:func:`ucs.clustering.health.cluster_health` of the fitted labels (AMI and purity with ``y``)."""
        from .health import cluster_health

        self._check_fitted()
        return cluster_health(self.labels_, y=y)

    def report(self, y: Optional[ArrayLike] = None, texts: Optional[List[str]] = None, top: int = 8):
        """:func:`ucs.clustering.diagnostics.cluster_report` of the fitted labels."""
        from .diagnostics import cluster_report

        self._check_fitted()
        return cluster_report(self.labels_, y=y, texts=texts, top=top)

    def save(self, directory: "str | Any") -> "Any":
        """Write the fitted clusterer to ``directory`` (npz + json, no pickle); returns the path."""
        return save_clusterer(self, directory)

    @classmethod
    def load(cls, directory: "str | Any", E: Optional[ArrayLike] = None) -> "LatentClusterer":
        """Load a clusterer written by :meth:`save`; with ``E``, raise if the labels are stale."""
        return load_clusterer(directory, E=E)

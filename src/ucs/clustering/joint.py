"""Joint dictionary over several embedding matrices of one pool (SPEC §2, paper §5.1).

Solves ``min Σ_m ||Z_m B_m − R D||²_F  s.t.  B_mᵀ B_m = I`` by alternation: each ``E_m`` is
reduced by PCA to a common ``d'`` and scaled to unit mean squared row norm (so no model
dominates by scale); then (a) the dictionary ``D`` and codes ``R`` are fitted on the mean of
the aligned matrices ``Z_m B_m``, and (b) every ``B_m`` is the orthogonal Procrustes solution
``U Vᵀ`` of the SVD of ``Z_mᵀ R D``. The final codes are clustered as in the single-model case.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from .. import defaults as D
from ._validation import check_embeddings, check_int
from .dictionary import encode, learn_dictionary
from .partition import KMEANS_IMPL
from .estimator import RAW_METHODS, LatentClusterer
from .persistence import persistent
from .preprocessing import fit_pca, fit_standardizer

__all__ = ["JointLatentClusterer"]


@persistent
class JointLatentClusterer(LatentClusterer):
    """One set of latent cluster ids from ``M`` embedding matrices of the same pool.

    Takes every parameter of :class:`LatentClusterer` (``method`` must be a dictionary method:
    ``dict_dbscan``, ``dict_argmax``, ``dict_kmeans``, ``dict_hdbscan`` or ``auto``) plus ``joint_iter``
    alternation rounds. ``pca_dim`` is capped at the smallest embedding width.

    Attributes
    ----------
    rotations_ : ndarray of shape (M, d', d')
        Orthogonal maps ``B_m``.
    model_scales_ : ndarray of shape (M,)
        Scale each reduced matrix was divided by.
    scalers_, pcas_ : list
        Per-model standardisers and PCA projections.
    objective_ : list of float
        ``Σ_m ||Z_m B_m − R D||²_F / n`` after each round. A diagnostic, not a guaranteed
        monotone sequence: the Procrustes step is exact for fixed ``R D``, but the dictionary
        step fits the lasso objective and the codes are ridge (or OMP) codes.
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
        joint_iter: int = 5,
        kmeans_impl: str = KMEANS_IMPL,
    ) -> None:
        super().__init__(
            method=method,
            pca_dim=pca_dim,
            n_atoms=n_atoms,
            coding=coding,
            ridge_alpha=ridge_alpha,
            omp_n_nonzero=omp_n_nonzero,
            dict_alpha=dict_alpha,
            dict_batch_size=dict_batch_size,
            dict_max_iter=dict_max_iter,
            dbscan_k=dbscan_k,
            dbscan_q=dbscan_q,
            min_samples=min_samples,
            standardize=standardize,
            backend=backend,
            knn_algorithm=knn_algorithm,
            exact_knn_max=exact_knn_max,
            graph_k=graph_k,
            n_clusters=n_clusters,
            hdbscan_min_cluster_size=hdbscan_min_cluster_size,
            random_state=random_state,
            kmeans_impl=kmeans_impl,
        )
        self.joint_iter = joint_iter

    def fit(self, Es: Sequence[ArrayLike], y: Any = None) -> "JointLatentClusterer":  # type: ignore[override]
        """Fit on a sequence of embedding matrices ``E_m`` of shape (n_samples, d_m)."""
        mats, dprime = self._check_matrices(Es)
        timings: Dict[str, float] = {}
        from ..utils.io import hash_array

        h = hashlib.sha256()
        for M in mats:
            h.update(hash_array(M).encode())
        self.input_hash_ = h.hexdigest()
        self.n_features_in_ = [M.shape[1] for M in mats]
        t = time.perf_counter()
        Zs = self._project(mats, dprime)
        timings["pca"] = time.perf_counter() - t
        t = time.perf_counter()
        self._align(Zs, dprime)
        self.scaler_ = None
        self.pca_ = None
        timings["dictionary_fit"] = time.perf_counter() - t
        self.labels_ = self._cluster(self.codes_, timings)
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.timings_ = timings
        return self

    def _check_matrices(self, Es: Sequence[ArrayLike]) -> Tuple[List[np.ndarray], int]:
        """The checked matrices and their common dimension ``d' = min(pca_dim, min_m d_m)``."""
        self._check_params()
        check_int(self.joint_iter, "joint_iter", 1)
        if self.method in RAW_METHODS:
            raise ValueError(
                f"method={self.method!r} has no dictionary; use a 'dict_*' method or 'auto' for a joint fit"
            )
        if isinstance(Es, np.ndarray) and Es.ndim == 2:
            Es = [Es]
        if len(Es) < 1:
            raise ValueError("Es must hold at least one embedding matrix")
        mats = [check_embeddings(E, f"Es[{m}]") for m, E in enumerate(Es)]
        n = mats[0].shape[0]
        if any(M.shape[0] != n for M in mats):
            raise ValueError(
                f"every matrix must embed the same pool; got row counts {[M.shape[0] for M in mats]}"
            )
        dims = [M.shape[1] for M in mats]
        dprime = min(dims) if self.pca_dim is None else min(self.pca_dim, min(dims))
        self._check_shape(n, dprime)
        if dprime > n:
            raise ValueError(f"the common dimension {dprime} exceeds n_samples={n}; set pca_dim <= {n}")
        return mats, dprime

    def _project(self, mats: Sequence[np.ndarray], dprime: int) -> List[np.ndarray]:
        """Standardise and PCA-project each matrix to ``d'``, scaled to unit RMS row norm; sets ``scalers_``,
        ``pcas_`` and ``model_scales_``. Returns the ``Z_m`` of shape (n, d')."""
        n = mats[0].shape[0]
        self.scalers_, self.pcas_, Zs, scales = [], [], [], []
        for m, X in enumerate(mats):
            sc = fit_standardizer(X) if self.standardize else None
            if sc is not None:
                X = sc.transform(X)
            seed = None if self.random_state is None else self.random_state + m
            p = fit_pca(X, dprime, backend=self.backend, random_state=seed)
            Z = p.transform(X).astype(np.float64)
            s = float(np.sqrt((Z * Z).sum() / n)) or 1.0
            self.scalers_.append(sc)
            self.pcas_.append(p)
            Zs.append(Z / s)
            scales.append(s)
        self.model_scales_ = np.asarray(scales)
        return Zs

    def _align(self, Zs: Sequence[np.ndarray], dprime: int) -> None:
        """Alternate a shared dictionary fit on the mean rotated target and orthogonal Procrustes rotations
        ``B_m`` (``joint_iter`` rounds); sets ``rotations_``, ``dictionary_``, ``codes_``, ``objective_``."""
        n = Zs[0].shape[0]
        Bs = [np.eye(dprime) for _ in Zs]
        self.objective_: List[float] = []
        for it in range(self.joint_iter + 1):
            T = sum(Z @ B for Z, B in zip(Zs, Bs)) / len(Zs)
            fit = learn_dictionary(
                T,
                self.n_atoms,
                alpha=self.dict_alpha,
                batch_size=self.dict_batch_size,
                max_iter=self.dict_max_iter,
                backend=self.backend,
                random_state=self.random_state,
            )
            D = fit.components.astype(np.float64)
            R = encode(T, D, self.coding, self.ridge_alpha, self.omp_n_nonzero)
            rec = R @ D
            self.objective_.append(float(sum(((Z @ B - rec) ** 2).sum() for Z, B in zip(Zs, Bs)) / n))
            if it == self.joint_iter:
                break
            for m, Z in enumerate(Zs):
                U_, _, Vt = np.linalg.svd(Z.T @ rec)
                Bs[m] = U_ @ Vt
        self.rotations_ = np.stack(Bs)
        self.dictionary_ = D
        self.codes_ = R
        self.dict_n_steps_ = fit.n_steps

    def check_input(self, Es: Sequence[ArrayLike]) -> bool:  # type: ignore[override]
        """Whether ``Es`` are the matrices this clusterer was fitted on (content hash)."""
        from ..utils.io import hash_array

        self._check_fitted()
        if isinstance(Es, np.ndarray) and Es.ndim == 2:
            Es = [Es]
        h = hashlib.sha256()
        for m, E in enumerate(Es):
            h.update(hash_array(check_embeddings(E, f"Es[{m}]", min_samples=1)).encode())
        return h.hexdigest() == self.input_hash_

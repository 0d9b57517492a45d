"""Dictionary learning and coding (SPEC §2 steps 2–3).

The dictionary is ``D`` of shape ``(n_atoms, n_features)`` (one unit-norm atom per row, the
scikit-learn convention; SPEC writes its transpose). Learning follows the online algorithm of
Mairal et al. (2010) that :class:`sklearn.decomposition.MiniBatchDictionaryLearning` runs —
the same objective ``0.5 ||x - r D||² + α ||r||₁`` with ``||D_k|| ≤ 1``, the same sufficient
statistics with forgetting, the same SVD initialisation and the same early-stopping rule — but
the per-batch lasso codes come from a batched accelerated proximal-gradient solver written as
BLAS-level numpy over the whole mini-batch instead of one LARS call per sample, which is where the reference
spends almost all of its time.

Coding after the fit is ``ridge`` (closed form, one matrix product for all rows) or ``omp``
(batched orthogonal matching pursuit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from .. import defaults as D

__all__ = ["DictionaryFit", "learn_dictionary", "lasso_codes", "ridge_codes", "omp_codes", "encode"]


@dataclass
class DictionaryFit:
    """Result of :func:`learn_dictionary`.

    Attributes
    ----------
    components : ndarray of shape (n_atoms, n_features)
    n_steps : int
        Mini-batch steps taken.
    n_epochs : int
        Passes over the data (ceil of ``n_steps`` / steps per epoch).
    """

    components: NDArray[np.floating]
    n_steps: int
    n_epochs: int


def lasso_codes(
    X: NDArray[np.floating],
    D: NDArray[np.floating],
    alpha: float,
    max_iter: int = 200,
    tol: float = 1e-4,
    init: Optional[NDArray[np.floating]] = None,
) -> NDArray[np.floating]:
    """Lasso codes ``argmin_r 0.5 ||x - r D||² + alpha ||r||₁`` for every row of ``X`` at once.

    Accelerated proximal gradient (FISTA, Beck & Teboulle 2009) on the whole batch: every
    iteration is one ``(n, K) × (K, K)`` matrix product and an element-wise soft threshold.
    Stops when the largest code change is below ``tol`` times the largest code magnitude.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    D : ndarray of shape (K, p)
    alpha : float
    init : ndarray of shape (n, K), optional
        Warm start.

    Returns
    -------
    R : ndarray of shape (n, K), dtype of ``X``.

    Notes
    -----
    Time ``O(n p K + iters · n K²)``; memory ``O(n K)``.
    """
    dtype = X.dtype
    D64 = D.astype(np.float64)
    G = D64 @ D64.T
    C = X.astype(np.float64) @ D64.T
    L = float(np.linalg.eigvalsh(G)[-1])
    if L <= 0.0:
        return np.zeros(C.shape, dtype=dtype)
    R = np.zeros(C.shape) if init is None else np.array(init, dtype=np.float64)
    Y = R.copy()
    t = 1.0
    thr = alpha / L
    for _ in range(max_iter):
        Z = Y - (Y @ G - C) / L
        Rn = np.sign(Z) * np.maximum(np.abs(Z) - thr, 0.0)
        delta = np.abs(Rn - R).max()
        scale = np.abs(Rn).max()
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Y = Rn + ((t - 1.0) / tn) * (Rn - R)
        R, t = Rn, tn
        if delta <= tol * max(scale, 1e-12):
            break
    return R.astype(dtype, copy=False)


def ridge_codes(X: NDArray[np.floating], D: NDArray[np.floating], alpha: float) -> NDArray[np.floating]:
    """Closed-form ridge codes ``R = X Dᵀ (D Dᵀ + alpha I)⁻¹`` (SPEC §2, Eq. 3 of the paper).

    Time ``O(n p K + K³)``; memory ``O(n K)``.
    """
    K = D.shape[0]
    D64 = D.astype(np.float64)
    A = D64 @ D64.T + alpha * np.eye(K)
    # solve instead of invert: R = (A^{-1} D X^T)^T
    W = np.linalg.solve(A, D64).astype(X.dtype)  # (K, p)
    return np.ascontiguousarray(X @ W.T)


def omp_codes(X: NDArray[np.floating], D: NDArray[np.floating], n_nonzero: int) -> NDArray[np.floating]:
    """Orthogonal matching pursuit with ``n_nonzero`` atoms per row, batched over rows.

    Each step picks, for every row, the atom most correlated with its residual, then refits
    the least-squares coefficients on the selected atoms through a batched ``s × s`` solve.
    Time ``O(n K p + s (n K s + n s³))``; memory ``O(n K)``.
    """
    n = X.shape[0]
    K = D.shape[0]
    s_max = min(int(n_nonzero), K)
    D64 = D.astype(np.float64)
    G = D64 @ D64.T
    C = X.astype(np.float64) @ D64.T  # (n, K)
    sel = np.zeros((n, 0), dtype=np.int64)
    coef = np.zeros((n, 0))
    corr = C.copy()
    rows = np.arange(n)
    for _ in range(s_max):
        score = np.abs(corr)
        if sel.shape[1]:
            score[rows[:, None], sel] = -1.0
        new = np.argmax(score, axis=1)
        sel = np.concatenate([sel, new[:, None]], axis=1)
        Gs = G[sel[:, :, None], sel[:, None, :]]  # (n, s, s)
        b = np.take_along_axis(C, sel, axis=1)  # (n, s)
        Gs = Gs + 1e-10 * np.eye(sel.shape[1])
        coef = np.linalg.solve(Gs, b[:, :, None])[:, :, 0]
        # residual correlations: C - coef @ G[sel]
        corr = C - np.einsum("ns,nsk->nk", coef, G[sel])
    R = np.zeros((n, K))
    if s_max:
        np.put_along_axis(R, sel, coef, axis=1)
    return R.astype(X.dtype, copy=False)


def encode(
    X: NDArray[np.floating], D: NDArray[np.floating], coding: str, ridge_alpha: float, omp_n_nonzero: int
) -> NDArray[np.floating]:
    """Codes of ``X`` on ``D`` by ``ridge`` or ``omp`` (see those functions)."""
    if coding == "ridge":
        return ridge_codes(X, D, ridge_alpha)
    if coding == "omp":
        return omp_codes(X, D, omp_n_nonzero)
    raise ValueError(f"coding must be 'ridge' or 'omp'; got {coding!r}")


def _svd_init(X: NDArray[np.floating], n_atoms: int) -> NDArray[np.float64]:
    """``S Vᵀ`` of the top right singular vectors of ``X`` (rows padded with zeros)."""
    n, p = X.shape
    X64 = X.astype(np.float64)
    if p <= n:
        w, V = np.linalg.eigh(X64.T @ X64)
        order = np.argsort(w)[::-1]
        s = np.sqrt(np.maximum(w[order], 0.0))
        Vt = V[:, order].T
    else:
        _, s, Vt = np.linalg.svd(X64, full_matrices=False)
    idx = np.argmax(np.abs(Vt), axis=1)
    signs = np.sign(Vt[np.arange(Vt.shape[0]), idx])
    signs[signs == 0] = 1.0
    D = (s * signs)[:, None] * Vt
    if n_atoms <= D.shape[0]:
        return D[:n_atoms].copy()
    return np.vstack([D, np.zeros((n_atoms - D.shape[0], p))])


def learn_dictionary(
    X: NDArray[np.floating],
    n_atoms: int,
    alpha: float = 1.0,
    batch_size: int = 512,
    max_iter: int = 50,
    tol: float = 1e-3,
    max_no_improvement: Optional[int] = 10,
    backend: str = D.BACKEND,
    random_state: Optional[int] = None,
) -> DictionaryFit:
    """Learn ``n_atoms`` unit-norm atoms for ``X`` (n, p) by online dictionary learning.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_atoms : int
    alpha : float
        Lasso penalty of the codes used while learning (scikit-learn's ``alpha``).
    batch_size, max_iter : int
        Mini-batch size and maximum number of epochs (SPEC reference: 512 and 50).
    tol, max_no_improvement :
        Early stopping on the dictionary change and on the smoothed batch cost, with the
        scikit-learn rules.
    backend : {"fast", "sklearn"}
        ``sklearn`` runs :class:`~sklearn.decomposition.MiniBatchDictionaryLearning` (reference).
    random_state : int or None
        Seeds the shuffle and the resampling of unused atoms.

    Notes
    -----
    Time per mini-batch step ``O(b K p + b K² s)`` for ``s`` proximal-gradient iterations plus an
    ``O(K² p)`` dictionary update; memory ``O(n p + n K)`` (a shuffled copy and warm-start codes).
    """
    if backend == "sklearn":
        from sklearn.decomposition import MiniBatchDictionaryLearning

        dl = MiniBatchDictionaryLearning(
            n_components=n_atoms,
            alpha=alpha,
            batch_size=batch_size,
            max_iter=max_iter,
            tol=tol,
            max_no_improvement=max_no_improvement,
            random_state=random_state,
        ).fit(X)
        return DictionaryFit(dl.components_.astype(X.dtype), int(dl.n_steps_), int(dl.n_iter_))

    # mini-batch products are small (b × K × p): one BLAS thread is as fast and immune to the
    # oversubscription that multi-threaded LAPACK suffers on small matrices
    with threadpool_limits(1, user_api="blas"):
        return _learn_dictionary_fast(
            X, n_atoms, alpha, batch_size, max_iter, tol, max_no_improvement, random_state
        )


def _learn_dictionary_fast(
    X, n_atoms, alpha, batch_size, max_iter, tol, max_no_improvement, random_state
) -> DictionaryFit:
    rng = (
        np.random.RandomState(random_state)
        if not isinstance(random_state, np.random.RandomState)
        else random_state
    )
    n, p = X.shape
    batch_size = min(batch_size, n)
    D = _svd_init(X, n_atoms)
    # consume the generator as the reference does (its randomized-SVD test matrix, then the
    # shuffle), so that a given seed visits the mini-batches in the reference's order
    rng.normal(size=(p, n_atoms + 10))
    order = rng.permutation(n)
    Xs = X[order].astype(np.float64)
    A = np.zeros((n_atoms, n_atoms))
    Bst = np.zeros((p, n_atoms))
    codes = np.zeros((n, n_atoms))  # warm starts for later epochs
    steps_per_epoch = int(np.ceil(n / batch_size))
    n_steps = max_iter * steps_per_epoch
    ewa = ewa_min = None
    no_improve = 0
    step = -1
    old = D.copy()
    for step in range(n_steps):
        b = step % steps_per_epoch
        sl = slice(b * batch_size, min((b + 1) * batch_size, n))
        Xb = Xs[sl]
        bs = Xb.shape[0]
        warm = codes[sl] if step >= steps_per_epoch else None
        R = lasso_codes(Xb, D, alpha, init=warm, max_iter=100, tol=1e-3)
        codes[sl] = R
        cost = (0.5 * ((Xb - R @ D) ** 2).sum() + alpha * np.abs(R).sum()) / bs
        theta = (step + 1) * bs if step < bs - 1 else bs * bs + step + 1 - bs
        beta = (theta + 1 - bs) / (theta + 1)
        A *= beta
        A += R.T @ R / bs
        Bst *= beta
        Bst += Xb.T @ R / bs
        # block coordinate descent on the atoms (Mairal et al. 2010, Algorithm 2)
        for k in range(n_atoms):
            if A[k, k] > 1e-6:
                D[k] += (Bst[:, k] - A[k] @ D) / A[k, k]
            else:
                newd = Xb[rng.choice(bs)]
                D[k] = newd + rng.normal(0.0, 0.01 * (newd.std() or 1.0), size=p)
                R[:, k] = 0.0
            D[k] /= max(np.linalg.norm(D[k]), 1.0)
        # early stopping, with the rules of the reference implementation
        s1 = step + 1
        if s1 > min(100, n / batch_size):
            if ewa is None:
                ewa = cost
            else:
                a = min(bs / (n + 1), 1.0)
                ewa = ewa * (1 - a) + cost * a
            if tol > 0 and np.linalg.norm(D - old) / n_atoms <= tol:
                break
            if ewa_min is None or ewa < ewa_min:
                no_improve, ewa_min = 0, ewa
            else:
                no_improve += 1
            if max_no_improvement is not None and no_improve >= max_no_improvement:
                break
        old[:] = D
    n_done = step + 1
    return DictionaryFit(D.astype(X.dtype), n_done, int(np.ceil(n_done / steps_per_epoch)))

"""Corpus-level cluster priors for query-independent selectors (VoteK+UCS, SPEC §4).

From the pool's cluster sizes ``n_u`` the size spectrum ``g_s = |{u : n_u = s}|`` is smoothed
(power law fitted at the actual sizes by default, clamped at 0) to ``ĝ``, and each cluster gets
a weight, normalised to mean 1 over clusters:

``good_turing`` (the paper's VoteK+UCS prior)
    Good–Turing adjusted count ``s* = (s+1) ĝ_{s+1} / ĝ_s`` (``s* = s`` when that is not a
    positive finite number), ``p(s) = s*/N``, ``w_u ∝ 1 / (p(n_u) + ε)``.
``spectrum_rarity`` (rarity control B2, paper Table 7)
    ``w_u ∝ 1 / (ĝ_{n_u} + ε)`` — spectrum rarity without the Good–Turing ratio.
``inverse_size`` (rarity control B1)
    ``w_u ∝ 1 / n_u`` — the plain inverse-size bonus (no smoothing).

Selectors add ``λ · log w_{c(i)}`` to item scores; :attr:`GoodTuringPrior.item_log_weights_`
holds that term for every pool item.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from ucs.estimators.smoothing import SMOOTHERS, SpectrumModel, fit_spectrum_model
from ucs.estimators.spectrum import spectrum_from_multiplicities, validate_cluster_ids

__all__ = ["PRIOR_VARIANTS", "GoodTuringPrior"]

PRIOR_VARIANTS: tuple[str, ...] = ("good_turing", "spectrum_rarity", "inverse_size")


class GoodTuringPrior:
    """Per-cluster rarity weights from the pool's cluster-size spectrum.

    Parameters
    ----------
    variant : {"good_turing", "spectrum_rarity", "inverse_size"}, default="good_turing"
    smoothing : {"power_law", "poisson", "negbin", None}, default="power_law"
        Model fitted to the size spectrum ``g``; ``None`` uses the raw spectrum.
    epsilon : float, default=1e-6
        Stabiliser ``ε`` (> 0). The paper does not state its value.

    Attributes
    ----------
    clusters_ : ndarray of shape (K,)
        Distinct cluster ids, sorted.
    sizes_ : ndarray of shape (K,)
        Pool size ``n_u`` of each cluster.
    size_spectrum_ : ndarray of shape (max size + 1,)
        ``g_s``.
    smoothed_spectrum_ : ndarray of shape (max size + 2,)
        ``ĝ_s`` for ``s = 0..max+1`` (``ĝ_0 = 0``).
    adjusted_counts_ : ndarray of shape (max size + 1,)
        Good–Turing ``s*`` for every size ``s`` (index 0 unused).
    weights_ : ndarray of shape (K,)
        ``w_u``, mean 1 over clusters.
    item_log_weights_ : ndarray of shape (N,)
        ``log w_{c(i)}`` of every pool item.
    model_ : SpectrumModel or None
        The fitted smoother (``None`` when not fitted or not possible).

    Notes
    -----
    O(N log N) for the cluster sizes, O(max size) for the rest.
    """

    def __init__(
        self, variant: str = "good_turing", smoothing: Optional[str] = "power_law", epsilon: float = 1e-6
    ) -> None:
        self.variant = variant
        self.smoothing = smoothing
        self.epsilon = epsilon

    def get_params(self) -> dict[str, Any]:
        return {"variant": self.variant, "smoothing": self.smoothing, "epsilon": self.epsilon}

    def __repr__(self) -> str:
        return "GoodTuringPrior(" + ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()) + ")"

    def _validate(self) -> None:
        if self.variant not in PRIOR_VARIANTS:
            raise ValueError(f"variant must be one of {PRIOR_VARIANTS}; got {self.variant!r}")
        if self.smoothing is not None and self.smoothing not in SMOOTHERS:
            raise ValueError(f"smoothing must be None or one of {SMOOTHERS}; got {self.smoothing!r}")
        eps = self.epsilon
        if (
            isinstance(eps, bool)
            or not isinstance(eps, (int, float, np.number))
            or not (eps > 0 and math.isfinite(eps))
        ):
            raise ValueError(f"epsilon must be a finite number > 0; got {eps!r}")

    def fit(self, cluster_ids: ArrayLike) -> "GoodTuringPrior":
        """Compute the weights from the pool's cluster ids (shape (N,), non-negative ints)."""
        self._validate()
        ids = validate_cluster_ids(cluster_ids)
        if ids.size == 0:
            raise ValueError("cluster_ids is empty; the prior needs the cluster id of every pool item")
        self.clusters_, inverse, sizes = np.unique(ids, return_inverse=True, return_counts=True)
        self.sizes_ = sizes.astype(np.int64)
        n_items = int(ids.size)
        g = spectrum_from_multiplicities(self.sizes_)
        self.size_spectrum_ = g
        top = g.size - 1
        grid = np.arange(0, top + 2)
        self.model_: Optional[SpectrumModel] = (
            fit_spectrum_model(g, self.smoothing) if self.smoothing else None
        )
        if self.model_ is not None:
            ghat = self.model_(grid)
        else:
            ghat = np.zeros(top + 2)
            ghat[: g.size] = g
        ghat[0] = 0.0
        self.smoothed_spectrum_ = ghat
        s = np.arange(top + 1, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            s_star = (s + 1.0) * ghat[1:] / ghat[:-1]
        ok = np.isfinite(s_star) & (s_star > 0)
        s_star = np.where(ok, s_star, s)
        s_star[0] = 0.0
        self.adjusted_counts_ = s_star
        eps = float(self.epsilon)
        if self.variant == "good_turing":
            w_by_size = 1.0 / (s_star / n_items + eps)
        elif self.variant == "spectrum_rarity":
            w_by_size = 1.0 / (ghat[: top + 1] + eps)
        else:  # inverse_size
            with np.errstate(divide="ignore"):
                w_by_size = np.where(s > 0, 1.0 / np.maximum(s, 1.0), 0.0)
        w = w_by_size[self.sizes_]
        # mean over clusters summed by size (ascending), not in cluster-id order, so relabelling the
        # clusters cannot change the normalised weights even in the last bit
        occurring = np.nonzero(g)[0]
        mean = float((g[occurring] * w_by_size[occurring]).sum()) / float(g.sum())
        self.weights_ = w / mean
        self.item_log_weights_ = np.log(self.weights_)[inverse.reshape(-1)]
        return self

    def weight_of_size(self, size: int) -> float:
        """Normalised weight of a cluster of the given pool size (one of the fitted sizes)."""
        if not hasattr(self, "weights_"):
            raise RuntimeError("GoodTuringPrior is not fitted; call fit(cluster_ids) first")
        hit = np.nonzero(self.sizes_ == int(size))[0]
        if hit.size == 0:
            raise ValueError(f"no cluster of size {size} in the fitted pool")
        return float(self.weights_[hit[0]])

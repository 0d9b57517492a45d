"""Parametric smoothing of frequency-of-frequencies spectra.

A spectrum ``f_s`` (number of clusters of size ``s``) is noisy and has gaps. Smoothed
Good–Turing style estimators replace it by a fitted parametric curve ``f̂_s``. Three
models are offered (paper appendix, "Power-law, Poisson, or Negative Binomial"):

``power_law``
    ``f̂_s = C (β + s)^(−a)``, fitted by least squares on ``log f_s`` **at the sizes that
    actually occur** (``s`` with ``f_s > 0``). The authors' code regresses against the bin
    *position* instead of the size, which is wrong as soon as sizes have gaps; this module
    does not copy that. ``β`` is chosen on a fixed grid (deterministic).
``poisson``
    zero-truncated Poisson whose mean matches the observed mean size.
``negbin``
    zero-truncated negative binomial by the method of moments on the observed sizes
    (falls back to Poisson when the sizes are not over-dispersed).

Every model returns a callable ``s -> f̂_s`` (vectorised, non-negative), or ``None`` when the
spectrum is too degenerate to fit (fewer than two distinct sizes for the power law, no
clusters at all); callers then use the raw spectrum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

__all__ = ["SMOOTHERS", "SpectrumModel", "fit_spectrum_model", "smooth_spectrum"]

SMOOTHERS: tuple[str, ...] = ("power_law", "poisson", "negbin")

#: Grid of offsets ``β`` tried by the power-law fit.
_BETA_GRID = np.concatenate([np.arange(0.0, 2.0, 0.25), np.arange(2.0, 10.5, 1.0)])


@dataclass(frozen=True)
class SpectrumModel:
    """A fitted parametric spectrum ``s -> f̂_s``.

    Attributes
    ----------
    kind : str
        One of :data:`SMOOTHERS`.
    params : dict
        Fitted parameters (``C, a, beta`` / ``lam`` / ``r, p``) and the total number of clusters ``K``.
    """

    kind: str
    params: dict
    _fn: Callable[[NDArray[np.float64]], NDArray[np.float64]]

    def __call__(self, s: ArrayLike) -> NDArray[np.float64]:
        s = np.asarray(s, dtype=np.float64)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # e.g. (β + 0)^(−a) at β = 0
            out = np.asarray(self._fn(s), dtype=np.float64)
        out = np.where(np.isfinite(out), out, 0.0)
        return np.maximum(out, 0.0)


def _check_kind(kind: str) -> str:
    if kind not in SMOOTHERS:
        raise ValueError(f"smoothing must be one of {SMOOTHERS} or None; got {kind!r}")
    return kind


def fit_spectrum_model(f: ArrayLike, kind: str = "power_law") -> Optional[SpectrumModel]:
    """Fit a parametric model to a spectrum.

    Parameters
    ----------
    f : array-like of shape (L,)
        Spectrum, ``f[s]`` = number of clusters of size ``s`` (``f[0]`` ignored).
    kind : {"power_law", "poisson", "negbin"}

    Returns
    -------
    SpectrumModel or None
        ``None`` if the spectrum cannot support the fit.

    Notes
    -----
    O(L · |β grid|) for the power law, O(L) plus one scalar root-find for the others.
    """
    _check_kind(kind)
    f = np.asarray(f, dtype=np.float64)
    sizes = np.nonzero(f[1:] > 0)[0] + 1
    if sizes.size == 0:
        return None
    counts = f[sizes]
    k_total = float(counts.sum())
    if kind == "power_law":
        return _fit_power_law(sizes.astype(np.float64), counts)
    mean = float((sizes * counts).sum() / k_total)
    if kind == "negbin":
        var = float(((sizes - mean) ** 2 * counts).sum() / k_total)
        if var > mean * (1.0 + 1e-9):
            p = mean / var
            r = mean * mean / (var - mean)
            p0 = stats.nbinom.pmf(0, r, p)
            return SpectrumModel(
                "negbin",
                {"r": r, "p": p, "K": k_total},
                lambda s: k_total * stats.nbinom.pmf(np.rint(s), r, p) / (1.0 - p0),
            )
        # not over-dispersed: the negative binomial degenerates to the Poisson
    return _fit_zero_truncated_poisson(mean, k_total)


def _fit_power_law(sizes: NDArray[np.float64], counts: NDArray[np.float64]) -> Optional[SpectrumModel]:
    if sizes.size < 2:
        return None
    y = np.log(counts)
    best: Optional[tuple[float, float, float, float]] = None
    for beta in _BETA_GRID:
        x = np.log(beta + sizes)
        xc = x - x.mean()
        denom = float(xc @ xc)
        if denom <= 0:
            continue
        slope = float(xc @ (y - y.mean())) / denom
        intercept = float(y.mean() - slope * x.mean())
        sse = float(((y - intercept - slope * x) ** 2).sum())
        if best is None or sse < best[0] - 1e-12:
            best = (sse, float(beta), slope, intercept)
    if best is None:
        return None
    _, beta, slope, intercept = best
    c = float(np.exp(intercept))
    a = -slope
    return SpectrumModel("power_law", {"C": c, "a": a, "beta": beta}, lambda s: c * np.power(beta + s, -a))


def _fit_zero_truncated_poisson(mean: float, k_total: float) -> SpectrumModel:
    if mean <= 1.0 + 1e-12:
        # every cluster has size 1: the zero-truncated Poisson tends to a point mass at 1
        return SpectrumModel("poisson", {"lam": 0.0, "K": k_total}, lambda s: np.where(s == 1, k_total, 0.0))
    lam = float(optimize.brentq(lambda x: x / -np.expm1(-x) - mean, 1e-12, mean, xtol=1e-14))
    norm = -np.expm1(-lam)
    return SpectrumModel(
        "poisson", {"lam": lam, "K": k_total}, lambda s: k_total * stats.poisson.pmf(np.rint(s), lam) / norm
    )


def smooth_spectrum(f: ArrayLike, kind: str) -> NDArray[np.float64]:
    """Replace ``f_s`` (``s ≥ 1``) by its fitted value; keeps the raw spectrum when no fit is possible.

    Parameters
    ----------
    f : array-like of shape (L,)
    kind : {"power_law", "poisson", "negbin"}

    Returns
    -------
    ndarray of shape (L,), float64, ``out[0] == 0``.
    """
    f = np.asarray(f, dtype=np.float64)
    model = fit_spectrum_model(f, kind)
    if model is None:
        out = f.copy()
    else:
        out = np.zeros_like(f)
        out[1:] = model(np.arange(1, f.size))
    if out.size:
        out[0] = 0.0
    return out

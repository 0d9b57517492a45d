"""Unseen-cluster estimators: how many new clusters would ``m = t·n`` further draws reveal?

Every estimator maps a subset's spectrum ``f`` (``f[s]`` = number of clusters seen exactly
``s`` times among ``n`` items) to ``Û_t``. All but Chao1 are *linear* in the spectrum,

    Û_t = Σ_{s≥1} c_s f_s,      c_s = −(−t)^s · w_s,

and differ only in the weights ``w_s`` (SPEC §3):

============== ============================================ ====================================
name           weights ``w_s``                              valid / proven range of ``t``
============== ============================================ ====================================
paper          ``P(Bin(M, α/(t+α)) ≥ s)``, ``s ≤ M``        any ``t > 0`` (no guarantee for t > 1)
poisson        ``P(Poisson(r) ≥ s)``,                       ``1 < t ≲ log n`` (GT for ``t ≤ 1``)
               ``r = ln(n(t+1)²/(t−1)) / (2t)``
binomial       ``P(Bin(k, 2/(t+2)) ≥ s)``,                  ``1 < t ≲ log n`` (GT for ``t ≤ 1``)
               ``k = ⌈½ log₃(n t²/(t−1))⌉``
efron_thisted  ``P(Bin(k, 1/(t+1)) ≥ s)``,                  ``1 < t ≲ log n`` (GT for ``t ≤ 1``)
               ``k = ⌈½ log₂(n t²/(t−1))⌉``
good_toulmin   ``1``                                        ``t ≤ 1`` (diverges beyond)
chao1          — (``((n−1)/n) f₁(f₁−1) / (2(f₂+1))``)       ``t`` ignored: total unseen richness
============== ============================================ ====================================

Outputs are finite by construction (a non-finite value becomes 0) and clamped:

* ``paper`` — ``max(0, Û)`` only; its very large values are part of what it is (see
  ``docs/estimators.md``) and are *not* capped. ``integer=True`` floors the result as the
  authors' code does (reference parity).
* ``poisson``, ``binomial``, ``efron_thisted``, ``good_toulmin`` — clamped to ``[0, n·t]``:
  ``Û`` counts new clusters among ``n·t`` new draws. Outside their valid range of ``t`` they
  still return the clamped value (documented, not an error).
* ``chao1`` — ``max(0, Û)``.

The coefficient vectors depend only on the estimator's parameters (and on ``n`` for the
Orlitsky–Suresh–Wu estimators); they are computed once and cached.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ucs.estimators.smoothing import SMOOTHERS, fit_spectrum_model

__all__ = [
    "ESTIMATORS",
    "UnseenEstimator",
    "PaperSGT",
    "PoissonSmoothedGT",
    "BinomialSmoothedGT",
    "EfronThisted",
    "GoodToulmin",
    "Chao1",
    "make_estimator",
    "resolve_estimator_name",
]


def _check_t(t: Any) -> float:
    try:
        t = float(t)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"t (the expansion factor m/|S|) must be a positive number; got {t!r}") from exc
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"t (the expansion factor m/|S|) must be a finite number > 0; got {t!r}")
    return t


@lru_cache(maxsize=8192)
def _tail_coefficients(kind: str, t: float, a: float, b: float) -> NDArray[np.float64]:
    """``c[s] = −(−t)^s · w_s`` for ``s = 0..L`` with ``c[0] = 0``; cached, read-only.

    ``kind`` selects ``w``: ``"binom"`` (``a`` trials, success ``b``), ``"poisson"`` (rate ``a``,
    ``b`` = number of terms) or ``"ones"`` (``a`` = number of terms).
    """
    if kind == "binom":
        n_terms = int(a)
        s = np.arange(1, n_terms + 1)
        w = stats.binom.sf(s - 1, n_terms, b)
    elif kind == "poisson":
        n_terms = int(b)
        s = np.arange(1, n_terms + 1)
        w = stats.poisson.sf(s - 1, a)
    elif kind == "ones":
        n_terms = int(a)
        s = np.arange(1, n_terms + 1)
        w = np.ones(n_terms)
    else:  # pragma: no cover - internal
        raise AssertionError(kind)
    with np.errstate(over="ignore", invalid="ignore"):
        c = -np.power(-t, s.astype(np.float64)) * w
    out = np.zeros(n_terms + 1)
    out[1:] = np.where(np.isfinite(c), c, 0.0)
    out.setflags(write=False)
    return out


def _fit_width(F: NDArray[np.int64], width: int) -> NDArray[np.int64]:
    """Pad with zeros or trim the columns of ``F`` to ``width``."""
    if F.shape[1] == width:
        return F
    if F.shape[1] > width:
        return F[:, :width]
    out = np.zeros((F.shape[0], width), dtype=F.dtype)
    out[:, : F.shape[1]] = F
    return out


class UnseenEstimator:
    """Base class: maps spectra to ``Û_t``.

    Subclasses implement :meth:`coefficients` (linear estimators) or override
    :meth:`unseen_batch`. :meth:`unseen` is the batch of one, so a single evaluation and a
    batched one give bit-identical results.

    Parameters
    ----------
    t : float, default=5.0
        Expansion factor ``m / |S|`` (> 0).
    """

    #: registry name
    name: str = ""
    #: whether the result is capped at ``n·t``
    capped: bool = True

    def __init__(self, t: float = 5.0) -> None:
        self.t = t

    # -- parameters ---------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (sklearn style)."""
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {k: getattr(self, k) for k in sig.parameters if k != "self"}

    def _validate(self) -> None:
        self.t = _check_t(self.t)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- the estimator ------------------------------------------------------------------
    def coefficients(self, n: int) -> NDArray[np.float64]:
        """Coefficient vector ``c`` (``c[0] = 0``) for subsets of size ``n``. Cached."""
        raise NotImplementedError

    def valid_t_range(self, n: int) -> tuple[float, float]:
        """``(low, high)``: the range of ``t`` in which the estimator is proven accurate for ``n`` items."""
        raise NotImplementedError

    def _transform_spectra(self, F: NDArray[np.int64], width: int) -> NDArray[np.float64]:
        """The spectra the linear sum runs over, as ``width`` columns (bins ``0..width-1``)."""
        return _fit_width(F, width).astype(np.float64)

    def unseen_batch(self, F: ArrayLike, n: int) -> NDArray[np.float64]:
        """``Û_t`` for each row of a batch of spectra of subsets of the same size ``n``.

        Parameters
        ----------
        F : array-like of shape (r, L)
            Spectra, ``F[j, s]`` = clusters seen ``s`` times in subset ``j``.
        n : int
            Subset size ``Σ_s s·F[j, s]`` (the same for every row).

        Returns
        -------
        ndarray of shape (r,)

        Notes
        -----
        O(r · L) time. The coefficient vector is cached per ``n``.
        """
        return self._finish(self.raw_unseen_batch(F, n), n)

    def raw_unseen_batch(self, F: ArrayLike, n: int) -> NDArray[np.float64]:
        """The estimator's value before clamping (``Σ_s c_s F[j, s]`` for linear estimators), shape (r,)."""
        self._validate()
        F = np.atleast_2d(np.asarray(F))
        if n <= 0:
            return np.zeros(F.shape[0])
        c = self.coefficients(n)
        G = self._transform_spectra(F, c.size)
        return (G * c).sum(axis=1)

    def _finish(self, raw: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        out = raw if np.isfinite(raw).all() else np.where(np.isfinite(raw), raw, 0.0)
        out = np.maximum(out, 0.0)
        if self.capped:
            out = np.minimum(out, n * self.t)
        return out

    def unseen(self, f: ArrayLike, n: Optional[int] = None) -> float:
        """``Û_t`` of one spectrum ``f`` (``n`` defaults to ``Σ s·f_s``)."""
        f = np.asarray(f)
        if f.ndim != 1:
            raise ValueError(f"f must be a 1-D spectrum; got shape {f.shape}")
        if n is None:
            n = int((np.arange(f.size) * f).sum())
        return float(self.unseen_batch(f[None, :], n)[0])


class PaperSGT(UnseenEstimator):
    """The paper's smoothed Good–Toulmin estimator (appendix A.3), exactly as written.

    ``Û = max(0, Σ_{s=1..M} −(−t)^s P(Bin(M, q) ≥ s) f_s)``, ``q = α/(t+α)``.

    Parameters
    ----------
    t : float, default=5.0
        Expansion factor (> 0).
    bin_size : int, default=20
        Truncation ``M`` (≥ 1): spectrum bins above ``M`` are ignored.
    alpha : float, default=1.0
        Offset ``α`` in ``[1, 2]``.
    integer : bool, default=False
        Floor the result to an integer, as the authors' code does (reference parity).
    smoothing : {None, "power_law", "poisson", "negbin"}, default=None
        Fit a parametric spectrum to the subset's spectrum and use it instead of the raw one.

    Notes
    -----
    Valid for any ``t > 0`` as a formula; accuracy is only proven for ``t ≤ 1`` (Good–Toulmin)
    or with the data-dependent smoothing of :class:`BinomialSmoothedGT`. At ``t = 5, M = 20``
    the coefficients alternate in sign with magnitudes in the thousands (see the docs).
    """

    name = "paper"
    capped = False

    def __init__(
        self,
        t: float = 5.0,
        bin_size: int = 20,
        alpha: float = 1.0,
        integer: bool = False,
        smoothing: Optional[str] = None,
    ) -> None:
        self.t = t
        self.bin_size = bin_size
        self.alpha = alpha
        self.integer = integer
        self.smoothing = smoothing

    def _validate(self) -> None:
        self.t = _check_t(self.t)
        m = self.bin_size
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"bin_size (the truncation M) must be an integer >= 1; got {m!r}")
        a = self.alpha
        if not isinstance(a, (int, float, np.number)) or isinstance(a, bool) or not (1.0 <= float(a) <= 2.0):
            raise ValueError(f"alpha (the offset of q = alpha/(t+alpha)) must lie in [1, 2]; got {a!r}")
        if self.smoothing is not None and self.smoothing not in SMOOTHERS:
            raise ValueError(f"smoothing must be None or one of {SMOOTHERS}; got {self.smoothing!r}")

    def coefficients(self, n: int = 0) -> NDArray[np.float64]:
        """Coefficients ``c_0..c_M`` (independent of ``n``)."""
        self._validate()
        return _tail_coefficients(
            "binom", self.t, float(self.bin_size), float(self.alpha) / (self.t + float(self.alpha))
        )

    def valid_t_range(self, n: int) -> tuple[float, float]:
        return (0.0, 1.0)

    def _transform_spectra(self, F: NDArray[np.int64], width: int) -> NDArray[np.float64]:
        if self.smoothing is None:
            return super()._transform_spectra(F, width)
        out = np.zeros((F.shape[0], width))
        s = np.arange(1, width)
        for j, row in enumerate(F):
            model = fit_spectrum_model(row, self.smoothing)
            out[j, 1:] = model(s) if model is not None else _fit_width(row[None, :], width)[0, 1:]
        return out

    def _finish(self, raw: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        out = super()._finish(raw, n)
        return np.floor(out) if self.integer else out


class _OSWEstimator(UnseenEstimator):
    """Shared logic of the Orlitsky–Suresh–Wu (2016) smoothed estimators: GT for ``t ≤ 1``."""

    def coefficients(self, n: int) -> NDArray[np.float64]:
        self._validate()
        n = int(n)
        if self.t <= 1.0:
            return _tail_coefficients("ones", self.t, float(max(n, 1)), 0.0)
        return self._smoothed_coefficients(n)

    def _smoothed_coefficients(self, n: int) -> NDArray[np.float64]:  # pragma: no cover - abstract
        raise NotImplementedError

    def valid_t_range(self, n: int) -> tuple[float, float]:
        return (0.0, max(1.0, math.log(max(n, 2))))


class PoissonSmoothedGT(_OSWEstimator):
    """Good–Toulmin with Poisson smoothing: ``L ~ Poisson(r)``, ``r = ln(n(t+1)²/(t−1)) / (2t)``.

    For ``t ≤ 1`` it reduces to plain Good–Toulmin. Proven accurate for ``t ≲ log n``; clamped
    to ``[0, n·t]``.
    """

    name = "poisson"

    def _smoothed_coefficients(self, n: int) -> NDArray[np.float64]:
        t = self.t
        r = math.log(n * (t + 1.0) ** 2 / (t - 1.0)) / (2.0 * t)
        return _tail_coefficients("poisson", t, r, float(max(n, 1)))


class BinomialSmoothedGT(_OSWEstimator):
    """Good–Toulmin with binomial smoothing (recommended by Orlitsky–Suresh–Wu).

    ``L ~ Bin(k, q)``, ``q = 2/(t+2)``, ``k = ⌈½ log₃(n t²/(t−1))⌉`` (at least 1). For ``t ≤ 1``
    it reduces to plain Good–Toulmin. Proven accurate for ``t ≲ log n``; clamped to ``[0, n·t]``.
    """

    name = "binomial"
    _q_num = 2.0
    _log_base = 3.0

    def _smoothed_coefficients(self, n: int) -> NDArray[np.float64]:
        t = self.t
        k = max(1, math.ceil(0.5 * math.log(n * t * t / (t - 1.0), self._log_base)))
        q = self._q_num / (t + self._q_num)
        return _tail_coefficients("binom", t, float(k), q)


class EfronThisted(BinomialSmoothedGT):
    """Efron–Thisted: ``L ~ Bin(k, 1/(t+1))``, ``k = ⌈½ log₂(n t²/(t−1))⌉`` (at least 1).

    For ``t ≤ 1`` it reduces to plain Good–Toulmin; clamped to ``[0, n·t]``.
    """

    name = "efron_thisted"
    _q_num = 1.0
    _log_base = 2.0


class GoodToulmin(UnseenEstimator):
    """Plain Good–Toulmin: ``Û = −Σ_s (−t)^s f_s``.

    Unbiased and stable for ``t ≤ 1``; for ``t > 1`` its variance explodes and the result is
    only the clamped value in ``[0, n·t]``.
    """

    name = "good_toulmin"

    def coefficients(self, n: int) -> NDArray[np.float64]:
        self._validate()
        return _tail_coefficients("ones", self.t, float(max(int(n), 1)), 0.0)

    def valid_t_range(self, n: int) -> tuple[float, float]:
        return (0.0, 1.0)


class Chao1(UnseenEstimator):
    """Bias-corrected Chao1 as an unseen count: ``Û = ((n−1)/n) · f₁(f₁−1) / (2(f₂+1))``.

    Chao1 estimates the *total* number of unseen clusters (``t → ∞``); ``t`` is accepted for a
    uniform interface and ignored. The result is ``≥ 0`` and not capped.
    """

    name = "chao1"
    capped = False

    def valid_t_range(self, n: int) -> tuple[float, float]:
        return (math.inf, math.inf)

    def raw_unseen_batch(self, F: ArrayLike, n: int) -> NDArray[np.float64]:
        self._validate()
        F = _fit_width(np.atleast_2d(np.asarray(F)), 3).astype(np.float64)
        if n <= 0:
            return np.zeros(F.shape[0])
        f1, f2 = F[:, 1], F[:, 2]
        # rows of a batch may hold spectra that callers discard (e.g. a bin decremented below 0 for a
        # multiplicity no candidate has); they must not warn, and _finish maps non-finite values to 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return ((n - 1.0) / n) * f1 * (f1 - 1.0) / (2.0 * (f2 + 1.0))


_REGISTRY: dict[str, type[UnseenEstimator]] = {
    cls.name: cls
    for cls in (PaperSGT, PoissonSmoothedGT, BinomialSmoothedGT, EfronThisted, GoodToulmin, Chao1)
}
ESTIMATORS: tuple[str, ...] = tuple(_REGISTRY)
_ALIASES = {"sgt": "paper", "osw": "binomial", "gt": "good_toulmin", "et": "efron_thisted"}


def resolve_estimator_name(name: str) -> str:
    """Canonical estimator name (accepts the aliases ``sgt``, ``osw``, ``gt``, ``et``)."""
    key = str(name).lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        raise ValueError(f"estimator must be one of {ESTIMATORS} (aliases {sorted(_ALIASES)}); got {name!r}")
    return key


def make_estimator(name: str = "paper", **params: Any) -> UnseenEstimator:
    """Build an estimator by name; parameters it does not take raise a ``ValueError``.

    Examples
    --------
    >>> make_estimator("paper", t=5, bin_size=20).coefficients()[1:3].round(2).tolist()
    [4.87, -21.74]
    """
    cls = _REGISTRY[resolve_estimator_name(name)]
    import inspect

    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"estimator {cls.name!r} does not take {unknown}; it takes {accepted}")
    est = cls(**params)
    est._validate()
    return est

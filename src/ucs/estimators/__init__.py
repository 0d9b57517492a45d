"""Unseen-coverage estimators and the coverage functional Φ (SPEC §3–§4).

Spectra, unseen estimators, Φ, its incremental greedy state, and the Good–Turing corpus prior.
"""

from ucs.estimators.coverage import DESIGNS, CoverageReport, CoverageState, UnseenCoverage, combine_design
from ucs.estimators.prior import PRIOR_VARIANTS, GoodTuringPrior
from ucs.estimators.smoothing import SMOOTHERS, SpectrumModel, fit_spectrum_model, smooth_spectrum
from ucs.estimators.spectrum import (
    k_seen,
    multiplicities,
    spectrum,
    spectrum_from_multiplicities,
    validate_cluster_ids,
    validate_subset,
)
from ucs.estimators.unseen import (
    ESTIMATORS,
    BinomialSmoothedGT,
    Chao1,
    EfronThisted,
    GoodToulmin,
    PaperSGT,
    PoissonSmoothedGT,
    UnseenEstimator,
    make_estimator,
    resolve_estimator_name,
)

__all__ = [
    "DESIGNS",
    "ESTIMATORS",
    "PRIOR_VARIANTS",
    "SMOOTHERS",
    "BinomialSmoothedGT",
    "Chao1",
    "CoverageReport",
    "CoverageState",
    "EfronThisted",
    "GoodToulmin",
    "GoodTuringPrior",
    "PaperSGT",
    "PoissonSmoothedGT",
    "SpectrumModel",
    "UnseenCoverage",
    "UnseenEstimator",
    "combine_design",
    "fit_spectrum_model",
    "k_seen",
    "make_estimator",
    "multiplicities",
    "resolve_estimator_name",
    "smooth_spectrum",
    "spectrum",
    "spectrum_from_multiplicities",
    "validate_cluster_ids",
    "validate_subset",
]

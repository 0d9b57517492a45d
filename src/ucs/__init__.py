"""ucs — Unseen Coverage Selection for in-context demonstration selection.

The public API is re-exported here; submodules hold the implementations. Every name but ``__version__`` is
imported on first access (PEP 562), so ``import ucs`` stays light: the clusterer's scikit-learn, the
index's search libraries and the model backends load only when their names are used.

========================  =============================================================================
names                     from
========================  =============================================================================
estimators                ``UnseenCoverage``, ``UnseenEstimator``, ``GoodTuringPrior``, ``make_estimator``
                          (:mod:`ucs.estimators`)
latent clusters           ``LatentClusterer``, ``JointLatentClusterer``, ``cluster_health``,
                          ``ClusterHealth`` (:mod:`ucs.clustering`)
selectors                 ``Selector``, ``Selection``, ``RandomSelector``, ``TopKSelector``,
                          ``DPPSelector``, ``MDLSelector``, ``VoteKSelector``, ``UCSPrior``
                          (:mod:`ucs.selectors`)
data                      ``load_dataset``, ``Dataset``, ``TestProtocol`` (:mod:`ucs.data`)
pipeline                  ``Pipeline``, ``PipelineConfig``, ``PipelineResult`` (:mod:`ucs.pipeline`)
index                     ``SelectorIndex`` (:mod:`ucs.index`)
which selector for me     ``compare``, ``CompareResult`` (:mod:`ucs.experiments.compare`)
========================  =============================================================================
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List

from ucs._version import __version__

#: Public name → the module that defines it.
_EXPORTS: Dict[str, str] = {
    **dict.fromkeys(
        ("UnseenCoverage", "UnseenEstimator", "GoodTuringPrior", "make_estimator"), "ucs.estimators"
    ),
    **dict.fromkeys(
        ("LatentClusterer", "JointLatentClusterer", "cluster_health", "ClusterHealth"), "ucs.clustering"
    ),
    **dict.fromkeys(
        (
            "Selector",
            "Selection",
            "RandomSelector",
            "TopKSelector",
            "DPPSelector",
            "MDLSelector",
            "VoteKSelector",
            "UCSPrior",
        ),
        "ucs.selectors",
    ),
    **dict.fromkeys(("load_dataset", "Dataset", "TestProtocol"), "ucs.data"),
    **dict.fromkeys(("Pipeline", "PipelineConfig", "PipelineResult"), "ucs.pipeline"),
    "SelectorIndex": "ucs.index",
    **dict.fromkeys(("compare", "CompareResult"), "ucs.experiments.compare"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ucs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_EXPORTS))

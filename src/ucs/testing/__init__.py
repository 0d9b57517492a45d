"""The contracts floor: test doubles and the property batteries every implementation must pass.

Nothing in the production floors imports this package (a test checks it); the ``dummy`` backbone reaches the
pipeline as an entry-point plug-in (:data:`ucs.pipeline.backbones.BACKBONE_PLUGINS`).

- Doubles: :class:`DummyEmbedder`, :class:`DummyLM`, :class:`DummyBackbone` — deterministic, weight-free.
- Selector battery: :func:`check_selector` and :data:`SELECTOR_CHECKS` (λ = 0 equals the base, invariance to
  relabelled clusters, determinism, round trips, bad input); :func:`selector_check_pairs` yields each
  (case, check) pair so that every pair is its own test.
- Model batteries: :func:`check_embedder` and :func:`check_language_model`.
- Clusterer battery: :func:`check_clusterer` (scikit-learn's ``check_estimator`` where it applies, plus the
  project's own checks).
"""

from ucs.testing.clustering import CLUSTERER_CHECKS, check_clusterer
from ucs.testing.doubles import DummyBackbone, DummyEmbedder, DummyLM
from ucs.testing.models import EMBEDDER_CHECKS, LM_CHECKS, check_embedder, check_language_model
from ucs.testing.selectors import CHECKS as SELECTOR_CHECKS
from ucs.testing.selectors import assert_same_selection, check_selector, selector_check_pairs

__all__ = [
    "CLUSTERER_CHECKS",
    "EMBEDDER_CHECKS",
    "LM_CHECKS",
    "SELECTOR_CHECKS",
    "DummyBackbone",
    "DummyEmbedder",
    "DummyLM",
    "assert_same_selection",
    "check_clusterer",
    "check_embedder",
    "check_language_model",
    "check_selector",
    "selector_check_pairs",
]

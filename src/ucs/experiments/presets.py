"""The presets, as the experiments floor has always named them.

The data lives one floor down, in :mod:`ucs.pipeline.presets`, so that
:meth:`ucs.pipeline.PipelineConfig.from_preset` reads it without importing the experiments floor.
"""

from ucs.pipeline.presets import (
                                  COMMON,
                                  COVERAGE_KEYS,
                                  DEFAULT_COVERAGE,
                                  PAPER_COVERAGE,
                                  PRESETS,
                                  TUNED_DBSCAN_Q,
                                  TUNED_LAMBDA,
                                  Preset,
                                  get_preset,
                                  tuned,
)

__all__ = ["COMMON", "TUNED_DBSCAN_Q", "TUNED_LAMBDA", "DEFAULT_COVERAGE", "PAPER_COVERAGE", "COVERAGE_KEYS", "Preset",
           "PRESETS", "get_preset", "tuned"]

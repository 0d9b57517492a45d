"""Paper presets and reproduction experiments."""

from ucs.experiments.presets import COMMON, PRESETS, TUNED_DBSCAN_Q, TUNED_LAMBDA, Preset, get_preset, tuned

__all__ = ["COMMON", "PRESETS", "TUNED_DBSCAN_Q", "TUNED_LAMBDA", "Preset", "get_preset", "tuned"]

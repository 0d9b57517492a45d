"""Paper presets and reproduction experiments (``ucs reproduce``, ``ucs tune``; see docs/reproduce.md).

Heavy modules (the cell runner, rendering, figures, tuning) are imported on use:
:mod:`ucs.experiments.reproduce`, :mod:`ucs.experiments.tune`.
"""

from ucs.experiments.presets import COMMON, PRESETS, TUNED_DBSCAN_Q, TUNED_LAMBDA, Preset, get_preset, tuned
from ucs.experiments.registry import experiment_names, experiments, get_experiment, load_experiment_file
from ucs.experiments.spec import Cell, Experiment, Variant

__all__ = [
    "COMMON", "PRESETS", "TUNED_DBSCAN_Q", "TUNED_LAMBDA", "Preset", "get_preset", "tuned",
    "Cell", "Experiment", "Variant", "experiment_names", "experiments", "get_experiment", "load_experiment_file",
]

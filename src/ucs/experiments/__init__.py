"""Reproduction experiments (``ucs reproduce``, ``ucs tune``; see docs/reproduce.md). The paper's presets are
configuration data: :mod:`ucs.pipeline.presets`.

Heavy modules (the cell runner, rendering, figures, tuning) are imported on use:
:mod:`ucs.experiments.reproduce`, :mod:`ucs.experiments.tune`.
"""

from ucs.experiments.registry import experiment_names, experiments, get_experiment, load_experiment_file
from ucs.experiments.spec import Cell, Experiment, Variant

__all__ = [
    "Cell",
    "Experiment",
    "Variant",
    "experiment_names",
    "experiments",
    "get_experiment",
    "load_experiment_file",
]

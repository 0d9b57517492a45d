"""The registry of reproduction experiments: one JSON file per experiment under ``ucs/resources/experiments``.

>>> from ucs.experiments.registry import experiment_names, get_experiment
>>> "main_table" in experiment_names()
True
>>> get_experiment("sensitivity_budget").kind
'accuracy'
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Dict, List, Sequence

from ucs.experiments.spec import Experiment

__all__ = [
    "ORDER",
    "experiments",
    "experiment_names",
    "get_experiment",
    "resolve_names",
    "load_experiment_file",
]

#: Listing order: the paper's order of tables and figures, then the project's own studies.
ORDER = (
    "main_table",
    "bbeh_table",
    "coverage_exposure",
    "cluster_sizes",
    "joint_dictionary",
    "sensitivity_tm",
    "sensitivity_budget",
    "ablation_embedding",
    "ablation_clustering",
    "ablation_design",
    "ablation_rarity",
    "runtime",
    "estimator_study",
    "coverage_health",
    "healthy_ucs",
    "beyond_topk",
)


def load_experiment_file(path: "str | Path") -> Experiment:
    """An :class:`Experiment` from a JSON file (a shipped one or your own in the same format)."""
    p = Path(path)
    return Experiment.from_dict(json.loads(p.read_text(encoding="utf-8")), config_file=p.name)


@lru_cache(maxsize=1)
def experiments() -> Dict[str, Experiment]:
    """Every shipped experiment, by name, in :data:`ORDER` (files not listed there follow, by name)."""
    root = resources.files("ucs") / "resources" / "experiments"
    found: Dict[str, Experiment] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            exp = Experiment.from_dict(json.loads(entry.read_text(encoding="utf-8")), config_file=entry.name)
            if exp.name in found:
                raise ValueError(f"two experiment files define {exp.name!r}")
            found[exp.name] = exp
    order = [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)
    return {n: found[n] for n in order}


def experiment_names() -> List[str]:
    return list(experiments())


def get_experiment(name: str) -> Experiment:
    try:
        return experiments()[name]
    except KeyError:
        raise ValueError(
            f"unknown experiment {name!r}; valid names: {', '.join(experiment_names())}"
        ) from None


def resolve_names(spec: "str | Sequence[str] | None") -> List[str]:
    """``"a,b"`` or a list → validated names in the given order; ``None`` → all. Unknown names raise
    ``ValueError`` listing every valid one."""
    if spec is None:
        return experiment_names()
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s and s.strip()]
    bad = [s for s in items if s not in experiments()]
    if bad or not items:
        raise ValueError(
            f"unknown experiment(s) {bad or items}; valid names: {', '.join(experiment_names())}"
        )
    return list(dict.fromkeys(items))

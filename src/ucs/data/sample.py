"""A small intent dataset shipped inside the package, for demos and tests without downloads.

``ucs/resources/sample_intents.jsonl``: 10 intents (weather, alarms, music, restaurant booking, taxis,
account balance, translation, recipes, flight status, smart lights) × 20 short utterances, 15 per intent in
the pool and 5 in the test split. The utterances were written for this project (not taken from any
benchmark) and are released with it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ucs.data.dataset import Dataset
from ucs.data.table import load_table

__all__ = ["load_sample", "sample_path"]


def sample_path() -> Path:
    """Filesystem path of the shipped sample file."""
    return Path(str(resources.files("ucs") / "resources" / "sample_intents.jsonl"))


def load_sample() -> Dataset:
    """The shipped sample: pool 150, test 50, 10 intents."""
    return load_table(sample_path(), split_column="split", name="sample", task="intent")

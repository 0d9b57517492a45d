"""``load_dataset``: one entry point for every dataset the project knows, by name, from files or the hub."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from ucs.data.bbeh import BBEH_TASKS, load_bbeh
from ucs.data.dataset import Dataset
from ucs.data.hwu64_parse import load_hwu64_parse
from ucs.data.public import load_banking77, load_clinc150, load_hwu64
from ucs.data.sample import load_sample
from ucs.data.table import TABLE_SUFFIXES, load_table

__all__ = ["load_dataset", "available_datasets", "check_dataset_name"]

_FILE_LOADERS: dict[str, Callable[..., Dataset]] = {
    "banking77": load_banking77,
    "clinc150": load_clinc150,
    "hwu64": load_hwu64,
    "hwu64_parse": load_hwu64_parse,
}
_ALIASES = {
    "banking": "banking77",
    "clinc": "clinc150",
    "hwu": "hwu64",
    **{t: f"bbeh_{t}" for t in BBEH_TASKS},
}


def available_datasets() -> list[str]:
    """Registry names accepted by :func:`load_dataset` (aliases not included)."""
    return sorted([*_FILE_LOADERS, *(f"bbeh_{t}" for t in BBEH_TASKS), "sample"])


def check_dataset_name(name: str) -> str:
    """``name`` if :func:`load_dataset` knows it (a registry name, an alias or a table path); else
    ``ValueError``."""
    if Path(name).suffix.lower() in TABLE_SUFFIXES:
        return name
    key = _ALIASES.get(name.strip().lower(), name.strip().lower())
    if (
        key == "sample"
        or key in _FILE_LOADERS
        or (key.startswith("bbeh_") and key[len("bbeh_") :] in BBEH_TASKS)
    ):
        return name
    raise ValueError(
        f"unknown dataset {name!r}; known datasets are {available_datasets()}, "
        f"or pass the path of a {'/'.join(TABLE_SUFFIXES)} file"
    )


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    source: str = "files",
    **options: Any,
) -> Dataset:
    """Load a dataset by registry name, or a user table by file path.

    Parameters
    ----------
    name : str
        One of :func:`available_datasets` (``banking77``, ``clinc150``, ``hwu64``, ``hwu64_parse``,
        ``bbeh_causal_understanding``, ``bbeh_object_properties``, ``bbeh_shuffled_objects``, ``sample``;
        case-insensitive, the ``bbeh_`` prefix optional), or the path of a ``.csv``/``.tsv``/``.jsonl``
        file (options are passed to :func:`~ucs.data.load_table`).
    data_dir : path, optional
        Directory holding the original public files (``banking77/``, ``clinc150/``, ``hwu64/``, ``bbeh/``).
        Default ``$UCS_DATA_DIR``, else ``./data``.
    source : {"files", "hub"}
        ``"hub"`` loads the intent datasets from the Hugging Face hub (needs the ``data`` extra and network).
    **options
        Loader options: ``pool_fraction``/``split_seed`` (BBEH), ``fold`` (HWU64), ``form`` (``hwu64_parse``:
        ``"call"`` or ``"json"``), ``merge_validation``,
        ``revision``, ``loader`` (hub).

    Raises
    ------
    ValueError
        Unknown name or source (the message lists the valid ones).
    ucs.data.MissingDataError
        A required file is missing (the message names the path).
    ucs.data.DatasetError
        A file is malformed, a label is absent from the label list, or a split is empty.
    """
    if source not in ("files", "hub"):
        raise ValueError(f"source must be 'files' or 'hub', got {source!r}")
    path = Path(name)
    if path.suffix.lower() in TABLE_SUFFIXES and name not in _ALIASES:
        if source == "hub":
            raise ValueError("source='hub' loads registry datasets only; a table file is read from disk")
        return load_table(path, **options)
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if source == "hub":
        from ucs.data.hub import HUB_IDS, load_from_hub

        if key not in HUB_IDS:
            raise ValueError(f"no hub copy is registered for {name!r}; hub datasets are {sorted(HUB_IDS)}")
        return load_from_hub(key, **options)
    if key == "sample":
        if options:
            raise ValueError(f"the sample dataset takes no options, got {sorted(options)}")
        return load_sample()
    if key in _FILE_LOADERS:
        return _FILE_LOADERS[key](data_dir, **options)
    if key.startswith("bbeh_") and key[len("bbeh_") :] in BBEH_TASKS:
        return load_bbeh(key, data_dir, **options)
    raise ValueError(
        f"unknown dataset {name!r}; known datasets are {available_datasets()}, "
        f"or pass the path of a {'/'.join(TABLE_SUFFIXES)} file"
    )

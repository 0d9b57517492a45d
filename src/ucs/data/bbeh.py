"""BIG-Bench Extra Hard tasks from their public ``task.json`` files (google-deepmind/bbeh).

Each task file is ``{"examples": [{"input": str, "target": str}, ...], "canary": str}`` with 200 examples and
no split. The pool/test split is seeded and configurable: the paper states 80/20 (pool 160, test 40) —
the default; the authors' code used 2/3 vs 1/3 (``pool_fraction=2/3``: pool 133, test 67).
The label names are the distinct targets of the whole file, sorted (3, 46 and 7 for the three tasks).
"""

from __future__ import annotations

import os

from ucs.data._files import file_hashes, read_json, require_file, resolve_data_dir
from ucs.data.dataset import Dataset, DatasetError, MissingDataError, Split, encode_labels, validate
from ucs.data.splits import pool_test_split

__all__ = ["load_bbeh", "BBEH_TASKS"]

#: The three BBEH tasks the paper evaluates.
BBEH_TASKS = ("causal_understanding", "object_properties", "shuffled_objects")


def _natural_key(s: str) -> tuple:
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


def load_bbeh(
    task: str,
    data_dir: str | os.PathLike[str] | None = None,
    pool_fraction: float = 0.8,
    split_seed: int = 42,
) -> Dataset:
    """One BBEH task split into pool and test.

    Parameters
    ----------
    task : str
        ``"causal_understanding"``, ``"object_properties"`` or ``"shuffled_objects"`` (a ``bbeh_`` prefix
        is accepted). Read from ``<data_dir>/bbeh/bbeh_<task>/task.json`` (the layout of the public
        repository) or ``<data_dir>/bbeh/<task>/task.json``.
    pool_fraction : float
        Fraction of the examples in the pool: 0.8 (paper, default) or 2/3 (authors' code).
    split_seed : int
        Seed of the random pool/test split.
    """
    short = task[len("bbeh_") :] if task.startswith("bbeh_") else task
    if short not in BBEH_TASKS:
        raise ValueError(f"task must be one of {BBEH_TASKS}, got {task!r}")
    root = resolve_data_dir(data_dir)
    candidates = [root / "bbeh" / f"bbeh_{short}" / "task.json", root / "bbeh" / short / "task.json"]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise MissingDataError(
            f"BBEH {short}: expected {candidates[0]} (or {candidates[1]}) but neither exists. Point data_dir "
            "at a directory holding the bbeh/ folder of google-deepmind/bbeh's benchmark_tasks."
        )
    require_file(path, f"BBEH {short}")
    data = read_json(path)
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, list) or not examples:
        raise DatasetError(f"{path}: expected a JSON object with a non-empty 'examples' list")
    texts, targets = [], []
    for i, ex in enumerate(examples):
        if not (
            isinstance(ex, dict) and isinstance(ex.get("input"), str) and isinstance(ex.get("target"), str)
        ):
            raise DatasetError(f"{path}: examples[{i}] must be an object with string 'input' and 'target'")
        texts.append(ex["input"])
        targets.append(ex["target"].strip())
    names = tuple(sorted(set(targets), key=_natural_key))
    ids, _ = encode_labels(targets, names, where=str(path))
    pool_idx, test_idx = pool_test_split(len(texts), pool_fraction, split_seed)
    all_split = Split(tuple(texts), ids)
    ds = Dataset(
        name=f"bbeh_{short}",
        task="reasoning",
        label_names=names,
        pool=all_split.subset(pool_idx),
        test=all_split.subset(test_idx),
        source=file_hashes(root, [path]),
        info={
            "pool_fraction": float(pool_fraction),
            "split_seed": int(split_seed),
            "pool_indices": pool_idx.tolist(),
            "test_source_indices": test_idx.tolist(),
            "n_examples": len(texts),
        },
    )
    return validate(ds)

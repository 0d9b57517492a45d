"""The :class:`Dataset` container, its splits and load-time validation.

A dataset is a labelled candidate *pool* (the demonstrations a selector may choose from) and a
labelled *test* split (the queries). Labels are integer ids into ``label_names``; texts are plain
Python strings. Everything is immutable so one loaded dataset can be shared by many runs.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from ucs.utils.io import hash_texts

__all__ = [
    "Split",
    "Dataset",
    "ValidationReport",
    "DatasetError",
    "MissingDataError",
    "DatasetWarning",
    "validate",
    "split_description",
    "normalize_text",
    "encode_labels",
]

#: Task kinds: ``"intent"`` (classification over a label list) or ``"reasoning"`` (free-form answers).
TASKS = ("intent", "reasoning")


class DatasetError(ValueError):
    """A dataset file or in-memory dataset is malformed (the message names the file and the fix)."""


class MissingDataError(FileNotFoundError):
    """A dataset file that a loader needs does not exist (the message names the path it looked for)."""


class DatasetWarning(UserWarning):
    """A dataset loaded but differs from what its public release is known to contain."""


@dataclass(frozen=True, eq=False)
class Split:
    """One split: ``texts`` (n strings) and ``labels`` (int64 array of shape (n,), ids into label names)."""

    texts: tuple[str, ...]
    labels: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "texts", tuple(self.texts))
        labels = np.asarray(self.labels, dtype=np.int64).reshape(-1)
        labels.setflags(write=False)
        object.__setattr__(self, "labels", labels)
        if len(self.texts) != labels.shape[0]:
            raise DatasetError(
                f"a split has {len(self.texts)} texts but {labels.shape[0]} labels; they must be equal"
            )

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices: Sequence[int] | np.ndarray) -> "Split":
        """The rows ``indices`` (in that order) as a new split."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        return Split(tuple(self.texts[i] for i in idx.tolist()), self.labels[idx])


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`validate` found. Duplicates are reported, never dropped.

    Attributes
    ----------
    n_pool, n_test, n_labels : int
        Split sizes and the size of the label list.
    pool_duplicates, test_duplicates : int
        Extra copies of texts that occur more than once inside the split (0 = all distinct).
    cross_duplicates : int
        Test texts that also occur in the pool (a leak for retrieval-based selectors).
    conflicting_texts : int
        Distinct texts that carry more than one label across the two splits.
    labels_missing_from_pool, labels_missing_from_test : tuple of str
        Label names with no example in that split.
    notes : tuple of str
        Human-readable findings, including differences from the public release's known counts.
    """

    n_pool: int
    n_test: int
    n_labels: int
    pool_duplicates: int = 0
    test_duplicates: int = 0
    cross_duplicates: int = 0
    cross_duplicates_normalized: int = 0
    conflicting_texts: int = 0
    labels_missing_from_pool: tuple[str, ...] = ()
    labels_missing_from_test: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {
            "n_pool": self.n_pool,
            "n_test": self.n_test,
            "n_labels": self.n_labels,
            "pool_duplicates": self.pool_duplicates,
            "test_duplicates": self.test_duplicates,
            "cross_duplicates": self.cross_duplicates,
            "cross_duplicates_normalized": self.cross_duplicates_normalized,
            "conflicting_texts": self.conflicting_texts,
            "labels_missing_from_pool": list(self.labels_missing_from_pool),
            "labels_missing_from_test": list(self.labels_missing_from_test),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled pool and test split with their label names and provenance.

    Attributes
    ----------
    name : str
        Registry name (``"banking77"``, ``"bbeh_shuffled_objects"``, ...) or a user-given name.
    task : {"intent", "reasoning"}
        Chooses the default prompt format and test size of the evaluation protocol.
    label_names : tuple of str
        Label id ``k`` is ``label_names[k]``. For reasoning tasks these are the distinct answers.
    pool, test : Split
        Candidate demonstrations and queries.
    source : dict
        Provenance: file path (relative to the data directory) → SHA-256 of its bytes, or hub ids.
    validation : ValidationReport
        Counts and duplicates found when the dataset was loaded.
    info : dict
        Loader-specific facts (split seed and fraction for BBEH, dropped out-of-scope rows, ...).
    """

    name: str
    task: str
    label_names: tuple[str, ...]
    pool: Split
    test: Split
    source: Mapping[str, str] = field(default_factory=dict)
    validation: ValidationReport | None = None
    info: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise DatasetError(f"task must be one of {TASKS}, got {self.task!r}")
        object.__setattr__(self, "label_names", tuple(str(x) for x in self.label_names))
        object.__setattr__(self, "source", dict(self.source))
        object.__setattr__(self, "info", dict(self.info))

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    def label_text(self, labels: np.ndarray | Sequence[int]) -> list[str]:
        """Label names of an array of label ids."""
        names = self.label_names
        return [names[i] for i in np.asarray(labels, dtype=np.int64).reshape(-1).tolist()]

    def with_test(self, indices: Sequence[int] | np.ndarray) -> "Dataset":
        """The same dataset with the test split restricted to ``indices`` (e.g. the protocol's draw)."""
        info = dict(self.info)
        info["test_indices"] = [int(i) for i in np.asarray(indices).reshape(-1)]
        return replace(self, test=self.test.subset(indices), info=info)

    def fingerprint(self) -> str:
        """SHA-256 over name, label names, texts and labels of both splits (a content key for caches)."""
        h = hashlib.sha256()
        h.update(self.name.encode())
        h.update(hash_texts(list(self.label_names)).encode())
        for split in (self.pool, self.test):
            h.update(hash_texts(list(split.texts)).encode())
            h.update(np.ascontiguousarray(split.labels, dtype="<i8").tobytes())
        return h.hexdigest()

    def summary(self) -> str:
        """A few lines describing the dataset and its validation report."""
        lines = [
            f"{self.name} ({self.task}): pool {len(self.pool)}, test {len(self.test)}, {self.n_labels} labels"
        ]
        if self.validation is not None:
            v = self.validation
            lines.append(
                f"duplicates: pool {v.pool_duplicates}, test {v.test_duplicates}, "
                f"test-in-pool {v.cross_duplicates}, conflicting labels {v.conflicting_texts}"
            )
            lines.extend(v.notes)
        return "\n".join(lines)


def encode_labels(
    raw_labels: Sequence[str], label_names: Sequence[str] | None = None, where: str = "the data"
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Map string labels to ids.

    With ``label_names`` given, every label must be in it (else :class:`DatasetError` naming ``where``);
    without, the names are the sorted distinct labels.
    """
    raw = [str(x) for x in raw_labels]
    if label_names is None:
        names = tuple(sorted(set(raw)))
    else:
        names = tuple(str(x) for x in label_names)
        if len(set(names)) != len(names):
            dup = [k for k, c in Counter(names).items() if c > 1]
            raise DatasetError(f"label list for {where} has duplicate names: {dup[:5]}")
    index = {n: i for i, n in enumerate(names)}
    unknown = sorted({x for x in raw if x not in index})
    if unknown:
        raise DatasetError(
            f"{len(unknown)} label(s) in {where} are absent from the label list: {unknown[:5]}"
            + (" ..." if len(unknown) > 5 else "")
        )
    return np.fromiter((index[x] for x in raw), dtype=np.int64, count=len(raw)), names


def _extra_copies(texts: Sequence[str]) -> int:
    return len(texts) - len(set(texts))


_PUNCT = re.compile(r"[^\w\s]+")


def normalize_text(text: str) -> str:
    """``text`` case-folded, punctuation dropped and runs of whitespace made one space (for overlap
    counts)."""
    return " ".join(_PUNCT.sub(" ", text.casefold()).split())


def split_description(dataset: Dataset) -> str:
    """Where a dataset's pool/test split came from, in words (for run summaries)."""
    info = dataset.info or {}
    if "split_column" in info:
        return f"the table's {info['split_column']!r} column"
    if "pool_fraction" in info:
        return (
            f"a seeded random split ({float(info['pool_fraction']):.0%} pool, seed {info.get('split_seed')})"
        )
    if "pool_split" in info:
        return f"the release's {info['pool_split']} and {info.get('test_split', 'test')} splits"
    if len(dataset.source or {}) == 2:
        return "separate pool and test files"
    return "as loaded"


def validate(dataset: Dataset, expected: Mapping[str, int] | None = None) -> Dataset:
    """Check a dataset and attach a :class:`ValidationReport`.

    Raises :class:`DatasetError` for what makes evaluation impossible: an empty pool or test split, label
    ids outside the label list, empty texts. Reports (does not drop) duplicates, test texts present in the
    pool and texts with conflicting labels. ``expected`` (keys ``n_pool``, ``n_test``, ``n_labels``) are the
    public release's counts; a difference is recorded in the report's notes and warned about with
    :class:`DatasetWarning`.

    Time O(N) with hashing, memory O(N) for the text sets.
    """
    name = dataset.name
    if len(dataset.pool) == 0:
        raise DatasetError(f"dataset {name!r} has an empty pool split")
    if len(dataset.test) == 0:
        raise DatasetError(f"dataset {name!r} has an empty test split")
    n_labels = dataset.n_labels
    if len(set(dataset.label_names)) != n_labels:
        raise DatasetError(f"dataset {name!r} has duplicate label names")
    for split_name, split in (("pool", dataset.pool), ("test", dataset.test)):
        if split.labels.size and (split.labels.min() < 0 or split.labels.max() >= n_labels):
            raise DatasetError(
                f"dataset {name!r}: {split_name} labels must be ids in [0, {n_labels}); "
                f"found {int(split.labels.min())}..{int(split.labels.max())}"
            )
        empty = [i for i, t in enumerate(split.texts) if not t.strip()]
        if empty:
            raise DatasetError(f"dataset {name!r}: {split_name} rows {empty[:5]} have empty text")

    pool_texts, test_texts = dataset.pool.texts, dataset.test.texts
    pool_set = set(pool_texts)
    labels_of: dict[str, set[int]] = {}
    for split in (dataset.pool, dataset.test):
        for t, y in zip(split.texts, split.labels.tolist()):
            labels_of.setdefault(t, set()).add(y)
    conflicting = sum(1 for s in labels_of.values() if len(s) > 1)
    present_pool = set(np.unique(dataset.pool.labels).tolist())
    present_test = set(np.unique(dataset.test.labels).tolist())
    notes: list[str] = []
    if expected:
        actual = {"n_pool": len(pool_texts), "n_test": len(test_texts), "n_labels": n_labels}
        for key, want in expected.items():
            if actual.get(key) != want:
                msg = f"{name}: {key} is {actual.get(key)}, the public release has {want}"
                notes.append(msg)
                warnings.warn(msg, DatasetWarning, stacklevel=3)
    cross = sum(1 for t in test_texts if t in pool_set)
    pool_norm = {normalize_text(t) for t in pool_texts}
    cross_norm = sum(1 for t in test_texts if normalize_text(t) in pool_norm)
    if cross_norm:
        msg = (
            f"{name}: {cross_norm} of {len(test_texts)} test texts are also in the pool ({cross} exactly, "
            "the rest "
            "after normalising case, spacing and punctuation): those queries can be shown their own text as "
            "a "
            "demonstration"
        )
        warnings.warn(msg, DatasetWarning, stacklevel=3)
    report = ValidationReport(
        n_pool=len(pool_texts),
        n_test=len(test_texts),
        n_labels=n_labels,
        pool_duplicates=_extra_copies(pool_texts),
        test_duplicates=_extra_copies(test_texts),
        cross_duplicates=cross,
        cross_duplicates_normalized=cross_norm,
        conflicting_texts=conflicting,
        labels_missing_from_pool=tuple(
            dataset.label_names[i] for i in range(n_labels) if i not in present_pool
        ),
        labels_missing_from_test=tuple(
            dataset.label_names[i] for i in range(n_labels) if i not in present_test
        ),
        notes=tuple(notes),
    )
    return replace(dataset, validation=report)

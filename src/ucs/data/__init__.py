"""Datasets: loaders for the paper's benchmarks (original files or the hub), user tables, seeded splits.

>>> from ucs.data import load_dataset
>>> ds = load_dataset("sample")
>>> len(ds.pool), len(ds.test), ds.n_labels
(150, 50, 10)
"""

from ucs.data.bbeh import BBEH_TASKS, load_bbeh
from ucs.data.dataset import (
    Dataset,
    DatasetError,
    DatasetWarning,
    MissingDataError,
    Split,
    ValidationReport,
    encode_labels,
    validate,
)
from ucs.data.hwu64_parse import PARSE_FORMS, load_hwu64_parse, parse_annotation
from ucs.data.public import EXPECTED_COUNTS, load_banking77, load_clinc150, load_hwu64
from ucs.data.registry import available_datasets, load_dataset
from ucs.data.sample import load_sample, sample_path
from ucs.data.splits import (
    DEFAULT_TEST_SIZE,
    PAPER_RUN_SEEDS,
    TestProtocol,
    draw_test_indices,
    pool_test_split,
)
from ucs.data.table import load_table, read_table

__all__ = [
    "BBEH_TASKS",
    "DEFAULT_TEST_SIZE",
    "EXPECTED_COUNTS",
    "PAPER_RUN_SEEDS",
    "PARSE_FORMS",
    "Dataset",
    "DatasetError",
    "DatasetWarning",
    "MissingDataError",
    "Split",
    "TestProtocol",
    "ValidationReport",
    "available_datasets",
    "draw_test_indices",
    "encode_labels",
    "load_banking77",
    "load_bbeh",
    "load_clinc150",
    "load_dataset",
    "load_hwu64",
    "load_hwu64_parse",
    "load_sample",
    "load_table",
    "parse_annotation",
    "pool_test_split",
    "read_table",
    "sample_path",
    "validate",
]

"""The file-name rules for method names in a run folder: aliases of :mod:`ucs.evaluation.run_folder`, which
defines them (with every other name of a run folder) once."""

from __future__ import annotations

from ucs.evaluation.run_folder import RECORDS, method_file_stem, selection_file_stem

__all__ = ["RECORDS", "method_file_stem", "selection_file_stem"]

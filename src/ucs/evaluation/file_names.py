"""The file-name rules for method names (``dpp+ucs``) in a run's folder, each defined once.

Two rules exist because files of both kinds are already on disk and resumed runs must find them:
the runner's cached selections replace every character outside ``[A-Za-z0-9._-]`` by ``_``
(``selections/dpp_ucs__seed42__...npy``); the pipeline's diagnostics and the experiments' per-method files
spell ``+`` as ``_plus_`` (``pipeline/coverage/dpp_plus_ucs__seed42__8q.json``).
"""

from __future__ import annotations

__all__ = ["RECORDS", "method_file_stem", "selection_file_stem"]

#: The record file of a run folder (JSON Lines, one answered query per line).
RECORDS = "records.jsonl"


def method_file_stem(method: str) -> str:
    """``"dpp+ucs"`` → ``"dpp_plus_ucs"``: a method name in diagnostics and experiment file names."""
    return method.replace("+", "_plus_")


def selection_file_stem(method: str) -> str:
    """``"dpp+ucs"`` → ``"dpp_ucs"``: a method name in the runner's cached selection files."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in method)

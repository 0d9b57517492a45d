"""A content-addressed store of model answers to prompts, shared by evaluations.

In the greedy, greedy-strict and likelihood modes the answer to a prompt is a function of the model, the
prediction mode, the label set and the prompt text alone; in sampled modes (the paper's T = 0.1) it is a
function of those and the prompt's sample seed, since every language model samples prompt ``i`` of a call
with seed ``seed + i`` (the ``sample_seeds`` clause of :func:`ucs.testing.check_language_model`).
Experiments that differ only in what they vary elsewhere (another test size, a shared base selector, an
estimator that selects the same demonstrations) then send identical prompts; the store lets every evaluation
that points at the same directory answer each of them once.

Layout: ``<root>/<key[:2]>/<key>.jsonl`` where ``key`` is the SHA-256 of everything besides the prompt that
determines an answer (model identity, mode, prompt format, chat template flag, label names, continuations).
Each line is ``{"prompt_sha256", "raw_output", "parsed_id"[, "margin"][, "answered_on"], "_check"}``
(``answered_on``: the CPU kind that computed the answer, :func:`ucs.utils.cpu.machine_signature`; lines
written before it existed lack it), appended and flushed per batch; a torn last line (an interrupted write)
is skipped when reading, and a line that fails its checksum or the schema (a label id out of range, a missing
field) is skipped with a warning and answered again. A store of sampled answers keys its lines by
``"sample_sha256"`` (:func:`sample_key` of the prompt hash and the sample seed) instead of
``"prompt_sha256"``, so a long sampled evaluation (BBEH in paper mode) resumes from committed answers on any
machine.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Iterable, Optional

from ucs.utils.store import KeyedJsonlStore, fields_key

__all__ = ["AnswerStore", "answer_key", "answer_key_of", "sample_key"]


def answer_key(fields: Dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``fields``."""
    return fields_key(fields)


def sample_key(prompt_sha256: str, sample_seed: int) -> str:
    """Key of a sampled answer: SHA-256 of the prompt's hash and the seed the prompt was sampled with."""
    return hashlib.sha256(f"{prompt_sha256}:{int(sample_seed)}".encode()).hexdigest()


def answer_key_of(record: dict, sampled: bool) -> Optional[str]:
    """The key an evaluation record's answer is known by: its prompt hash, or in sampled modes its
    :func:`sample_key` (``None`` for a sampled record without ``sample_seed``, written before sampled answers
    were kept, and for a record without ``prompt_sha256``)."""
    if "prompt_sha256" not in record:
        return None
    if not sampled:
        return record["prompt_sha256"]
    seed = record.get("sample_seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        return None
    return sample_key(record["prompt_sha256"], seed)


class AnswerStore(KeyedJsonlStore):
    """Answers of one (model, mode, label set, format) to prompts, on disk under ``root``.

    Look an answer up with ``get(prompt_sha256)`` (``None`` if absent).

    Parameters
    ----------
    root : path
        Directory of the store (created on first write).
    fields : dict
        What besides the prompt determines an answer; hashed into the file name.
    sampled : bool, default=False
        Answers of a sampled mode, keyed by :func:`sample_key` (``"sample_sha256"``).

    Notes
    -----
    Loading reads the one file of this key: ``O(answers)`` time and memory. Lookups are dictionary hits.
    Several processes may append to the same file (each batch is written by one ``write`` call).
    """

    def __init__(self, root: "str | os.PathLike[str]", fields: Dict[str, Any], sampled: bool = False) -> None:
        super().__init__(root, fields, key_field="sample_sha256" if sampled else "prompt_sha256")
        self.fields = dict(fields)
        self.sampled = sampled

    def validate(self, entry: dict) -> Optional[str]:
        """Schema of an answer: a string output and a label id in range (or ``None``: no label parsed)."""
        problem = super().validate(entry)
        if problem is not None:
            return problem
        n_labels = len(self.fields.get("labels", ()))
        pid = entry.get("parsed_id", "missing")
        if not isinstance(entry.get("raw_output"), str):
            return "no string 'raw_output'"
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < n_labels):
            return f"'parsed_id' {pid!r} is not a label id in [0, {n_labels})"
        if "margin" in entry and not isinstance(entry["margin"], (int, float)):
            return "'margin' is not a number"
        if "answered_on" in entry and not isinstance(entry["answered_on"], str):
            return "'answered_on' is not a string"
        return None

    def add(self, records: Iterable[dict]) -> int:
        """Store the answers of evaluation ``records`` not stored yet; returns how many were written."""

        def entries():
            for r in records:
                key = answer_key_of(r, self.sampled)
                if key is None:
                    continue
                entry = {self.key_field: key, "raw_output": r["raw_output"], "parsed_id": r["parsed_id"]}
                for k in ("margin", "answered_on"):  # answered_on: the CPU kind (absent in older lines)
                    if k in r:
                        entry[k] = r[k]
                yield entry

        return self.put(entries())

"""A content-addressed store of model answers to prompts, shared by evaluations in deterministic modes.

In the greedy, greedy-strict and likelihood modes the answer to a prompt is a function of the model, the
prediction mode, the label set and the prompt text alone. Experiments that differ only in what they vary
elsewhere (another test size, a shared base selector, an estimator that selects the same demonstrations)
then send identical prompts; the store lets every evaluation that points at the same directory answer
each of them once.

Layout: ``<root>/<key[:2]>/<key>.jsonl`` where ``key`` is the SHA-256 of everything besides the prompt that
determines an answer (model identity, mode, prompt format, chat template flag, label names, continuations).
Each line is ``{"prompt_sha256", "raw_output", "parsed_id"[, "margin"]}``, appended and flushed per batch;
a torn last line (an interrupted write) is skipped when reading. Sampled modes never use the store.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

__all__ = ["AnswerStore", "answer_key"]


def answer_key(fields: Dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``fields``."""
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerStore:
    """Answers of one (model, mode, label set, format) to prompts, on disk under ``root``.

    Parameters
    ----------
    root : path
        Directory of the store (created on first write).
    fields : dict
        What besides the prompt determines an answer; hashed into the file name.

    Notes
    -----
    Loading reads the one file of this key: ``O(answers)`` time and memory. Lookups are dictionary hits.
    Several processes may append to the same file (each line is written by one ``write`` call).
    """

    def __init__(self, root: "str | os.PathLike[str]", fields: Dict[str, Any]) -> None:
        self.key = answer_key(fields)
        self.path = Path(root) / self.key[:2] / f"{self.key}.jsonl"
        self._answers: Optional[Dict[str, dict]] = None

    def _load(self) -> Dict[str, dict]:
        if self._answers is None:
            self._answers = {}
            if self.path.is_file():
                with open(self.path, encoding="utf-8") as fh:
                    for line in fh:
                        try:
                            rec = json.loads(line)
                        except json.JSONDecodeError:
                            continue  # a torn line of an interrupted write
                        if isinstance(rec, dict) and "prompt_sha256" in rec:
                            self._answers.setdefault(rec["prompt_sha256"], rec)
        return self._answers

    def __len__(self) -> int:
        return len(self._load())

    def get(self, prompt_sha256: str) -> Optional[dict]:
        """The stored answer to the prompt with this hash, or ``None``."""
        return self._load().get(prompt_sha256)

    def add(self, records: Iterable[dict]) -> int:
        """Store the answers of evaluation ``records`` not stored yet; returns how many were written."""
        answers = self._load()
        lines = []
        for r in records:
            h = r["prompt_sha256"]
            if h in answers:
                continue
            entry = {"prompt_sha256": h, "raw_output": r["raw_output"], "parsed_id": r["parsed_id"]}
            if "margin" in r:
                entry["margin"] = r["margin"]
            answers[h] = entry
            lines.append(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        if lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as fh:
                if fh.tell() > 0:  # end a torn line first, so that it spoils only itself
                    with open(self.path, "rb") as rd:
                        rd.seek(-1, os.SEEK_END)
                        if rd.read(1) != b"\n":
                            fh.write(b"\n")
                fh.write("".join(lines).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
        return len(lines)

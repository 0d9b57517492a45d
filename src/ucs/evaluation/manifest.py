"""A run folder's ``manifest.json``: what configuration it holds, on what machine, and how far it got.

The manifest's ``key`` is the resume check: a run into a folder whose key differs is refused with
:class:`ConfigurationMismatchError`, naming each differing field. ``status`` is ``running`` while a run
writes, then ``complete`` / ``partial``, or ``interrupted`` / ``failed`` when it stopped early
(:func:`record_stop`). Every write is atomic.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Optional, Sequence

from ucs.evaluation.run_folder import MANIFEST, RunFolder, read_manifest
from ucs.utils.cpu import cpu_details, cpu_model
from ucs.utils.io import atomic_write_json

__all__ = [
    "MANIFEST",
    "ConfigurationMismatchError",
    "config_differences",
    "finish_manifest",
    "open_manifest",
    "package_versions",
    "platform_info",
    "read_manifest",
    "record_stop",
]

_VERSIONED = (
    "ucs-icl",
    "numpy",
    "scipy",
    "scikit-learn",
    "torch",
    "transformers",
    "sentence-transformers",
    "llama_cpp_python",
    "faiss-cpu",
    "datasets",
)


#: What a run made with a weight-free test double (``--model dummy``) says wherever its numbers are shown.
TEST_DOUBLE_NOTE = (
    "TEST DOUBLE: this run's backbone is a weight-free test double (hash-seeded vectors and a toy "
    "scorer, no language model); its accuracies say nothing about any model"
)


def is_test_double(model_identity: Any) -> bool:
    """Whether a run's model identity (the manifest key's ``model``) is one of :mod:`ucs.testing`'s
    doubles."""
    if not isinstance(model_identity, dict):
        return False
    names = [
        model_identity.get("model"),
        (model_identity.get("lm") or {}).get("model") if isinstance(model_identity.get("lm"), dict) else None,
    ]
    return any(isinstance(n, str) and n.startswith("dummy") for n in names)


def package_versions(names: Sequence[str] = _VERSIONED) -> dict[str, str]:
    """Installed versions of the packages that can change results (absent ones omitted), plus Python's."""
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    if "ucs-icl" not in out:
        from ucs._version import __version__

        out["ucs"] = __version__
    return out


def platform_info() -> dict[str, Any]:
    """Python version, machine, OS, CPU model, its ids and kernel-relevant flags, and CPU count of this
    process's machine."""
    info = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "system": platform.system(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    details = cpu_details()
    if details:
        info["cpu_details"] = details
    return info


class ConfigurationMismatchError(ValueError):
    """An output folder holds records of another configuration (the differing fields are named)."""

    def __init__(self, folder: Path, differences: list[str]) -> None:
        self.folder = Path(folder)
        self.differences = differences
        shown = "; ".join(differences[:4]) + (
            f"; and {len(differences) - 4} more" if len(differences) > 4 else ""
        )
        super().__init__(
            f"{self.folder} holds results of a different configuration (differs in: {shown}); use another "
            "output "
            "folder, or --fresh to move the old one aside and start over"
        )


def config_differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the fields that differ between two configurations, with both values (``a.b: x →
    y``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            if old.get(k) != new.get(k):
                out += config_differences(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out

    def short(v: Any) -> str:
        t = json.dumps(v, default=str)
        return t if len(t) <= 40 else t[:37] + "..."

    return [f"{prefix or 'value'}: {short(old)} → {short(new)}"]


def open_manifest(
    out: Path,
    key: dict,
    methods: Sequence[str],
    run_seeds: Sequence[int],
    test_seed: int,
    limit: Optional[int],
) -> dict:
    """Check ``out``'s manifest against ``key`` and write it as ``running``; returns the manifest written.

    Its ``methods`` are the folder's earlier methods followed by the new ones of ``methods``. Raises
    :class:`ConfigurationMismatchError` when the folder holds another configuration.
    """
    path = RunFolder(out).manifest
    previous: list[str] = []
    if path.exists():
        old = read_manifest(path)
        old_key = old.get("key", {})
        if old_key != key:
            raise ConfigurationMismatchError(out, config_differences(old_key, key))
        previous = list(old.get("methods", []))
    manifest = {
        "key": key,
        "methods": previous + [m for m in methods if m not in previous],
        "seeds": {"test_seed": test_seed, "run_seeds": list(run_seeds)},
        "limit": limit,
        "versions": package_versions(),
        "platform": platform_info(),
        "status": "running",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write_json(path, manifest)
    return manifest


def finish_manifest(
    out: Path, manifest: dict, complete: bool, n_records: int, fingerprints: Optional[dict] = None
) -> None:
    """Mark the manifest ``complete`` (every method answered every query) or ``partial``, with the record
    count and, when given, each method's fingerprints
    (:func:`ucs.evaluation.fingerprints.record_fingerprints`)."""
    manifest["status"] = "complete" if complete else "partial"
    manifest["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest["n_records"] = n_records
    if fingerprints is not None:
        manifest["fingerprints"] = fingerprints
    atomic_write_json(RunFolder(out).manifest, manifest)


def record_stop(manifest_path: Path, exc: BaseException) -> None:
    """Replace a ``running`` status in the manifest by why the run stopped (what was written stays)."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(manifest, dict) or manifest.get("status") != "running":
        return
    manifest["status"] = "interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "failed"
    manifest["stopped_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if manifest["status"] == "failed":
        manifest["error"] = f"{type(exc).__name__}: {exc}"[:500]
    atomic_write_json(manifest_path, manifest)

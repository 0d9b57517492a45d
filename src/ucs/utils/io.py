"""Atomic, pickle-free persistence helpers.

Every file the library writes (caches, results, fitted models) goes through these
functions: the data is written to a temporary file in the target directory and moved
into place with :func:`os.replace`, so a crash never leaves a half-written file and
nothing already computed is lost.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Tuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

# The process umask, read once at import (os.umask has no getter, and setting it from
# worker threads would race).
_UMASK = os.umask(0o022)
os.umask(_UMASK)

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "dumps_json",
    "atomic_save_npy",
    "atomic_save_npz",
    "load_npy",
    "load_verified_npy",
    "hash_array",
    "hash_texts",
    "hash_file",
]


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same directory + ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file with mode 0600; give it the permissions a plain open()
        # would (0666 minus the umask) so shared result folders and caches stay readable.
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path: PathLike, text: str) -> Path:
    """Write UTF-8 text atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: PathLike, obj: Any, indent: int = 2, inline_scalar_lists: bool = False) -> Path:
    """Write ``obj`` as JSON atomically (keys sorted, so equal objects give equal files).

    ``inline_scalar_lists=True`` writes each list of scalars on one line (:func:`dumps_json`): the
    same JSON value, about half the bytes for files that hold per-query vectors.
    """
    if inline_scalar_lists:
        return atomic_write_text(path, dumps_json(obj, indent=indent))
    return atomic_write_text(
        path, json.dumps(obj, indent=indent, sort_keys=True, default=json_default) + "\n"
    )


def dumps_json(obj: Any, indent: int = 2) -> str:
    """``obj`` as indented JSON with sorted keys, each list of scalars on one line, ending in a newline.

    ``json.loads`` of the result equals ``json.loads(json.dumps(obj, default=json_default))``: only the
    whitespace differs from ``json.dumps(obj, indent=indent, sort_keys=True)``. O(size of ``obj``).
    """
    plain = json.loads(json.dumps(obj, default=json_default))

    def enc(x: Any, level: int) -> str:
        pad, end = " " * (indent * (level + 1)), " " * (indent * level)
        if isinstance(x, dict) and x:
            items = [f"{pad}{json.dumps(k)}: {enc(x[k], level + 1)}" for k in sorted(x)]
            return "{\n" + ",\n".join(items) + "\n" + end + "}"
        if isinstance(x, list) and any(isinstance(v, (dict, list)) for v in x):
            return "[\n" + ",\n".join(pad + enc(v, level + 1) for v in x) + "\n" + end + "]"
        if isinstance(x, list):
            return "[" + ", ".join(json.dumps(v) for v in x) + "]"
        return json.dumps(x)

    return enc(plain, 0) + "\n"


def atomic_save_npy(path: PathLike, array: np.ndarray) -> Path:
    """Save one array as ``.npy`` atomically, never with pickled objects."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return atomic_write_bytes(path, buf.getvalue())


def atomic_save_npz(path: PathLike, **arrays: np.ndarray) -> Path:
    """Save several arrays as a compressed ``.npz`` atomically."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return atomic_write_bytes(path, buf.getvalue())


def load_npy(path: PathLike) -> np.ndarray:
    """Load a ``.npy`` file without ever unpickling."""
    return np.load(path, allow_pickle=False)


def load_verified_npy(npy: PathLike, manifest: PathLike, fmt: int) -> Optional[Tuple[dict, np.ndarray]]:
    """The JSON manifest and the array of a cache entry, or ``None`` when either file is absent or unreadable,
    the manifest's ``format`` is not ``fmt``, or the array's :func:`hash_array` is not its ``sha256``.
    The caller checks what else the manifest promises (shape, rows). Cost: one read and hash, O(array
    size)."""
    npy, manifest = Path(npy), Path(manifest)
    if not (npy.is_file() and manifest.is_file()):
        return None
    try:
        man = json.loads(manifest.read_text(encoding="utf-8"))
        arr = load_npy(npy)
    except (OSError, ValueError):
        return None
    if not isinstance(man, dict) or man.get("format") != fmt or hash_array(arr) != man.get("sha256"):
        return None
    return man, arr


def hash_array(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes (C order): a content key for caches."""
    arr = np.ascontiguousarray(array)
    h = hashlib.sha256()
    h.update(str(arr.dtype.str).encode())
    h.update(repr(arr.shape).encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def hash_texts(texts: "list[str] | tuple[str, ...]") -> str:
    """SHA-256 of a sequence of texts (order matters; texts are length-prefixed, so joins cannot collide)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8", errors="surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def hash_file(path: PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for numpy scalars and arrays and paths; anything else is a TypeError."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")

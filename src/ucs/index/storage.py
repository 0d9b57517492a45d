"""Saving and loading a :class:`~ucs.index.SelectorIndex` without pickle, in versions switched atomically.

Layout of an index directory::

    CURRENT           the number of the version readers load ("3\\n"), replaced atomically (temp + os.replace)
    versions/<n>/     one complete, immutable version:
        index.json        format version, parameters, embedder identity, SHA-256 of every other file, and its
        own
                          SHA-256 (:func:`ucs.utils.integrity.seal_record`): a hand-edited manifest is refused
        examples.json     the examples, in index order
        <name>.npy        embeddings (N, d) float32, cluster_ids (N,), the clusterer-space rows ``rep``, the
        HNSW
                          graph, Set-BSR's pool token vectors and their offsets: one ``.npy`` each,
                          memory-mapped
        clusterer/        the fitted clusterer (:func:`ucs.clustering.save_clusterer`), when there is one
    .lock             taken (``flock``) by a writer for the length of a save

A save writes ``versions/<n+1>`` under a temporary name, fsyncs every file and folder, renames it into place,
then replaces ``CURRENT``: the one rename that switches readers. A process killed at any point leaves
``CURRENT`` naming version ``n`` or ``n+1``, both complete. The last :data:`KEEP_VERSIONS` versions are kept
(the one ``CURRENT`` names is never removed), so a reader that loaded ``n`` keeps serving it: its arrays are
memory-mapped, and an open mapping outlives the file's removal on POSIX.

A folder written before versions (``index.json`` at the top, arrays in ``arrays.npz``, format ``ucs.index/2``)
loads as version 0; saving into it writes ``versions/1`` and removes the old top-level files after the switch.
Loading hashes every file the manifest lists before reading it and refuses the index, naming the file, when a
hash differs.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from ucs._version import __version__
from ucs.clustering import LatentClusterer, load_clusterer, save_clusterer
from ucs.embedding.adapters import as_embedder
from ucs.index.examples import check_json_examples, resolve_keys
from ucs.selectors.bsr import PackedTokens
from ucs.selectors.votek import VoteGraph
from ucs.utils.integrity import seal_record, sealed_record_ok
from ucs.utils.io import atomic_write_text, dumps_json, hash_file

__all__ = [
    "IndexIntegrityError",
    "save_index",
    "load_index",
    "latest_version",
    "resolve_version",
    "KEEP_VERSIONS",
    "TOKEN_DTYPE",
]

MANIFEST = "index.json"
CURRENT = "CURRENT"
VERSIONS = "versions"
LEGACY_FORMAT = "ucs.index/2"
#: Versions kept after a save: the new one and the two before it.
KEEP_VERSIONS = 3
#: Storage type of Set-BSR's pool token vectors: float32, memory-mapped as stored. float16 would halve the
#: file but changed one Set-BSR selection in 200 BANKING77 test queries (benchmarks/index/RESULTS_load.md).
TOKEN_DTYPE = np.float32
_LEGACY_FILES = ("arrays.npz", "examples.json", "clusterer")
_GRAPH_FIELDS = ("voters", "targets", "votes", "first_vote")


class IndexIntegrityError(ValueError):
    """A stored index file is missing, unreadable or not the file that was saved."""


# ---------------------------------------------------------------------------------------------- versions
def _fsync_dir(d: Path) -> None:
    """Make a folder's entries (a rename, a new file) durable; a no-op where folders cannot be opened."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(d: Path) -> None:
    for p in sorted(d.rglob("*"), reverse=True):
        if p.is_file():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
        else:
            _fsync_dir(p)
    _fsync_dir(d)


@contextmanager
def _writer_lock(root: Path) -> Iterator[None]:
    """One writer at a time per index folder (``flock`` on ``.lock``; released by the kernel if it dies)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; one writer per folder is the caller's to ensure
        yield
        return
    with open(root / ".lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _version_numbers(root: Path) -> List[int]:
    vdir = root / VERSIONS
    if not vdir.is_dir():
        return []
    return sorted(int(p.name) for p in vdir.iterdir() if p.name.isdigit() and p.is_dir())


def latest_version(root: Path) -> Optional[int]:
    """The version ``CURRENT`` names (0 for a folder written before versions); ``None`` when ``root`` holds no
    index. One small file read: cheap enough to poll."""
    pointer = root / CURRENT
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return 0 if (root / MANIFEST).is_file() else None
    except OSError as exc:
        raise IndexIntegrityError(f"{pointer} is not readable ({exc}); save the index again") from exc
    if not text.isdigit():
        raise IndexIntegrityError(
            f"{pointer} holds {text[:40]!r}, not a version number; save the index again"
        )
    return int(text)


def resolve_version(root: Path, version: Optional[int] = None) -> "tuple[Path, int]":
    """The folder holding ``version`` of the index at ``root`` (default: the one ``CURRENT`` names) and its
    number. ``root`` may also be one version's own folder (``.../versions/<n>``) or a folder written before
    versions."""
    if not (root / CURRENT).is_file() and (root / MANIFEST).is_file():
        own = int(root.name) if root.parent.name == VERSIONS and root.name.isdigit() else 0
        if version not in (None, own):
            raise IndexIntegrityError(f"{root} holds only version {own}; asked for version {version}")
        return root, own
    n = latest_version(root) if version is None else int(version)
    if n is None:
        raise IndexIntegrityError(
            f"{root} holds no index ({CURRENT} and {MANIFEST} are missing); write one with SelectorIndex.save"
        )
    d = root / VERSIONS / str(n)
    if not d.is_dir():
        kept = _version_numbers(root)
        raise IndexIntegrityError(
            f"{d} is missing: version {n} of {root} is not stored (kept: {kept}); load "
            "another version or save the index again"
        )
    return d, n


def _prune(root: Path, current: int) -> None:
    """Remove versions older than the :data:`KEEP_VERSIONS` newest up to ``current`` (never ``current``)."""
    numbers = [n for n in _version_numbers(root) if n <= current]
    for n in numbers[:-KEEP_VERSIONS]:
        shutil.rmtree(root / VERSIONS / str(n), ignore_errors=True)


def _drop_legacy(root: Path) -> None:
    """After the switch to versions: the top-level files of the old layout, manifest first."""
    (root / MANIFEST).unlink(missing_ok=True)
    for name in _LEGACY_FILES:
        p = root / name
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------- save
def _clusterer_spec(clusterer: Any) -> Optional[Dict[str, Any]]:
    if clusterer is None or isinstance(clusterer, dict):
        return None if clusterer is None else {"class": "LatentClusterer", "params": dict(clusterer)}
    return {"class": type(clusterer).__name__, "params": clusterer.get_params(deep=False)}


def _index_arrays(index: Any) -> Dict[str, np.ndarray]:
    arrays = {"embeddings": index.embeddings_, "cluster_ids": index.cluster_ids_}
    if index.rep_ is not None:
        arrays["rep"] = index.rep_
    arrays.update(index.search_.state())
    tokens = getattr(index.selector_, "pool_tokens_", None)
    if tokens is not None:  # Set-BSR: stored so that loading never re-encodes the pool
        arrays["bsr_tokens"] = np.asarray(tokens.rows, dtype=TOKEN_DTYPE)
        arrays["bsr_token_offsets"] = tokens.offsets
    graph = getattr(index.selector_, "graph_", None)
    if isinstance(graph, VoteGraph):  # VoteK: stored so that loading never recomputes the O(N²·d) graph
        arrays.update({f"votek_{name}": getattr(graph, name) for name in _GRAPH_FIELDS})
    return arrays


def _stored_selector_state(arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """What the selector reads instead of computing it: Set-BSR's pool tokens, VoteK's vote graph."""
    state: Dict[str, Any] = {}
    if "bsr_tokens" in arrays:
        state["bsr_tokens"] = PackedTokens.from_arrays(arrays["bsr_tokens"], arrays["bsr_token_offsets"])
    if all(f"votek_{name}" in arrays for name in _GRAPH_FIELDS):
        state["votek_graph"] = VoteGraph(
            **{name: np.asarray(arrays[f"votek_{name}"], dtype=np.int64) for name in _GRAPH_FIELDS}
        )
    return state


def _write_version(index: Any, d: Path) -> None:
    """Write every file of one version into the new folder ``d``, the manifest last."""
    d.mkdir(parents=True)
    (d / "examples.json").write_text(check_json_examples(index.examples_), encoding="utf-8")
    arrays = _index_arrays(index)
    for name, arr in arrays.items():
        np.save(d / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)
    files = ["examples.json"] + [f"{name}.npy" for name in sorted(arrays)]
    if index.clusterer_ is not None:
        save_clusterer(index.clusterer_, d / "clusterer")
        files += [f"clusterer/{p.name}" for p in sorted((d / "clusterer").iterdir()) if p.is_file()]
    manifest = {
        "format": index.FORMAT,
        "ucs_version": __version__,
        "params": {
            "method": index.method_,
            "input_keys": list(index.input_keys_),
            "output_key": index.output_key_,
            "clusterer": _clusterer_spec(index.clusterer),
            "prior": index.prior,
            "selector_params": index.selector_params,
            "candidate_search": index.candidate_search,
            "hnsw": index.hnsw,
            "random_state": int(index.random_state),
            **({"order": index.order} if getattr(index, "order", None) is not None else {}),
        },
        "embedder": dict(index.embedder_identity_),
        "n_examples": int(index.n_examples_),
        "n_added": int(index.n_added_),
        "dim": int(index.embeddings_.shape[1]),
        "arrays": sorted(arrays),
        "files": {name: hash_file(d / name) for name in files},
    }
    (d / MANIFEST).write_text(dumps_json(seal_record(manifest)), encoding="utf-8")
    _fsync_tree(d)  # every file and folder once; the folder becomes visible only by the rename after this


def save_index(index: Any, root: Path) -> "tuple[Path, int]":
    """Write ``index`` as the next version of the folder ``root`` (created) and switch ``CURRENT`` to it.

    Returns the new version's folder and number. A folder written before versions is upgraded: its files stay
    readable until the switch and are removed after it.
    """
    if root.parent.name == VERSIONS and root.name.isdigit() and (root / MANIFEST).is_file():
        raise ValueError(
            f"{root} is one version of the index folder {root.parent.parent}; save into that folder "
            "(a version is never changed after it is written)"
        )
    root.mkdir(parents=True, exist_ok=True)
    with _writer_lock(root):
        current = latest_version(root) if (root / CURRENT).is_file() else None
        legacy = current is None and (root / MANIFEST).is_file()
        n = max([current or 0, *_version_numbers(root)]) + 1
        vdir = root / VERSIONS
        vdir.mkdir(exist_ok=True)
        for stale in vdir.glob(".tmp-*"):  # left by a writer that was killed (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        tmp = vdir / f".tmp-{n}-{os.getpid()}"
        try:
            _write_version(index, tmp)
            os.rename(tmp, vdir / str(n))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _fsync_dir(vdir)
        atomic_write_text(root / CURRENT, f"{n}\n")  # the switch
        _fsync_dir(root)
        if legacy:
            _drop_legacy(root)
        _prune(root, n)
    return vdir / str(n), n


# ---------------------------------------------------------------------------------------------- load
def _read_manifest(d: Path, fmt: str) -> Dict[str, Any]:
    path = d / MANIFEST
    if not path.is_file():
        raise IndexIntegrityError(
            f"{d} holds no index ({MANIFEST} is missing); write one with SelectorIndex.save"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexIntegrityError(f"{path} is not readable JSON ({exc}); save the index again") from exc
    if not isinstance(manifest, dict) or manifest.get("format") not in (fmt, LEGACY_FORMAT):
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise IndexIntegrityError(
            f"{path} has format {found!r}; this version of ucs reads {fmt!r} and "
            f"{LEGACY_FORMAT!r}. Rebuild the index"
        )
    if not sealed_record_ok(manifest):
        raise IndexIntegrityError(
            f"{path} fails its SHA-256 check (it was edited after the index was saved, or its seal is "
            "missing); refusing to load it. Rebuild the index with fit() and save()"
        )
    return manifest


def _verify(d: Path, manifest: Dict[str, Any]) -> None:
    for name, digest in manifest["files"].items():
        path = d / name
        if not path.is_file():
            raise IndexIntegrityError(f"index file {path} is missing; the index is incomplete, save it again")
        if hash_file(path) != digest:
            raise IndexIntegrityError(
                f"index file {path} fails its SHA-256 check (it changed after the index was saved); "
                "refusing to load it. Rebuild the index with fit() and save()"
            )


def _checked_examples(d: Path, examples: Any, p: Dict[str, Any]) -> Any:
    """The stored examples, each with text inputs and a label (an index saved before labels were checked may
    hold ``None`` or a list there: it is refused rather than prompting with it)."""
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        raise IndexIntegrityError(
            f"{d / 'examples.json'} does not hold a list of examples; save the index again"
        )
    try:
        resolve_keys(examples, p["input_keys"], p["output_key"])
    except ValueError as exc:
        raise ValueError(f"{d / 'examples.json'}: {exc}. Fix that example and fit the index again") from None
    return examples


def _read_arrays(d: Path, manifest: Dict[str, Any]) -> Dict[str, np.ndarray]:
    """The verified arrays: memory-mapped read-only ``.npy`` files, or the ``arrays.npz`` of the old
    layout."""
    if manifest["format"] == LEGACY_FORMAT:
        with np.load(d / "arrays.npz", allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    return {
        name: np.load(d / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in manifest["arrays"]
    }


def _new_index(cls: type, p: Dict[str, Any], embedder: Any, lm: Any, d: Path) -> Any:
    spec = p["clusterer"]
    clusterer = None
    if spec is not None:
        if spec["class"] != "LatentClusterer":
            raise IndexIntegrityError(f"{d}: clusterer class {spec['class']!r} is not one ucs can rebuild")
        clusterer = LatentClusterer(**spec["params"])
    index = cls(
        embedder,
        p["method"],
        input_keys=p["input_keys"],
        output_key=p["output_key"],
        clusterer=clusterer,
        prior=p["prior"],
        selector_params=p["selector_params"],
        lm=lm,
        candidate_search=p["candidate_search"],
        hnsw=p["hnsw"],
        random_state=p["random_state"],
        order=p.get("order"),
    )
    index._check_params()
    return index


def _load_version(cls: type, d: Path, embedder: Any, lm: Any) -> Any:
    manifest = _read_manifest(d, cls.FORMAT)
    _verify(d, manifest)
    p = manifest["params"]
    ident = manifest["embedder"]
    embedder = None if embedder is None else as_embedder(embedder)
    if embedder is not None and dict(embedder.identity) != ident:
        raise ValueError(
            f"embedder {dict(embedder.identity).get('model')!r} is not the one this index was built with "
            f"({ident.get('model')!r}); pass the same embedder (identity {ident})"
        )
    index = _new_index(cls, p, embedder, lm, d)
    index.embedder_identity_ = ident
    index.input_keys_, index.output_key_ = tuple(p["input_keys"]), p["output_key"]
    index.examples_ = _checked_examples(d, json.loads((d / "examples.json").read_text(encoding="utf-8")), p)
    arrays = _read_arrays(d, manifest)
    index.embeddings_ = np.ascontiguousarray(arrays["embeddings"], dtype=np.float32)
    index.cluster_ids_ = np.asarray(arrays["cluster_ids"], dtype=np.int64)
    index.rep_ = arrays.get("rep")
    n = manifest["n_examples"]
    if not (len(index.examples_) == n == index.embeddings_.shape[0] == index.cluster_ids_.shape[0]):
        raise IndexIntegrityError(
            f"{d}: examples, embeddings and cluster ids disagree in length; save the index again"
        )
    has_clusterer = any(name.startswith("clusterer/") for name in manifest["files"])
    index.clusterer_ = load_clusterer(d / "clusterer") if has_clusterer else None
    index.n_added_ = int(manifest["n_added"])
    index._build_search(arrays.get("hnsw_graph"))
    return index._fit_selector(stored=_stored_selector_state(arrays))


def load_index(
    cls: type, root: Path, embedder: Any = None, lm: Any = None, version: Optional[int] = None
) -> Any:
    """Rebuild a :class:`SelectorIndex` from ``root`` (verified), refitting only the cheap selector state.

    Loads the version ``CURRENT`` names (or ``version``) and records its number as ``version_``. When a writer
    removes that version between reading ``CURRENT`` and opening its files (it saved :data:`KEEP_VERSIONS`
    times meanwhile), the newer ``CURRENT`` is read and loaded instead.
    """
    for attempt in range(3):
        d, n = resolve_version(root, version)
        try:
            index = _load_version(cls, d, embedder, lm)
        except (IndexIntegrityError, FileNotFoundError):
            moved = version is None and d.parent.name == VERSIONS and not d.is_dir()
            if not moved or attempt == 2:
                raise
            continue
        index.version_ = n
        return index
    raise AssertionError("unreachable")

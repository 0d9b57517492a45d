"""Saving and loading a :class:`~ucs.index.SelectorIndex` without pickle.

Layout of an index directory::

    index.json        format version, parameters, embedder identity, SHA-256 of every other file, and its own
                      SHA-256 (:func:`ucs.utils.integrity.seal_record`): a hand-edited manifest is refused
    examples.json     the examples, in index order
    arrays.npz        embeddings (N, d) float32, cluster_ids (N,), the clusterer-space rows, the HNSW graph
    clusterer/        the fitted clusterer (:func:`ucs.clustering.save_clusterer`), when there is one

``index.json`` is written last, so a directory whose manifest exists is complete. Loading hashes every file
the manifest lists before reading it and refuses the index, naming the file, when a hash differs.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from ucs._version import __version__
from ucs.clustering import LatentClusterer, load_clusterer, save_clusterer
from ucs.embedding.adapters import as_embedder
from ucs.index.examples import check_json_examples, resolve_keys
from ucs.utils.integrity import seal_record, sealed_record_ok
from ucs.utils.io import atomic_write_bytes, atomic_write_json, atomic_write_text, hash_file

__all__ = ["IndexIntegrityError", "save_index", "load_index"]

MANIFEST = "index.json"


class IndexIntegrityError(ValueError):
    """A stored index file is missing, unreadable or not the file that was saved."""


def _clusterer_spec(clusterer: Any) -> Optional[Dict[str, Any]]:
    if clusterer is None or isinstance(clusterer, dict):
        return None if clusterer is None else {"class": "LatentClusterer", "params": dict(clusterer)}
    return {"class": type(clusterer).__name__, "params": clusterer.get_params(deep=False)}


def save_index(index: Any, d: Path) -> Path:
    """Write ``index`` to directory ``d`` (created; an existing index there is replaced)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / MANIFEST).unlink(missing_ok=True)
    atomic_write_text(d / "examples.json", check_json_examples(index.examples_))
    arrays = {"embeddings": index.embeddings_, "cluster_ids": index.cluster_ids_}
    if index.rep_ is not None:
        arrays["rep"] = index.rep_
    arrays.update(index.search_.state())
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # uncompressed: loading is a copy, not a decompression
    atomic_write_bytes(d / "arrays.npz", buf.getvalue())
    files = ["examples.json", "arrays.npz"]
    if (d / "clusterer").is_dir():
        shutil.rmtree(d / "clusterer")
    if index.clusterer_ is not None:
        save_clusterer(index.clusterer_, d / "clusterer")
        files += [f"clusterer/{p.name}" for p in sorted((d / "clusterer").iterdir()) if p.is_file()]
    manifest = {
        "format": index.FORMAT,
        "ucs_version": __version__,
        "params": {
            "method": index.method_, "input_keys": list(index.input_keys_), "output_key": index.output_key_,
            "clusterer": _clusterer_spec(index.clusterer), "prior": index.prior,
            "selector_params": index.selector_params, "candidate_search": index.candidate_search,
            "hnsw": index.hnsw, "random_state": int(index.random_state),
            **({"order": index.order} if getattr(index, "order", None) is not None else {}),
        },
        "embedder": dict(index.embedder_identity_),
        "n_examples": int(index.n_examples_), "n_added": int(index.n_added_), "dim": int(index.embeddings_.shape[1]),
        "arrays": sorted(arrays),
        "files": {name: hash_file(d / name) for name in files},
    }
    atomic_write_json(d / MANIFEST, seal_record(manifest))
    return d


def _read_manifest(d: Path, fmt: str) -> Dict[str, Any]:
    path = d / MANIFEST
    if not path.is_file():
        raise IndexIntegrityError(f"{d} holds no index ({MANIFEST} is missing); write one with SelectorIndex.save")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexIntegrityError(f"{path} is not readable JSON ({exc}); save the index again") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise IndexIntegrityError(f"{path} has format {found!r}; this version of ucs reads {fmt!r}. Rebuild the index")
    if not sealed_record_ok(manifest):
        raise IndexIntegrityError(
            f"{path} fails its SHA-256 check (it was edited after the index was saved, or its seal is missing); "
            "refusing to load it. Rebuild the index with fit() and save()")
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
        raise IndexIntegrityError(f"{d / 'examples.json'} does not hold a list of examples; save the index "
                                  "again")
    try:
        resolve_keys(examples, p["input_keys"], p["output_key"])
    except ValueError as exc:
        raise ValueError(f"{d / 'examples.json'}: {exc}. Fix that example and fit the index again") from None
    return examples


def load_index(cls: type, d: Path, embedder: Any = None, lm: Any = None) -> Any:
    """Rebuild a :class:`SelectorIndex` from ``d`` (verified), refitting only the cheap selector state."""
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
    spec = p["clusterer"]
    clusterer = None
    if spec is not None:
        if spec["class"] != "LatentClusterer":
            raise IndexIntegrityError(f"{d}: clusterer class {spec['class']!r} is not one ucs can rebuild")
        clusterer = LatentClusterer(**spec["params"])
    index = cls(
        embedder, p["method"], input_keys=p["input_keys"], output_key=p["output_key"], clusterer=clusterer,
        prior=p["prior"], selector_params=p["selector_params"], lm=lm, candidate_search=p["candidate_search"],
        hnsw=p["hnsw"], random_state=p["random_state"], order=p.get("order"),
    )
    index._check_params()
    index.embedder_identity_ = ident
    index.input_keys_, index.output_key_ = tuple(p["input_keys"]), p["output_key"]
    index.examples_ = _checked_examples(d, json.loads((d / "examples.json").read_text(encoding="utf-8")), p)
    with np.load(d / "arrays.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    index.embeddings_ = np.ascontiguousarray(arrays["embeddings"], dtype=np.float32)
    index.cluster_ids_ = arrays["cluster_ids"].astype(np.int64)
    index.rep_ = arrays.get("rep")
    n = manifest["n_examples"]
    if not (len(index.examples_) == n == index.embeddings_.shape[0] == index.cluster_ids_.shape[0]):
        raise IndexIntegrityError(f"{d}: examples, embeddings and cluster ids disagree in length; save the index again")
    has_clusterer = any(name.startswith("clusterer/") for name in manifest["files"])
    index.clusterer_ = load_clusterer(d / "clusterer") if has_clusterer else None
    index.n_added_ = int(manifest["n_added"])
    index._build_search(arrays.get("hnsw_graph"))
    return index._fit_selector()

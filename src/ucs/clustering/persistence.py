"""Save and reload fitted clusterers without pickle: ``meta.json`` (parameters, fitted
scalars, input hash) + ``state.npz`` (arrays) + ``labels.npy``, written atomically.

Format ``ucs.clustering/2`` adds to ``meta.json`` the number of fitted items (``n_samples``) and, under
``sha256``, the content hash (:func:`~ucs.utils.io.hash_array`) of every array in ``state.npz`` and of
``labels.npy``. :func:`load_clusterer` verifies all of them and the shapes (``labels_`` and
``kth_distances_`` have ``n_samples`` rows) and raises :class:`DamagedClustererError` naming the file on any
mismatch, so damaged or edited state is never used. Format ``/1`` directories (no hashes) still load, with
the shape checks only. A new fitted array only has to be added to ``arrays`` in :func:`save_clusterer` to be
saved and verified.
"""

from __future__ import annotations

import errno
import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np
from numpy.typing import ArrayLike

from ..utils.io import atomic_save_npy, atomic_save_npz, atomic_write_json, hash_array, json_default, load_npy
from .auto import AutoChoice
from .graph import LinkageGraph
from .preprocessing import PCAProjection, Standardizer

__all__ = ["save_clusterer", "load_clusterer", "StaleLabelsError", "DamagedClustererError", "FORMAT"]

FORMAT = "ucs.clustering/2"
_READABLE = ("ucs.clustering/1", FORMAT)
_SCALARS = (
    "eps_",
    "n_clusters_",
    "n_noise_",
    "input_hash_",
    "n_features_in_",
    "dict_n_steps_",
    "timings_",
    "knn_exact_",
    "chosen_method_",
)
_ARRAYS = ("kth_distances_", "dictionary_", "codes_", "cluster_centers_")


class StaleLabelsError(ValueError):
    """The embeddings given at load time are not the ones the clusterer was fitted on."""


class DamagedClustererError(ValueError):
    """A saved clusterer's files fail verification (hash, shape or format); refit and save it again."""


#: Clusterer classes that :func:`load_clusterer` can rebuild, by class name (filled by :func:`persistent`).
_CLASSES: Dict[str, type] = {}


def persistent(cls: type) -> type:
    """Class decorator: let :func:`load_clusterer` rebuild ``cls`` from the ``class`` field of ``meta.json``
    (the clusterers register themselves, so this module needs not import them)."""
    _CLASSES[cls.__name__] = cls
    return cls


def save_clusterer(est: Any, directory: "str | Path") -> Path:
    """Write a fitted :class:`LatentClusterer` (or joint clusterer) to ``directory``."""
    est._check_fitted()
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    arrays: Dict[str, np.ndarray] = {"labels_": est.labels_}
    for name in _ARRAYS:
        v = getattr(est, name, None)
        if v is not None:
            arrays[name] = v
    scalers = getattr(est, "scalers_", None) or (
        [est.scaler_] if getattr(est, "scaler_", None) is not None else []
    )
    pcas = getattr(est, "pcas_", None) or ([est.pca_] if getattr(est, "pca_", None) is not None else [])
    for i, s in enumerate(scalers):
        if s is not None:
            for k, v in s.state().items():
                arrays[f"scaler{i}_{k}"] = v
    for i, p in enumerate(pcas):
        if p is not None:
            for k, v in p.state().items():
                arrays[f"pca{i}_{k}"] = v
    if getattr(est, "rotations_", None) is not None:
        arrays["rotations_"] = est.rotations_
        arrays["model_scales_"] = est.model_scales_
    if getattr(est, "_graph", None) is not None:
        arrays.update(est._graph.state())
    if getattr(est, "_unit", None) is not None and getattr(est, "_graph", None) is None:
        arrays["unit_rows"] = est._unit
    meta = {
        "format": FORMAT,
        "class": type(est).__name__,
        "params": est.get_params(deep=False),
        "fitted": {k: getattr(est, k, None) for k in _SCALARS},
        "auto_choice": est.auto_choice_.to_dict() if getattr(est, "auto_choice_", None) is not None else None,
        "n_scalers": len(scalers),
        "scaler_present": [s is not None for s in scalers],
        "n_pcas": len(pcas),
        "pca_present": [p is not None for p in pcas],
        "arrays": sorted(arrays),
        "n_samples": int(np.asarray(est.labels_).shape[0]),
        "sha256": {k: hash_array(np.asarray(v)) for k, v in arrays.items()},
    }
    meta = json.loads(json.dumps(meta, default=json_default))
    meta["check"] = _meta_check(meta)
    atomic_save_npz(d / "state.npz", **arrays)
    atomic_save_npy(d / "labels.npy", est.labels_)
    atomic_write_json(d / "meta.json", meta)
    return d


def load_clusterer(directory: "str | Path", E: Optional[ArrayLike] = None) -> Any:
    """Reload a clusterer written by :func:`save_clusterer`.

    Parameters
    ----------
    E : array-like or list of array-like, optional
        The embeddings the labels are meant for; a :class:`StaleLabelsError` is raised when their
        content hash differs from the one recorded at fit time.
    """
    d = Path(directory)
    meta, st = _read_verified(d)
    cls = _CLASSES.get(meta["class"])
    if cls is None:
        raise DamagedClustererError(f"unknown clusterer class {meta['class']!r} in {d / 'meta.json'}")
    est = cls(**meta["params"])
    est.labels_ = st["labels_"].astype(np.int64)
    for k, v in meta["fitted"].items():
        setattr(est, k, v)
    for name in _ARRAYS:
        setattr(est, name, st.get(name))
    if getattr(est, "chosen_method_", None) is None:  # written before the setting existed
        est.chosen_method_ = getattr(est, "method", None)
    est.auto_choice_ = None
    if meta.get("auto_choice") is not None:
        est.auto_choice_ = AutoChoice(**meta["auto_choice"])
    scalers = [
        Standardizer(st[f"scaler{i}_mean_"], st[f"scaler{i}_scale_"]) if present else None
        for i, present in enumerate(meta["scaler_present"])
    ]
    pcas = [
        PCAProjection(st[f"pca{i}_mean_"], st[f"pca{i}_components_"], st[f"pca{i}_explained_variance_"])
        if present
        else None
        for i, present in enumerate(meta["pca_present"])
    ]
    if meta["class"] == "JointLatentClusterer":
        est.scalers_, est.pcas_ = scalers, pcas
        est.rotations_, est.model_scales_ = st["rotations_"], st["model_scales_"]
    else:
        est.scaler_ = scalers[0] if scalers else None
        est.pca_ = pcas[0] if pcas else None
    est._graph = LinkageGraph.from_state(st) if "graph_meta" in st else None
    est._unit = st.get("unit_rows")
    if E is not None and not est.check_input(E):
        raise StaleLabelsError(
            f"the embeddings passed to load() differ from those {d} was fitted on (content hash mismatch); "
            "refit the clusterer on the current embeddings"
        )
    return est


def _meta_check(meta: Dict[str, Any]) -> str:
    """SHA-256 of ``meta``'s canonical JSON without its ``check`` field (parameters and fitted scalars)."""
    body = {k: v for k, v in meta.items() if k != "check"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _damaged(path: Path, what: str) -> DamagedClustererError:
    return DamagedClustererError(f"{path} is damaged ({what}); refit the clusterer and save it again")


def _read_verified(d: Path) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """``meta.json`` and the arrays of ``state.npz``, verified against each other and the recorded hashes."""
    meta_path, state_path, labels_path = d / "meta.json", d / "state.npz", d / "labels.npy"
    for p in (meta_path, state_path):
        if not p.is_file():
            raise FileNotFoundError(errno.ENOENT, f"{d} holds no saved clusterer (missing {p.name})", str(p))
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise _damaged(meta_path, f"not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") not in _READABLE:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise DamagedClustererError(f"{d} does not hold a clusterer in format {FORMAT!r} (found {found!r})")
    for key in ("class", "params", "fitted", "scaler_present", "pca_present"):
        if key not in meta:
            raise _damaged(meta_path, f"no {key!r} field")
    try:
        with np.load(state_path, allow_pickle=False) as z:
            st = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _damaged(state_path, f"unreadable: {exc}") from None
    if "labels_" not in st:
        raise _damaged(state_path, "no labels_")
    hashes = meta.get("sha256")
    if meta["format"] == FORMAT:
        if meta.get("check") != _meta_check(meta):
            raise _damaged(meta_path, "its parameters or fitted values do not match its checksum")
        if not isinstance(hashes, dict) or set(hashes) != set(st):
            raise _damaged(meta_path, "its list of array hashes does not match state.npz")
        for k, v in st.items():
            if hash_array(v) != hashes[k]:
                raise _damaged(state_path, f"array {k!r} does not match its hash")
    n = meta.get("n_samples", st["labels_"].shape[0])
    labels = st["labels_"]
    if labels.ndim != 1 or labels.shape[0] != n or not np.issubdtype(labels.dtype, np.integer):
        raise _damaged(
            state_path, f"labels_ has shape {labels.shape} and dtype {labels.dtype}; expected ({n},) integers"
        )
    if labels.size and labels.min() < -1:
        raise _damaged(state_path, "labels_ holds ids below -1")
    kth = st.get("kth_distances_")
    if kth is not None and kth.shape[0] != n:
        raise _damaged(state_path, f"kth_distances_ has {kth.shape[0]} rows for {n} items")
    if labels_path.is_file():
        try:
            on_disk = load_npy(labels_path)
        except (OSError, ValueError, EOFError) as exc:
            raise _damaged(labels_path, f"unreadable: {exc}") from None
        if on_disk.shape != labels.shape or not np.array_equal(on_disk, labels):
            raise _damaged(labels_path, "it differs from labels_ in state.npz")
    return meta, st

"""Save and reload fitted clusterers without pickle: ``meta.json`` (parameters, fitted
scalars, input hash) + ``state.npz`` (arrays) + ``labels.npy``, written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
from numpy.typing import ArrayLike

from ..utils.io import atomic_save_npy, atomic_save_npz, atomic_write_json, load_npy
from .graph import LinkageGraph
from .preprocessing import PCAProjection, Standardizer

__all__ = ["save_clusterer", "load_clusterer", "StaleLabelsError", "FORMAT"]

FORMAT = "ucs.clustering/1"
_SCALARS = (
    "eps_", "n_clusters_", "n_noise_", "input_hash_", "n_features_in_", "dict_n_steps_", "timings_", "knn_exact_",
    "chosen_method_",
)
_ARRAYS = ("kth_distances_", "dictionary_", "codes_", "cluster_centers_")


class StaleLabelsError(ValueError):
    """The embeddings given at load time are not the ones the clusterer was fitted on."""


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
    scalers = getattr(est, "scalers_", None) or ([est.scaler_] if getattr(est, "scaler_", None) is not None else [])
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
    }
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
    from .estimator import LatentClusterer
    from .joint import JointLatentClusterer

    d = Path(directory)
    meta = json.loads((d / "meta.json").read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{d} does not hold a clusterer in format {FORMAT!r} (found {meta.get('format')!r})")
    cls = {"LatentClusterer": LatentClusterer, "JointLatentClusterer": JointLatentClusterer}.get(meta["class"])
    if cls is None:
        raise ValueError(f"unknown clusterer class {meta['class']!r} in {d}")
    est = cls(**meta["params"])
    with np.load(d / "state.npz", allow_pickle=False) as z:
        st = {k: z[k] for k in z.files}
    est.labels_ = st["labels_"].astype(np.int64)
    for k, v in meta["fitted"].items():
        setattr(est, k, v)
    for name in _ARRAYS:
        setattr(est, name, st.get(name))
    if getattr(est, "chosen_method_", None) is None:  # written before the setting existed
        est.chosen_method_ = getattr(est, "method", None)
    est.auto_choice_ = None
    if meta.get("auto_choice") is not None:
        from .auto import AutoChoice

        est.auto_choice_ = AutoChoice(**meta["auto_choice"])
    scalers = [
        Standardizer(st[f"scaler{i}_mean_"], st[f"scaler{i}_scale_"]) if present else None
        for i, present in enumerate(meta["scaler_present"])
    ]
    pcas = [
        PCAProjection(st[f"pca{i}_mean_"], st[f"pca{i}_components_"], st[f"pca{i}_explained_variance_"]) if present else None
        for i, present in enumerate(meta["pca_present"])
    ]
    if cls is JointLatentClusterer:
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

"""Loading the pipeline's models from a configuration: the ICL backbone and the retrieval embedder."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from ucs.embedding import load_retrieval_embedder
from ucs.embedding.base import l2_normalize
from ucs.models import load_backbone

__all__ = [
    "BACKBONE_PLUGINS",
    "load_backbone_for",
    "load_retrieval_for",
    "backbone_kwargs",
    "plugin_backbone",
]

#: Entry-point group of backbones provided by installed packages: ``name = "module:factory"``; the factory is
#: called with no argument, or ``seed=n`` for the name ``<name>-<n>``. ucs itself registers ``dummy``
#: (:class:`ucs.testing.DummyBackbone`, weight-free doubles for orchestration tests and dry runs).
BACKBONE_PLUGINS = "ucs.backbones"


def backbone_kwargs(config: Any) -> Dict[str, Any]:
    """Keyword arguments for :func:`ucs.models.load_backbone` taken from a :class:`PipelineConfig`.

    ``device`` and ``dtype`` go to the transformers engine only and ``n_gpu_layers`` to llama.cpp only (engine
    ``None`` means the model layer's default engine).
    """
    kw: Dict[str, Any] = {
        "layer": config.layer,
        "pooling": config.pooling,
        "normalize": bool(config.embed_normalize),
        "max_length": int(config.embed_max_length),
    }
    if config.context_length is not None:
        kw["context_length"] = int(config.context_length)
    engine = config.engine or _default_engine()
    if engine == "transformers" and config.device is not None:
        kw["device"] = config.device
    if engine == "transformers" and getattr(config, "dtype", None) is not None:
        kw["dtype"] = config.dtype
    if engine == "llama" and config.n_gpu_layers:
        kw["n_gpu_layers"] = int(config.n_gpu_layers)
    return kw


def _default_engine() -> str:
    try:
        from ucs.models import DEFAULT_ENGINE
    except ImportError:  # pragma: no cover - model layer without a registry
        return "llama"
    return DEFAULT_ENGINE


def load_backbone_for(config: Any) -> Any:
    """The ICL backbone named by ``config.backbone`` (an Embedder and a LanguageModel in one object).

    A name registered in the :data:`BACKBONE_PLUGINS` entry-point group (``dummy``, or ``dummy-<n>`` for a
    double seeded with ``n``) is built by its plug-in; anything else goes to :func:`ucs.models.load_backbone`
    with ``engine=config.engine`` and the embedding settings of the configuration. Nothing is loaded into
    memory until the backbone is first used.
    """
    plugin = _plugin_backbone(config.backbone.lower())
    if plugin is not None:
        return plugin

    kwargs = backbone_kwargs(config)
    if config.engine is not None:
        kwargs["engine"] = config.engine
    return load_backbone(config.backbone, **kwargs)


def plugin_backbone(name: str) -> Any:
    """The backbone an installed plug-in registers as ``name`` (``dummy``, or ``dummy-<n>`` seeded with ``n``;
    any case), else ``None``: how commands that take ``--model`` without a configuration resolve the
    doubles."""
    return _plugin_backbone(str(name).lower())


def _plugin_backbone(name: str) -> Any:
    """The backbone of an installed plug-in named ``name`` (or ``<plugin>-<seed>``), else ``None``."""
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=BACKBONE_PLUGINS)}
    if name in found:
        return found[name].load()()
    head, _, seed = name.rpartition("-")
    if head in found and seed.isdigit():
        return found[head].load()(seed=int(seed))
    return None


class NormalizedView:
    """ℓ2-normalised rows of another embedder (the backbone as retrieval embedder, SPEC §1)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    @property
    def identity(self) -> Dict[str, Any]:
        return {**dict(self.embedder.identity), "l2": True}

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return l2_normalize(self.embedder.embed(texts))


def load_retrieval_for(config: Any, backbone: Any, device: Optional[str] = None) -> Any:
    """The retrieval embedder of ``config``: the backbone ℓ2-normalised, or a sentence-transformer."""
    name = config.retrieval_embedder
    if name == "backbone":
        return NormalizedView(backbone)

    kw = {"device": device or config.device} if (device or config.device) else {}
    return load_retrieval_embedder(name, **kw)


def retrieval_fallback(config: Any) -> "tuple[Any, Optional[str]]":
    """``config`` with the backbone as retrieval embedder when its sentence-transformers retrieval embedder
    cannot run because the package is not installed (SPEC §1 allows the backbone's ℓ2-normalised
    embeddings), and the one-line note saying so; ``(config, None)`` when nothing changes.

    The returned configuration is what the run records, so its results never pass for the other embedder's.
    Costs one module lookup (nothing is imported).
    """
    import importlib.util

    name = config.retrieval_embedder
    if name == "backbone":
        return config, None
    try:
        found = importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return config, None
    note = (
        f"note: the retrieval embedder {name!r} needs sentence-transformers, which is not installed; "
        "using the backbone's l2-normalised embeddings for retrieval instead (install it with "
        "`pip install -e '.[torch]'` in the ucs repository, or `bash scripts/install.sh dev`)"
    )
    return config.replace(retrieval_embedder="backbone"), note

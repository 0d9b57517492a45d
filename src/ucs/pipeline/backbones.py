"""Loading the pipeline's models from a configuration: the ICL backbone and the retrieval embedder."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from ucs.embedding.base import l2_normalize

__all__ = ["DummyBackbone", "load_backbone_for", "load_retrieval_for", "backbone_kwargs"]


class DummyBackbone:
    """A weight-free stand-in for an ICL backbone: :class:`~ucs.utils.dummies.DummyEmbedder` embeddings and
    :class:`~ucs.utils.dummies.DummyLM` answers behind one object (like a real backbone, which is both).

    Used by ``--backbone dummy`` and the orchestration tests; its numbers mean nothing.
    """

    engine = "dummy"

    def __init__(self, dim: int = 32, seed: int = 0, context_length: int = 4096) -> None:
        from ucs.utils.dummies import DummyEmbedder, DummyLM

        self._emb = DummyEmbedder(dim=dim, seed=seed, normalize=False)
        self._lm = DummyLM(seed=seed, context_length=context_length)

    @property
    def identity(self) -> Dict[str, Any]:
        return {**self._emb.identity, "lm": self._lm.identity}

    @property
    def dim(self) -> int:
        return self._emb.dim

    @property
    def context_length(self) -> int:
        return self._lm.context_length

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._emb.embed(texts)

    def count_tokens(self, text: str) -> int:
        return self._lm.count_tokens(text)

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        return self._lm.generate(prompts, max_new_tokens, temperature, top_p, stop, seed)

    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]):
        return self._lm.score_continuations_detailed(prefix, continuations)

    def score_continuations(self, prefix: str, continuations: Sequence[str], reduction: str = "sum"):
        return self._lm.score_continuations(prefix, continuations, reduction)

    @property
    def n_texts_embedded_(self) -> int:
        return self._emb.n_texts_embedded_

    def __repr__(self) -> str:
        return f"DummyBackbone(dim={self.dim})"


def backbone_kwargs(config: Any) -> Dict[str, Any]:
    """Keyword arguments for :func:`ucs.models.load_backbone` taken from a :class:`PipelineConfig`.

    ``device`` and ``dtype`` go to the transformers engine only and ``n_gpu_layers`` to llama.cpp only (engine ``None``
    means the model layer's default engine).
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

    ``dummy`` gives a :class:`DummyBackbone` (``dummy-<n>`` one seeded with ``n``, a different double); anything else goes to :func:`ucs.models.load_backbone` with
    ``engine=config.engine`` and the embedding settings of the configuration. Nothing is loaded into memory
    until the backbone is first used.
    """
    name = config.backbone.lower()
    if name == "dummy":
        return DummyBackbone()
    if name.startswith("dummy-") and name[6:].isdigit():  # distinct weight-free doubles (joint-dictionary tests)
        return DummyBackbone(seed=int(name[6:]))
    from ucs.models import load_backbone

    kwargs = backbone_kwargs(config)
    if config.engine is not None:
        kwargs["engine"] = config.engine
    return load_backbone(config.backbone, **kwargs)


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
    from ucs.embedding import load_retrieval_embedder

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
    note = (f"note: the retrieval embedder {name!r} needs sentence-transformers, which is not installed; "
            "using the backbone's l2-normalised embeddings for retrieval instead (install it with "
            "`pip install -e '.[torch]'` in the ucs repository, or `bash scripts/install.sh dev`)")
    return config.replace(retrieval_embedder="backbone"), note

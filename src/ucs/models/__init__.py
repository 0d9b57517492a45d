"""Backbone LLMs (llama.cpp and transformers engines), packaged weights and the backbone registry."""

from __future__ import annotations

from ucs.utils.optional import InvalidModelFileError, MissingDependencyError
from ucs.models.registry import BACKBONES, DEFAULT_ENGINE, ENGINES, load_backbone

__all__ = [
    "BACKBONES",
    "DEFAULT_ENGINE",
    "ENGINES",
    "InvalidModelFileError",
    "MissingDependencyError",
    "load_backbone",
]

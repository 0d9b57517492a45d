"""Backbone LLMs (llama.cpp and transformers engines), packaged weights and the backbone registry."""

from __future__ import annotations

from ucs.models.pool import BackbonePool
from ucs.models.registry import BACKBONES, DEFAULT_ENGINE, ENGINES, load_backbone
from ucs.utils.optional import InvalidModelFileError, MissingDependencyError

__all__ = [
    "BACKBONES",
    "BackbonePool",
    "DEFAULT_ENGINE",
    "ENGINES",
    "InvalidModelFileError",
    "MissingDependencyError",
    "load_backbone",
]

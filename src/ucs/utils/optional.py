"""Errors raised when a model or the package that provides it is unavailable."""

from __future__ import annotations

import importlib

__all__ = [
    "MissingDependencyError",
    "InvalidModelFileError",
    "EngineCrashedError",
    "EngineFallbackWarning",
    "LLAMA_REBUILD",
    "require",
    "extra_install",
]


def extra_install(extra: str, packages: str) -> str:
    """How to install an optional extra of this repository (the package is installed from its source tree)."""
    return (
        f"-e '.[{extra}]'` in the ucs repository, or `bash scripts/install.sh dev` for every extra, "
        f"or `pip install {packages}"
    )


class MissingDependencyError(ImportError):
    """A Python package needed for a backend or packaged weights is not installed.

    The message always names the ``pip install`` command that fixes it.
    """


class InvalidModelFileError(ValueError):
    """A file passed as a model is not a usable model file (e.g. not a GGUF model)."""


def require(module: str, install: str, what: str):
    """Import ``module`` or raise :class:`MissingDependencyError` saying ``pip install <install>``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs the Python package {module!r}, which is not installed: run `pip install {install}`"
        ) from exc


#: How to rebuild llama-cpp-python so that it runs on this CPU (named wherever the engine is found crashing).
LLAMA_REBUILD = (
    "`bash scripts/install.sh --rebuild-llama` in the ucs repository (a portable build; SSE4.2-only "
    'if that crashes too), or `CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall '
    "--no-cache-dir llama-cpp-python`"
)


class EngineCrashedError(MissingDependencyError):
    """A native engine is installed but crashes on this machine (found by a probe in a child process).

    Like a missing dependency, the fix is an install step; the message names it.
    """


class EngineFallbackWarning(UserWarning):
    """The default engine crashes on this machine, so another installed engine is used instead."""

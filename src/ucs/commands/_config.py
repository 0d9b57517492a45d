"""The commands' one way to build a pipeline configuration: a preset or a file, the everyday options, then
``--set``.

``--set PATH=VALUE`` reaches any setting by its path in the configuration, under the owning class's own
parameter names (``selector.params.mmr.lambda_mult=0.8``, ``clusterer.dbscan_q=0.1``, ``prior.lam=0.5``,
``budget=4``); values are read as JSON where they parse (``0.8``, ``null``, ``true``), else as strings.
An unknown path is refused (exit 2) with the valid keys at that level.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import typer

__all__ = ["SET_HELP", "parse_settings", "parse_selectors", "config_from_options"]

SET_HELP = (
    "A setting by its path, PATH=VALUE, repeatable, applied last: selector.params.mmr.lambda_mult=0.8, "
    "clusterer.dbscan_q=0.1, prior.lam=0.5 (the classes' own parameter names; --print-config shows them all)."
)


def parse_settings(items: Optional[List[str]]) -> Dict[str, Any]:
    """``["prior.lam=0.5", "retrieval_embedder=backbone"]`` → ``{"prior.lam": 0.5, ...}``; values parse as
    JSON when they can (``0.5``, ``null``, ``true``, ``{"votek": 5}``), else stay strings. A path is checked
    by name (:func:`ucs.pipeline.config.check_setting_names`), its value when the configuration is built."""
    from ucs.pipeline.config import check_setting_names

    out: Dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise typer.BadParameter(
                f"expected PATH=VALUE such as prior.lam=0.5; got {it!r}", param_hint="--set"
            )
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            out[k.strip()] = v
    try:
        check_setting_names(out)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--set") from None
    return out


def parse_selectors(value: Optional[str], param: str = "--selectors") -> Optional[Tuple[str, ...]]:
    """``value`` (comma-separated method names) parsed once: the canonical names (``"DPP_sgt"`` →
    ``"dpp+ucs"``), distinct and in order, or a usage error naming ``param``; ``None`` when the option is not
    given."""
    if value is None:
        return None
    from ucs.pipeline.config import parse_methods

    try:
        return parse_methods(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None


def config_from_options(
    preset: Optional[str],
    config_file: Optional[Path],
    options: Mapping[str, Any],
    settings: Optional[Mapping[str, Any]] = None,
):
    """:meth:`PipelineConfig.resolve <ucs.pipeline.PipelineConfig.resolve>` from ``--preset`` or ``--config``,
    then the options given (``None``: not given, by path or field name), then ``--set``'s ``settings``.

    A configuration file that is not a JSON object is refused naming ``--config``; an invalid ``--set`` value
    naming ``--set``."""
    from ucs.commands._inputs import read_json
    from ucs.pipeline import PipelineConfig

    if config_file is not None and preset is not None:
        raise ValueError("give either --preset or --config, not both (a configuration file is complete)")
    if config_file is not None and not isinstance(read_json(config_file, "--config"), dict):
        raise ValueError(f"--config: {config_file} must hold a JSON object of settings (see --print-config)")
    given = {k: v for k, v in options.items() if v is not None}
    settings = dict(settings or {})
    try:
        return PipelineConfig.resolve(preset, config_file, {**given, **settings})
    except ValueError as exc:
        if any(k in str(exc) for k in settings):
            raise typer.BadParameter(str(exc), param_hint="--set") from None
        raise

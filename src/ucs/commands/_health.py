"""Printing a clustering's health (SPEC §8) the same way in every command."""

from __future__ import annotations

from typing import Any

import typer


def echo_health(health: Any, title: str = "health") -> None:
    """Print ``title: <ClusterHealth.line()>`` and, to stderr, its giant-cluster warning when it has one."""
    typer.echo(f"{title}: {health.line()}")
    if health.warning():
        typer.echo(f"warning: {health.warning()}", err=True)

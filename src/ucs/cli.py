"""The ``ucs`` command-line interface.

Each sub-command lives in its own module under :mod:`ucs.commands` and exposes
``register(app)``; this module only assembles them, so a command's heavy imports
happen when it runs, not when ``ucs --help`` is printed.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Optional

import typer

from ucs import __version__

app = typer.Typer(
    name="ucs",
    help="Unseen Coverage Selection: coverage priors for choosing in-context demonstrations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"ucs {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Unseen Coverage Selection (UCS)."""


def _register_commands() -> None:
    """Register every module of :mod:`ucs.commands` (each defines ``register(app)``), in name order."""
    import ucs.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"ucs.commands.{info.name}").register(app)


_register_commands()


def main() -> None:
    """Entry point of the ``ucs`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

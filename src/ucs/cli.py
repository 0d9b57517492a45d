"""The ``ucs`` command-line interface.

Each sub-command lives in its own module under :mod:`ucs.commands` and exposes
``register(app)``; this module only assembles them, so a command's heavy imports
happen when it runs, not when ``ucs --help`` is printed. Every command runs under the
error policy of :mod:`ucs.commands._errors` (user errors: two lines, exit code 2).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Optional

import typer

from ucs import __version__
from ucs.commands._errors import DEBUG_ENV, guard_app, set_debug

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
    debug: bool = typer.Option(
        False,
        "--debug",
        help=f"Show the Python traceback of an error instead of the short message ({DEBUG_ENV}=1 too).",
    ),
) -> None:
    """Unseen Coverage Selection (UCS)."""
    set_debug(debug)


def _register_commands() -> None:
    """Register every module of :mod:`ucs.commands` (each defines ``register(app)``), in name order."""
    import ucs.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"ucs.commands.{info.name}").register(app)
    guard_app(app)  # one error policy for every command (ucs.commands._errors)


_register_commands()


def main() -> None:
    """Entry point of the ``ucs`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

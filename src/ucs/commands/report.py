"""``ucs report``: one self-contained HTML page from a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ucs.commands._report import MISSING

HELP = """Write the HTML report of a run folder (from ucs evaluate, ucs demo --out or a ucs reproduce cell).

One self-contained file that opens offline: run summary, accuracy with intervals and each UCS form's
paired difference, the cluster explorer, coverage per method, and every query with the demonstrations
each method chose. Default: RUN_DIR/report.html. See docs/report.md.
"""


def report_cmd(
    run_dir: Path = typer.Argument(..., help="A run folder (it holds manifest.json and results.json)."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="HTML file to write (default RUN_DIR/report.html)."
    ),
) -> None:
    try:
        import jinja2  # noqa: F401
        import plotly  # noqa: F401

        from ucs.report import write_report
    except ImportError:
        raise typer.BadParameter(MISSING) from None
    if not run_dir.is_dir():
        raise typer.BadParameter(
            f"{run_dir} is not a folder; give a run folder such as the --out of ucs evaluate",
            param_hint="RUN_DIR",
        )
    try:
        path = write_report(run_dir, out)
    except (FileNotFoundError, ValueError) as exc:  # RunFolderError names the file and the field
        raise typer.BadParameter(str(exc), param_hint="RUN_DIR") from None
    typer.echo(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    app.command("report", help=HELP)(report_cmd)

"""Writing a run folder's HTML report from a command (``ucs evaluate``, ``ucs demo``, ``ucs reproduce``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import typer

MISSING = (
    "the report needs jinja2 and plotly: pip install -e '.[report]' in the ucs repository (or pip "
    "install jinja2 plotly)"
)


def try_write_report(
    run_dir: Path, out: Optional[Path] = None, echo: Callable[[str], None] = typer.echo
) -> Optional[Path]:
    """Write the report and print where; print why not (missing extra, not a run folder) and return
    ``None``."""
    try:
        from ucs.report import write_report

        path = write_report(run_dir, out)
    except ImportError:
        echo(f"report: not written ({MISSING})")
        return None
    except (FileNotFoundError, ValueError) as exc:  # not a run folder; a damaged or unexpected file (named)
        echo(f"report: not written ({exc})")
        return None
    echo(f"report: {path}")
    return path

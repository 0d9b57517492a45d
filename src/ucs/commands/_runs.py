"""What every command that writes a run folder shares: the folder's lock, ``--wait`` and ``--fresh``."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Iterator

import typer

__all__ = ["run_folder", "WAIT_HELP", "FRESH_HELP"]

WAIT_HELP = "If another run is writing to the output folder, wait for it to finish instead of stopping."
FRESH_HELP = "Start over: move the output folder's old contents aside (renamed *.old-<time>, not deleted)."


@contextlib.contextmanager
def run_folder(folder: Path, *, wait: bool = False, fresh: bool = False) -> Iterator[Path]:
    """Hold ``folder``'s exclusive lock (:func:`ucs.utils.lock.folder_lock`) for the ``with`` block.

    With ``fresh``, a non-empty ``folder`` is first renamed ``<folder>.old-<UTC time>`` (under its lock, so no
    run is writing to it) and an empty one takes its place. A lock left by a process that died is taken over
    with a one-line notice.
    """
    from ucs.utils.integrity import move_aside
    from ucs.utils.lock import LOCK_NAME, folder_lock

    folder = Path(folder)
    command = "ucs " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else None
    if fresh and folder.is_dir() and any(p.name != LOCK_NAME for p in folder.iterdir()):
        with folder_lock(folder, wait=wait):
            moved = move_aside(folder, "old")
        typer.echo(f"--fresh: moved the old {folder} aside to {moved}", err=True)
    with folder_lock(folder, wait=wait, command=command) as info:
        if info.get("stale"):
            typer.echo(f"note: {folder} was locked by process {info['stale'].get('pid', '?')}, which is gone; "
                       "taking over (its records are kept and resumed)", err=True)
        yield folder

"""What every command that writes a run folder shares: the folder's lock, ``--wait`` and ``--fresh``."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Iterator, Optional

import typer

from ucs.evaluation.run_folder import RunFolder

__all__ = ["run_folder", "refuse_other_run", "WAIT_HELP", "FRESH_HELP"]

WAIT_HELP = "If another run is writing to the output folder, wait for it to finish instead of stopping."
FRESH_HELP = "Start over: move the output folder's old contents aside (renamed *.old-<time>, not deleted)."


#: The files at the top of each kind of output folder (``ucs evaluate`` and ``ucs demo`` write the same kind,
#: a pipeline run): a folder holding another kind's is not written into.
RUN_MARKS = {
    "ucs evaluate / ucs demo": (RunFolder.MANIFEST,),
    "ucs compare": ("compare.json",),
    "ucs tune": ("tune.json", "variants.json"),
}


def refuse_other_run(folder: Path, kind: str, param: str = "--out") -> None:
    """Refuse (``typer.BadParameter`` naming ``param``) a ``folder`` that holds another kind of run than
    ``kind`` (a key of :data:`RUN_MARKS`), before anything is written there."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for other, marks in RUN_MARKS.items():
        found = [m for m in marks if (folder / m).is_file()]
        if other != kind and found:
            raise typer.BadParameter(
                f"{folder} holds another kind of run (a folder of {other}, with {found[0]}); nothing was "
                "written there: choose another folder, or --fresh to move its contents aside",
                param_hint=param,
            )


@contextlib.contextmanager
def run_folder(
    folder: Path, *, wait: bool = False, fresh: bool = False, kind: Optional[str] = None
) -> Iterator[Path]:
    """Hold ``folder``'s exclusive lock (:func:`ucs.utils.lock.folder_lock`) for the ``with`` block.

    With ``kind`` (a key of :data:`RUN_MARKS`), a folder holding another kind of run is refused first, unless
    ``fresh`` moves it aside.

    With ``fresh``, a non-empty ``folder`` is first renamed ``<folder>.old-<UTC time>`` (under its lock, so no
    run is writing to it) and an empty one takes its place. A lock left by a process that died is taken over
    with a one-line notice.
    """
    from ucs.utils.integrity import move_aside
    from ucs.utils.lock import LOCK_NAME, folder_lock

    folder = Path(folder)
    if kind is not None and not fresh:
        refuse_other_run(folder, kind)
    command = "ucs " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else None
    if fresh and folder.is_dir() and any(p.name != LOCK_NAME for p in folder.iterdir()):
        with folder_lock(folder, wait=wait):
            moved = move_aside(folder, "old")
        typer.echo(f"--fresh: moved the old {folder} aside to {moved}", err=True)
    with folder_lock(folder, wait=wait, command=command) as info:
        if info.get("stale"):
            typer.echo(
                f"note: {folder} was locked by process {info['stale'].get('pid', '?')}, which is gone; "
                "taking over (its records are kept and resumed)",
                err=True,
            )
        yield folder

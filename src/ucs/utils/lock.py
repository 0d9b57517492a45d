"""An exclusive lock on an output folder for the duration of a run.

:func:`folder_lock` takes an ``fcntl.flock`` lock on ``<folder>/.ucs.lock`` and writes the holder's PID,
host and start time into it. The operating system releases a ``flock`` when its process dies (even by
``kill -9``), so a lock file left by a dead process never blocks a new run: it is taken over, and the PID
inside only serves the message of a refused run. The lock is re-entrant within a process (a command that
locks its ``--out`` and the runner that locks the same folder again share one lock).

Cost: one ``open`` and one ``flock`` system call; with ``wait`` the caller polls every ``poll`` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

try:  # POSIX only; elsewhere the lock is a no-op
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["folder_lock", "FolderLockedError", "LOCK_NAME", "read_holder"]

LOCK_NAME = ".ucs.lock"
_HELD: Dict[str, Tuple[int, int]] = {}  # resolved folder -> (fd, depth)
_GUARD = threading.Lock()


class FolderLockedError(RuntimeError):
    """Another live process holds the output folder's lock."""

    def __init__(self, folder: Path, holder: dict) -> None:
        self.folder = Path(folder)
        self.holder = holder
        who = f"process {holder.get('pid', '?')}"
        if holder.get("host") and holder.get("host") != socket.gethostname():
            who += f" on {holder['host']}"
        since = f" since {holder['started_at']}" if holder.get("started_at") else ""
        cmd = f" ({holder['command']})" if holder.get("command") else ""
        super().__init__(f"{self.folder} is in use by {who}{since}{cmd}")


def read_holder(folder: "str | os.PathLike[str]") -> dict:
    """What the lock file of ``folder`` says about its (last) holder; ``{}`` when absent or unreadable."""
    try:
        return json.loads((Path(folder) / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def folder_lock(
    folder: "str | os.PathLike[str]",
    *,
    wait: bool = False,
    timeout: Optional[float] = None,
    poll: float = 0.5,
    command: Optional[str] = None,
) -> Iterator[dict]:
    """Hold the exclusive lock of ``folder`` (created if missing) inside the ``with`` block.

    Parameters
    ----------
    folder : path
        The output folder.
    wait : bool
        Wait for the holder to finish instead of raising :class:`FolderLockedError` at once.
    timeout : float, optional
        With ``wait``, give up (raise) after this many seconds; ``None`` waits for ever.
    poll : float
        Seconds between attempts while waiting.
    command : str, optional
        Recorded in the lock file for the message other runs see.

    Yields
    ------
    dict
        ``{"pid", "host", "started_at"[, "command"], "stale"}``; ``stale`` is the record of a dead
        process whose lock file was taken over (``None`` if there was none).
    """
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    key = str(d.resolve())
    with _GUARD:
        if key in _HELD:
            fd, depth = _HELD[key]
            _HELD[key] = (fd, depth + 1)
            reentrant = True
        else:
            reentrant = False
    if reentrant:
        try:
            yield read_holder(d)
        finally:
            with _GUARD:
                fd, depth = _HELD[key]
                _HELD[key] = (fd, depth - 1)
        return
    path = d / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if not wait or (deadline is not None and time.monotonic() >= deadline):
                    raise FolderLockedError(d, read_holder(d)) from None
                time.sleep(poll)
        previous = read_holder(d)
        # holders empty the file when they finish: a record left here is from a process that died holding it
        stale = previous or None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        if command:
            info["command"] = command
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        with _GUARD:
            _HELD[key] = (fd, 1)
        try:
            yield {**info, "stale": stale}
        finally:
            with _GUARD:
                _HELD.pop(key, None)
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock

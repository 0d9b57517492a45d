"""Silence what native libraries (llama.cpp) print to the process's own file descriptors."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Sequence

__all__ = ["quiet"]


@contextlib.contextmanager
def quiet(fds: Sequence[int] = (2,)) -> Iterator[None]:
    """Silence llama.cpp's C-level log output to stderr (and to the other file descriptors ``fds``)."""
    try:
        saved = [os.dup(fd) for fd in fds]
    except OSError:  # pragma: no cover
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            for fd in fds:
                os.dup2(devnull.fileno(), fd)
            yield
    finally:
        for fd, old in zip(fds, saved):
            os.dup2(old, fd)
            os.close(old)

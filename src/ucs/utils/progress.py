"""Progress of long stages (embedding, clustering, MDL scoring, evaluation), on a terminal and in a log.

A stage is opened with :func:`stage` by the code that knows what the stage is (the pipeline, the runner);
the loops that do the work call :func:`advance` without knowing who listens::

    with progress_enabled(), stage("pool embeddings", total=len(texts), kind="embed"):
        for batch in batches:
            ...
            advance(len(batch), kind="embed")

Nothing is shown unless progress was switched on (:func:`progress_enabled`, as the commands do), so library
calls stay silent. Where it is shown depends on standard error:

* a terminal: one `rich <https://rich.readthedocs.io>`_ bar per open stage, with count, elapsed time and ETA,
  replaced by a one-line summary when the stage ends;
* anything else (a file, a pipe, CI): a plain line per stage at a steady pace — when the stage starts, every
  :data:`LOG_INTERVAL_S` seconds or every :data:`LOG_STEP` of its total (whichever comes first, at most one
  line per :data:`LOG_MIN_GAP_S` seconds), and when it ends — so a log can be followed with ``tail -f``.

Stages nest (an evaluation that fits MDL for a method shows both); :func:`advance` moves the innermost open
stage of its ``kind`` (``embed``, ``mdl``, ...), so a loop never moves a stage it does not belong to. A
stage's ETA is its own rate: time spent in stages opened inside it does not count (an evaluation that scored
MDL subsets for ten minutes before its first prompt would otherwise promise a day), so the line says it leaves
that time out once there was some. Units a loop reports as ``reused`` (read back from a cache or store, not
computed) count as done but not in the rate, so a resumed run's ETA is the rate of its new work.
A stage whose total is unknown (clustering) shows elapsed time only.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, List, Optional, TextIO

__all__ = [
    "LOG_INTERVAL_S",
    "LOG_STEP",
    "LOG_MIN_GAP_S",
    "Stage",
    "stage",
    "advance",
    "progress_enabled",
    "is_enabled",
    "format_seconds",
]

#: Seconds between two plain progress lines of a stage when output is not a terminal.
LOG_INTERVAL_S = 10.0
#: Fraction of a stage's total after which a plain line is written (5 %).
LOG_STEP = 0.05
#: Fewest seconds between two plain lines of one stage (a fast stage does not flood the log).
LOG_MIN_GAP_S = 2.0

_ENABLED: ContextVar[bool] = ContextVar("ucs_progress_enabled", default=False)
_STACK: List["Stage"] = []
_RICH: dict = {}  # the one live rich.Progress shared by nested stages ({"bar": Progress, "users": n})


def is_enabled() -> bool:
    """Whether stages opened now are shown."""
    return _ENABLED.get()


@contextmanager
def progress_enabled(enabled: bool = True) -> Iterator[None]:
    """Show (or, with ``enabled=False``, hide) the stages opened inside the block."""
    token = _ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED.reset(token)


def format_seconds(s: Optional[float]) -> str:
    """``75.2`` → ``"1m15s"``; ``None`` → ``"?"``."""
    if s is None or s != s or s == float("inf"):
        return "?"
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Stage:
    """One open stage: its description, total, count done and how it is shown.

    Parameters
    ----------
    description : str
    total : int, optional
        Units of work (texts, queries, prompts); ``None`` when unknown.
    kind : str
        What :func:`advance` calls name to move this stage (``embed``, ``mdl``, ``evaluate``...).
    stream : file, optional
        Where plain lines go (default ``sys.stderr``).
    terminal : bool, optional
        Force the terminal (rich) or plain display; default: whether ``stream`` is a terminal.
    """

    def __init__(
        self,
        description: str,
        total: Optional[int] = None,
        *,
        kind: str = "",
        stream: Optional[TextIO] = None,
        terminal: Optional[bool] = None,
    ) -> None:
        self.description = description
        self.kind = kind
        self.total = None if total is None else max(0, int(total))
        self.done = 0
        self.reused = 0  # units read back rather than computed: done, but left out of the rate
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = bool(isatty and isatty()) if terminal is None else bool(terminal)
        self.t0 = time.monotonic()
        self.inner_s = 0.0  # time spent in stages opened inside this one (closed ones)
        self._last_line = self.t0
        self._last_step = 0
        self._task: Any = None
        self.failed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # ------------------------------------------------------------------ numbers
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def eta(self) -> Optional[float]:
        """Seconds left at the mean rate of the computed (not reused) units so far; ``None`` before the first
        computed unit or without a total."""
        computed = self.done - self.reused
        if not self.total or computed <= 0:
            return None
        own = max(0.0, self.elapsed() - self.inner_s)
        return own / computed * max(0, self.total - self.done)

    def line(self, final: bool = False) -> str:
        """The plain progress line: ``[ucs] <stage>: 120/400 (30%) elapsed 12s, eta 28s``."""
        el = format_seconds(self.elapsed())
        if final:
            n = f"{self.done}/{self.total} " if self.total else ""
            return f"[ucs] {self.description}: {n}{'stopped after' if self.failed else 'done in'} {el}"
        if not self.total:
            return (
                f"[ucs] {self.description}: {self.done or ''}{' ' if self.done else ''}elapsed {el}".replace(
                    "  ", " "
                )
            )
        pct = 100.0 * self.done / self.total
        inner = " + inner stages" if self.inner_s >= 1.0 else ""
        return (
            f"[ucs] {self.description}: {self.done}/{self.total} ({pct:.0f}%) elapsed {el}, "
            f"eta {format_seconds(self.eta())}{inner}"
        )

    # ------------------------------------------------------------------ display
    def _start(self) -> None:
        if self.terminal:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            if not _RICH:
                bar = Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TextColumn("eta"),
                    TimeRemainingColumn(),
                    console=Console(file=self.stream),
                    transient=False,
                )
                bar.start()
                _RICH.update(bar=bar, users=0)
            _RICH["users"] += 1
            self._task = _RICH["bar"].add_task(self.description, total=self.total)
        else:
            self._write(
                f"[ucs] {self.description}: started" + (f" ({self.total} to do)" if self.total else "")
            )
            # a stage can spend long between two units (one big batch, a clustering step): keep the log moving
            threading.Thread(target=self._beat, daemon=True, name="ucs-progress").start()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            self.heartbeat()

    def _write(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)
            self._last_line = time.monotonic()

    def describe(self, description: str) -> None:
        """Change the description (the next line or the bar shows it)."""
        self.description = description
        if self.terminal and _RICH and self._task is not None:
            _RICH["bar"].update(self._task, description=description)

    def advance(self, n: int = 1, reused: int = 0) -> None:
        """Count ``n`` more units done, ``reused`` of them read back rather than computed, and show the
        progress when due."""
        self._count(n, reused)
        if self.terminal:
            if _RICH and self._task is not None:
                _RICH["bar"].update(self._task, completed=self.done)
            return
        now = time.monotonic()
        step = int(self.done / self.total / LOG_STEP) if self.total else 0
        due = now - self._last_line >= LOG_INTERVAL_S or (
            step > self._last_step and now - self._last_line >= LOG_MIN_GAP_S
        )
        if due and (self.total is None or self.done < self.total):
            self._last_step = step
            self._write(self.line())

    def _count(self, n: int, reused: int) -> None:
        self.done += int(n)
        self.reused += min(int(n), max(0, int(reused)))

    def heartbeat(self) -> None:
        """Write the line again if :data:`LOG_INTERVAL_S` passed (plain display) and no stage is open inside
        this one (the inner stage's lines show that the work goes on)."""
        if (
            not self.terminal
            and _STACK
            and _STACK[-1] is self
            and time.monotonic() - self._last_line >= LOG_INTERVAL_S
        ):
            self._write(self.line())

    def _finish(self) -> None:
        self._stop.set()
        if self.terminal:
            if _RICH:
                bar = _RICH["bar"]
                if self._task is not None:  # a finished stage leaves the live display as one printed line
                    bar.remove_task(self._task)
                    bar.console.print(self.line(final=True)[len("[ucs] ") :], highlight=False)
                _RICH["users"] -= 1
                if _RICH["users"] <= 0:
                    bar.stop()
                    _RICH.clear()
        else:
            self._write(self.line(final=True))


class _NullStage(Stage):
    """What :func:`stage` yields while progress is off: counts, shows nothing."""

    def _start(self) -> None:
        pass

    def advance(self, n: int = 1, reused: int = 0) -> None:
        self._count(n, reused)

    def heartbeat(self) -> None:
        pass

    def _finish(self) -> None:
        pass


@contextmanager
def stage(
    description: str,
    total: Optional[int] = None,
    *,
    kind: str = "",
    stream: Optional[TextIO] = None,
    terminal: Optional[bool] = None,
) -> Iterator[Stage]:
    """Open a stage for the duration of the block; see the module docstring for what is shown."""
    cls = Stage if is_enabled() else _NullStage
    st = cls(description, total, kind=kind, stream=stream, terminal=terminal)
    st._start()
    parent = _STACK[-1] if _STACK else None
    _STACK.append(st)
    try:
        yield st
        if st.total is not None:  # the block finished its work, reported unit by unit or not
            st.done = max(st.done, st.total)
    except BaseException:
        st.failed = True
        raise
    finally:
        _STACK.remove(st)
        if parent is not None:
            parent.inner_s += st.elapsed()
        st._finish()


def advance(n: int = 1, kind: str = "", reused: int = 0) -> None:
    """Move the innermost open stage of ``kind`` by ``n`` units, ``reused`` of them read back from a cache or
    store rather than computed (nothing when no stage of ``kind`` is open)."""
    for st in reversed(_STACK):
        if st.kind == kind:
            st.advance(n, reused=reused)
            return

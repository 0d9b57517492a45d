"""Thread counts for query-time work: one query embedded on few threads, never oversubscribing the cores.

A single query is a tiny batch (one sequence of ~10–30 tokens): spreading it over threads saves little even on
an idle machine, and on a busy one every thread beyond the free cores waits for a core — torch's default (one
thread per core) made a 20 ms MiniLM query embedding take 210–300 ms median on a 2-core machine with one core
busy (``benchmarks/index/RESULTS_latency.md``). Query embedding therefore runs
on :data:`DEFAULT_QUERY_THREADS` (1) thread unless told otherwise:

* an argument (``SentenceTransformerEmbedder(query_threads=...)``),
* else the environment variable :data:`QUERY_THREADS_ENV` (``UCS_QUERY_THREADS``),
* else 1.

Each is a positive integer, or ``"auto"``: the cores this process may run on (``os.sched_getaffinity``) minus
the 1-minute load average, rounded, at least 1. The limit covers torch's intra-op threads and every
BLAS/OpenMP pool threadpoolctl finds, and is restored after the call (toggling costs ≈ 10 µs).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, Optional, Union

__all__ = [
    "QUERY_THREADS_ENV",
    "DEFAULT_QUERY_THREADS",
    "free_cores",
    "resolve_query_threads",
    "limit_threads",
    "set_threads",
]

#: Environment variable read when no ``query_threads`` argument is given.
QUERY_THREADS_ENV = "UCS_QUERY_THREADS"
#: Threads of one query's embedding when neither argument nor environment says otherwise.
DEFAULT_QUERY_THREADS = 1

ThreadsSpec = Union[int, str, None]

_controller = None


def free_cores() -> int:
    """Cores this process may use that the 1-minute load average leaves free (at least 1).

    ``len(os.sched_getaffinity(0))`` (``os.cpu_count()`` where affinity is unsupported) minus
    ``os.getloadavg()[0]``, rounded to the nearest integer.
    """
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return max(1, min(allowed, int(round(allowed - load))))


def resolve_query_threads(threads: ThreadsSpec = None) -> int:
    """The thread count of a query embedding: ``threads``, else ``$UCS_QUERY_THREADS``, else 1.

    Parameters
    ----------
    threads : int, "auto" or None
        A positive integer, ``"auto"`` (:func:`free_cores`), or ``None`` (read the environment).

    Raises
    ------
    ValueError
        Naming the argument or the environment variable that holds something else.
    """
    source = "query_threads"
    if threads is None:
        env = os.environ.get(QUERY_THREADS_ENV, "").strip()
        if not env:
            return DEFAULT_QUERY_THREADS
        threads, source = env, QUERY_THREADS_ENV
    if isinstance(threads, str):
        text = threads.strip().lower()
        if text == "auto":
            return free_cores()
        try:
            threads = int(text)
        except ValueError:
            threads = None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(
            f"{source} must be a positive integer or 'auto'; got {threads!r} (set e.g. {QUERY_THREADS_ENV}=1)"
        )
    return threads


@contextlib.contextmanager
def limit_threads(n: Optional[int]) -> Iterator[None]:
    """Run the block with at most ``n`` torch intra-op and BLAS/OpenMP threads, then restore the previous
    counts.

    ``None`` changes nothing. torch is only touched when it is already imported; the threadpoolctl controller
    is built once (on the first call, so it sees the libraries loaded by then) and reused, and only the pools
    whose count differs from ``n`` are set and restored (reading a pool's count costs ≈ 0.3 µs;
    threadpoolctl's own ``limit`` re-reads every library's full description, ≈ 17 µs, which was 5 % of a
    one-query selection).
    """
    if n is None:
        yield
        return
    torch = sys.modules.get("torch")
    old = torch.get_num_threads() if torch is not None else None
    if torch is not None and old != n:
        torch.set_num_threads(n)
    changed = []
    try:
        for lib in _threadpools().lib_controllers:
            before = lib.get_num_threads()
            if before != n:
                lib.set_num_threads(n)
                changed.append((lib, before))
        yield
    finally:
        for lib, before in reversed(changed):
            lib.set_num_threads(before)
        if torch is not None and old != n:
            torch.set_num_threads(old)


def set_threads(n: int) -> None:
    """Set torch's intra-op threads (when torch is imported) and every BLAS/OpenMP pool loaded now to ``n``,
    for the rest of the process: what a server does once its model is loaded, so that no call toggles them (a
    toggle from one thread while another computes would change its pools under it) and :func:`limit_threads`
    with the same ``n`` changes nothing."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    for lib in _threadpools().lib_controllers:
        if lib.get_num_threads() != n:
            lib.set_num_threads(n)


def _threadpools():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller

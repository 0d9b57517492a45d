"""The executor contract that every distributed stage runs on, and the in-process executor.

A stage is written once against four primitives and runs unchanged on one machine or on a Ray
cluster:

``put(obj) -> handle``
    Make a (large, read-only) object available to tasks; the handle is passed to ``submit``.
``submit(fn, *args, num_returns=1) -> handle | tuple of handles``
    Run ``fn(*args)`` as a task. Handles among the *top-level* ``args`` are replaced by their
    values before ``fn`` runs; with ``num_returns > 1`` ``fn`` returns a tuple and each element
    gets its own handle, so a large part of a result can stay where it was computed while a small
    part is fetched.
``get(handle | list of handles) -> value | list of values``
    Wait for and fetch results.
``map_actors(factory, items, ...) -> list``
    Stateful workers: ``factory()`` builds one state per worker (a model replica, a fitted index),
    then ``state(item)`` is called for every item; results come back in item order.

:class:`LocalExecutor` (the default) runs everything in the calling process and imports nothing
beyond numpy; :class:`ucs.distributed.RayExecutor` maps the same calls onto Ray tasks, the object
store and Ray Data actor pools.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Dict, List, Optional, Sequence

__all__ = ["Executor", "LocalExecutor", "EXECUTORS"]

#: Names accepted by :func:`ucs.distributed.executors.get_executor`.
EXECUTORS = ("local", "ray")


class Executor(abc.ABC):
    """Where the distributed stages run (see the module docstring for the contract).

    Subclasses implement :meth:`put`, :meth:`submit`, :meth:`get`, :meth:`map_actors` and
    :attr:`num_workers`; :meth:`map` and :meth:`map_records` have generic implementations.
    Executors are context managers; leaving the block calls :meth:`close`.
    """

    #: Short name (``"local"``, ``"ray"``).
    name: str = "executor"

    @property
    @abc.abstractmethod
    def num_workers(self) -> int:
        """How many tasks can run at once (used to size shards and actor pools)."""

    @abc.abstractmethod
    def put(self, obj: Any) -> Any:
        """Store ``obj`` once for many tasks; returns a handle for :meth:`submit`."""

    @abc.abstractmethod
    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1, num_cpus: float = 1) -> Any:
        """Run ``fn(*args)``; returns a handle (a tuple of ``num_returns`` handles when > 1)."""

    @abc.abstractmethod
    def get(self, handles: Any) -> Any:
        """Fetch the value of one handle, or the values of a list of handles (same order)."""

    @abc.abstractmethod
    def map_actors(
        self,
        factory: Callable[[], Callable[[Any], Any]],
        items: Sequence[Any],
        *,
        num_actors: Optional[int] = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
    ) -> List[Any]:
        """``[state(item) for item in items]`` with ``state = factory()`` built once per worker.

        Parameters
        ----------
        factory : callable
            Zero-argument callable returning the per-worker state, itself a callable of one item.
            It must be picklable (a module-level function, a class or a ``functools.partial``)
            for executors that run in other processes.
        items : sequence
            Work items; each is shipped to one worker.
        num_actors : int, optional
            Worker count (default :attr:`num_workers`, at most ``len(items)``).
        num_cpus, num_gpus : float
            Resources reserved per worker (``num_gpus=1`` puts one model replica on each GPU).

        Returns
        -------
        list
            One result per item, in item order.
        """

    def map(
        self, fn: Callable[..., Any], items: Sequence[Any], *shared: Any, num_cpus: float = 1
    ) -> List[Any]:
        """``[fn(item, *shared) for item in items]`` as parallel tasks, results in item order.

        ``shared`` are objects (or handles from :meth:`put`) every task needs; they are stored
        once, not once per task.
        """
        handles = [self.put(s) for s in shared]
        return self.get([self.submit(fn, item, *handles, num_cpus=num_cpus) for item in items])

    def map_records(
        self,
        factory: Callable[[], Callable[[Dict[str, Any]], Dict[str, Any]]],
        records: Sequence[Dict[str, Any]],
        *,
        num_actors: Optional[int] = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
    ) -> List[Dict[str, Any]]:
        """Like :meth:`map_actors` for records of plain columns (ints, floats, strings, lists of strings).

        Each record is a ``dict``; ``state(record)`` returns a ``dict`` of plain values. Ray runs
        this as a streaming Ray Data ``map_batches`` over an actor pool (one record per batch);
        the default implementation is :meth:`map_actors`. Results are in record order.
        """
        return self.map_actors(factory, records, num_actors=num_actors, num_cpus=num_cpus, num_gpus=num_gpus)

    def close(self) -> None:
        """Release what the executor started (no-op by default)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalExecutor(Executor):
    """Run every task immediately in the calling process (the default; no extra dependency).

    Handles are the values themselves, so a stage run on this executor does exactly the
    computation of a plain single-process implementation, in item order.

    Notes
    -----
    ``map_actors`` builds a single state with ``factory()`` and applies it to every item.
    """

    name = "local"

    @property
    def num_workers(self) -> int:
        return 1

    def put(self, obj: Any) -> Any:
        return obj

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1, num_cpus: float = 1) -> Any:
        out = fn(*args)
        if num_returns > 1:
            out = tuple(out)
            if len(out) != num_returns:
                raise ValueError(
                    f"{getattr(fn, '__name__', fn)!r} returned {len(out)} values, expected {num_returns}"
                )
        return out

    def get(self, handles: Any) -> Any:
        return list(handles) if isinstance(handles, list) else handles

    def map_actors(
        self,
        factory: Callable[[], Callable[[Any], Any]],
        items: Sequence[Any],
        *,
        num_actors: Optional[int] = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
    ) -> List[Any]:
        items = list(items)
        if not items:
            return []
        state = factory()
        return [state(item) for item in items]

    def __repr__(self) -> str:
        return "LocalExecutor()"

"""Resolving an ``executor`` argument (``"local"``, ``"ray"`` or an instance) to an :class:`Executor`.

Kept apart from :mod:`ucs.distributed.executor` so that the Ray executor, which builds on that module's base
class, is imported only here and only when asked for (Ray is an optional dependency).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from ucs.distributed.executor import EXECUTORS, Executor, LocalExecutor

__all__ = ["ExecutorOptionError", "get_executor", "make_executor"]


def get_executor(executor: Union[None, str, Executor] = None, **kwargs: Any) -> Executor:
    """Resolve an executor argument: ``None``/``"local"`` → :class:`LocalExecutor`, ``"ray"`` →
    :class:`~ucs.distributed.RayExecutor` (``kwargs`` go to its constructor), an instance is returned as is.
    """
    if executor is None or (isinstance(executor, str) and executor == "local"):
        if kwargs:
            raise ValueError(f"the local executor takes no options; got {sorted(kwargs)}")
        return LocalExecutor()
    if isinstance(executor, Executor):
        return executor
    if isinstance(executor, str) and executor == "ray":
        from ucs.distributed.ray_executor import RayExecutor

        return RayExecutor(**kwargs)
    raise ValueError(f"executor must be one of {EXECUTORS} or an Executor instance; got {executor!r}")


class ExecutorOptionError(ValueError):
    """The ``--executor``/``--address`` pair of a command is inconsistent; the message names the option."""


def make_executor(executor: str, address: Optional[str] = None, num_cpus: Optional[int] = None) -> Executor:
    """The executor the commands' ``--executor``, ``--address`` and ``--num-cpus`` options ask for.

    ``"local"`` takes no address; ``"ray"`` passes ``address`` (empty → a private local cluster) and
    ``num_cpus`` to :class:`~ucs.distributed.RayExecutor`. Raises :class:`ExecutorOptionError` for an unknown
    executor or an address without Ray. O(1); Ray connects only when first used.
    """
    if executor == "local":
        if address:
            raise ExecutorOptionError("--address needs --executor ray")
        return get_executor("local")
    if executor == "ray":
        return get_executor("ray", address=address or None, num_cpus=num_cpus)
    raise ExecutorOptionError(f"--executor must be 'local' or 'ray'; got {executor!r}")

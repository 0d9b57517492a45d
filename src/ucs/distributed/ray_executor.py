""":class:`RayExecutor`: the executor contract on Ray tasks, the object store and Ray Data actor pools.

Importing this module does not import Ray; constructing a :class:`RayExecutor` does not connect
either. The first call that needs the cluster connects (or starts a local one), so an executor
can be created in configuration code and passed around cheaply.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ucs.distributed.executor import Executor

__all__ = ["RayExecutor", "have_ray"]


def have_ray() -> bool:
    """Whether Ray (extra ``ray``) can be imported."""
    try:
        import ray  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def _import_ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RayExecutor needs Ray; install the optional extra: pip install -e '.[ray]' in the ucs repository"
        ) from exc
    return ray


def _apply(fn: Callable[..., Any], *args: Any) -> Any:
    """The one Ray task body: call ``fn`` (any picklable callable) on the resolved arguments."""
    return fn(*args)


class _StateRunner:
    """Actor body for :meth:`RayExecutor.map_actors`: builds the state once, then applies it."""

    def __init__(self, factory: Callable[[], Callable[[Any], Any]]) -> None:
        self.state = factory()

    def run(self, item: Any) -> Any:
        return self.state(item)


class _RecordRunner:
    """Ray Data ``map_batches`` body: one record per batch, numpy batch format in and out."""

    def __init__(self, factory: Callable[[], Callable[[Dict[str, Any]], Dict[str, Any]]]) -> None:
        self.state = factory()

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        import numpy as np

        n = len(batch["__position"])
        outs = []
        for r in range(n):
            record = {k: _plain(v[r]) for k, v in batch.items() if k != "__position"}
            out = dict(self.state(record))
            out["__position"] = int(batch["__position"][r])
            outs.append(out)
        keys = outs[0].keys()
        return {k: np.asarray([o[k] for o in outs]) for k in keys}


def _plain(value: Any) -> Any:
    """Arrow/numpy cell → plain Python (arrays of strings become lists of ``str``)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class RayExecutor(Executor):
    """Run the distributed stages on a Ray cluster.

    Parameters
    ----------
    address : str or None, default=None
        ``None``: connect to a running cluster if this process already called ``ray.init``,
        otherwise start a private local one. ``"local"``: always start a new local cluster.
        ``"auto"``: connect to the cluster running on this machine (``ray start --head``).
        ``"ray://host:10001"``: connect through Ray Client to a remote head node.
    num_cpus, num_gpus : int, optional
        Resources of a cluster *started* by this executor (ignored when connecting).
    runtime_env : dict, optional
        Ray runtime environment for the workers, for example
        ``{"pip": ["/shared/dist/ucs_icl-<version>-py3-none-any.whl[ray]"]}`` (a wheel built
        from the checkout; the package is not on PyPI) or ``{"py_modules": [ucs]}`` so that a remote cluster
        can import ``ucs``.
    object_store_memory : int, optional
        Bytes of shared memory for the object store of a cluster started here.
    progress : bool, default=False
        Show Ray Data progress bars.
    init_kwargs : dict, optional
        Further keyword arguments for ``ray.init``.

    Notes
    -----
    Tasks reserve ``num_cpus=1`` each by default; large shared inputs (the fitted PCA and
    dictionary, the pool index) are stored once with :meth:`put` and read zero-copy by every
    worker on the same node. If this executor started the cluster, :meth:`close` shuts it
    down; a cluster it merely connected to is left running.
    """

    name = "ray"

    def __init__(
        self,
        address: Optional[str] = None,
        num_cpus: Optional[int] = None,
        num_gpus: Optional[int] = None,
        runtime_env: Optional[Dict[str, Any]] = None,
        object_store_memory: Optional[int] = None,
        progress: bool = False,
        init_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        if address is not None and not isinstance(address, str):
            raise ValueError(f"address must be None, 'local', 'auto' or 'ray://host:port'; got {address!r}")
        for nm, v in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{nm} must be a non-negative integer or None; got {v!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.runtime_env = runtime_env
        self.object_store_memory = object_store_memory
        self.progress = bool(progress)
        self.init_kwargs = dict(init_kwargs or {})
        self._owns_cluster = False
        self._remote_fns: Dict[Tuple[int, float], Any] = {}

    # ------------------------------------------------------------------ connection
    def _ray(self):
        ray = _import_ray()
        if not ray.is_initialized():
            kwargs: Dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING)
            kwargs.update(self.init_kwargs)
            if self.runtime_env is not None:
                kwargs["runtime_env"] = self.runtime_env
            starts_cluster = self.address in (None, "local")
            if starts_cluster:
                kwargs["address"] = "local"
                if self.num_cpus is not None:
                    kwargs["num_cpus"] = self.num_cpus
                if self.num_gpus is not None:
                    kwargs["num_gpus"] = self.num_gpus
                if self.object_store_memory is not None:
                    kwargs["object_store_memory"] = self.object_store_memory
            else:
                kwargs["address"] = self.address
            ray.init(**kwargs)
            self._owns_cluster = starts_cluster
        ctx = _data_context()
        if ctx is not None:
            ctx.enable_progress_bars = self.progress
        return ray

    def start(self) -> "RayExecutor":
        """Connect now (otherwise the first task connects). Returns ``self``."""
        self._ray()
        return self

    def close(self) -> None:
        """Shut Ray down if this executor started the cluster."""
        if self._owns_cluster:
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()
            self._owns_cluster = False
        self._remote_fns.clear()

    @property
    def num_workers(self) -> int:
        ray = self._ray()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    # ------------------------------------------------------------------ primitives
    def put(self, obj: Any) -> Any:
        ray = self._ray()
        return obj if isinstance(obj, ray.ObjectRef) else ray.put(obj)

    def _remote(self, num_returns: int, num_cpus: float):
        key = (num_returns, float(num_cpus))
        rf = self._remote_fns.get(key)
        if rf is None:
            rf = self._ray().remote(num_returns=num_returns, num_cpus=num_cpus)(_apply)
            self._remote_fns[key] = rf
        return rf

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1, num_cpus: float = 1) -> Any:
        if not callable(fn):
            raise ValueError(f"fn must be callable; got {type(fn).__name__}")
        refs = self._remote(num_returns, num_cpus).remote(fn, *args)
        return tuple(refs) if num_returns > 1 else refs

    def get(self, handles: Any) -> Any:
        return self._ray().get(handles)

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
        ray = self._ray()
        from ray.util import ActorPool

        n = _n_actors(num_actors, self.num_workers, len(items), num_cpus)
        cls = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_StateRunner)
        factory_ref = ray.put(factory)
        actors = [cls.remote(factory_ref) for _ in range(n)]
        try:
            pool = ActorPool(actors)
            return list(pool.map(lambda a, item: a.run.remote(item), items))
        finally:
            for a in actors:
                ray.kill(a)

    def map_records(
        self,
        factory: Callable[[], Callable[[Dict[str, Any]], Dict[str, Any]]],
        records: Sequence[Dict[str, Any]],
        *,
        num_actors: Optional[int] = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
    ) -> List[Dict[str, Any]]:
        """Ray Data ``map_batches`` over an actor pool of ``num_actors`` replicas of ``factory()``."""
        records = list(records)
        if not records:
            return []
        self._ray()
        import ray.data

        n = _n_actors(num_actors, self.num_workers, len(records), num_cpus)
        rows = [dict(r, __position=i) for i, r in enumerate(records)]
        ds = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            _RecordRunner,
            fn_constructor_kwargs={"factory": factory},
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=n),
            num_cpus=num_cpus,
            num_gpus=num_gpus if num_gpus else None,
        )
        out = [{k: _plain(v) for k, v in row.items()} for row in ds.take_all()]
        out.sort(key=lambda r: r["__position"])
        for r in out:
            del r["__position"]
        if len(out) != len(records):
            raise RuntimeError(f"Ray Data returned {len(out)} results for {len(records)} records")
        return out

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus!r})"


def _n_actors(num_actors: Optional[int], workers: int, n_items: int, num_cpus: float) -> int:
    if num_actors is not None and (not isinstance(num_actors, int) or num_actors < 1):
        raise ValueError(f"num_actors must be a positive integer or None; got {num_actors!r}")
    default = max(1, int(workers // max(num_cpus, 1e-9))) if num_cpus else workers
    return max(1, min(num_actors or default, n_items))


def _data_context():
    try:
        import ray.data
    except Exception:  # pragma: no cover - ray without the data extra
        return None
    return ray.data.DataContext.get_current()

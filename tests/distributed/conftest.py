"""One local Ray cluster (2 CPUs, loopback, no dashboard) shared by the distributed tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_executor():
    """A :class:`~ucs.distributed.RayExecutor` on a private local cluster; skipped without Ray."""
    ray = pytest.importorskip("ray")
    import ucs
    from ucs.distributed import RayExecutor

    # workers must import this checkout of ucs even when it is not installed
    src = str(Path(ucs.__file__).resolve().parents[1])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *paths])
    if ray.is_initialized():  # pragma: no cover - another suite left one running
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        address="local",
        log_to_driver=False,
        object_store_memory=256 * 1024**2,
    )
    ex = RayExecutor()
    try:
        yield ex
    finally:
        ray.shutdown()

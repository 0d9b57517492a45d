"""Scale-out: run the heavy stages (embedding, clustering, selection) on an executor.

``LocalExecutor`` (the default) runs in-process with no extra dependency; ``RayExecutor`` runs
the same stage code on a Ray cluster (extra ``ray``). Ray is imported only when a
``RayExecutor`` first connects.
"""

from __future__ import annotations

from ucs.distributed.cluster import PoolClustering, cluster_pool
from ucs.distributed.embed import PoolEmbeddings, embed_pool
from ucs.distributed.eps_graph import EpsGraphResult, sharded_eps_components
from ucs.distributed.executor import EXECUTORS, Executor, LocalExecutor
from ucs.distributed.executors import ExecutorOptionError, get_executor, make_executor
from ucs.distributed.partition import DISTRIBUTED_PARTITIONS, kmeans_pool
from ucs.distributed.ray_executor import RayExecutor, have_ray
from ucs.distributed.select import select_queries
from ucs.distributed.sharding import load_shard, shard_ranges
from ucs.distributed.unionfind import UnionFind, connected_components_from_edges

__all__ = [
    "DISTRIBUTED_PARTITIONS",
    "EXECUTORS",
    "EpsGraphResult",
    "Executor",
    "ExecutorOptionError",
    "LocalExecutor",
    "PoolClustering",
    "PoolEmbeddings",
    "RayExecutor",
    "UnionFind",
    "cluster_pool",
    "connected_components_from_edges",
    "embed_pool",
    "get_executor",
    "kmeans_pool",
    "make_executor",
    "have_ray",
    "load_shard",
    "select_queries",
    "shard_ranges",
    "sharded_eps_components",
]

"""Pool embedding as a data-parallel stage: one model replica per worker, shards written to disk.

The pool is cut into contiguous shards of ``shard_size`` texts. Each shard is stored in an
:class:`~ucs.embedding.EmbeddingCache` rooted at ``out_dir`` under exactly the key the local
cache gives the same embedder and the same texts, so ``EmbeddingCache(out_dir).embed(embedder,
shard_texts)`` is a hit and nothing is embedded twice. Files are written atomically with a
content hash; shards already present and verified are skipped, so an interrupted run resumes
where it stopped. A small JSON manifest lists the shards in order.

On :class:`~ucs.distributed.RayExecutor` the pending shards stream through a Ray Data
``map_batches`` actor pool (one embedder per actor; ``num_gpus=1`` gives each replica a GPU).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from ucs import defaults as D
from ucs.distributed.executor import Executor
from ucs.distributed.executors import get_executor
from ucs.distributed.sharding import check_shard_size, shard_ranges
from ucs.embedding.base import Embedder, sanitize_texts
from ucs.embedding.cache import EmbeddingCache, cache_key, default_cache_dir
from ucs.utils.io import atomic_write_json, hash_array, hash_texts

__all__ = ["PoolEmbeddings", "embed_pool"]

_MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class PoolEmbeddings:
    """The embedded pool as ordered shards in an :class:`~ucs.embedding.EmbeddingCache` directory.

    Attributes
    ----------
    root : Path
        Cache directory holding the shards.
    identity : dict
        The embedder's identity (part of every shard key).
    ranges : ndarray of shape (n_shards, 2), int64
        Row range ``[start, stop)`` of each shard in the pool.
    keys : tuple of str
        Cache key of each shard.
    dim : int
        Embedding width.
    manifest : Path
        The JSON manifest describing this pool.
    n_embedded, n_skipped : int
        Shards computed by this call / found already on disk and verified.
    """

    root: Path
    identity: Dict[str, Any]
    ranges: NDArray[np.int64]
    keys: tuple
    dim: int
    manifest: Path
    n_embedded: int = 0
    n_skipped: int = 0

    @property
    def n(self) -> int:
        """Pool size."""
        return int(self.ranges[-1, 1]) if len(self.ranges) else 0

    @property
    def n_shards(self) -> int:
        return len(self.keys)

    @property
    def lengths(self) -> List[int]:
        return [int(b - a) for a, b in self.ranges]

    def shard_paths(self) -> List[Path]:
        """``.npy`` file of each shard, in pool order (readable by any worker that sees ``root``)."""
        cache = EmbeddingCache(self.root)
        return [cache._paths(k)[0] for k in self.keys]

    def shard(self, i: int) -> NDArray[np.float32]:
        """Shard ``i``, verified against its manifest (raises if missing or corrupt)."""
        arr = EmbeddingCache(self.root).get(self.keys[i])
        if arr is None:
            raise ValueError(
                f"shard {i} (key {self.keys[i]}) is missing or corrupt under {self.root}; rerun embed_pool"
            )
        return arr

    def iter_shards(self) -> Iterator[NDArray[np.float32]]:
        for i in range(self.n_shards):
            yield self.shard(i)

    def load(self) -> NDArray[np.float32]:
        """All shards concatenated, shape ``(n, dim)``. Memory ``O(n dim)``."""
        out = np.empty((self.n, self.dim), dtype=np.float32)
        for (a, b), arr in zip(self.ranges, self.iter_shards()):
            out[a:b] = arr
        return out

    @classmethod
    def from_manifest(cls, path: Union[str, "os.PathLike[str]"]) -> "PoolEmbeddings":
        """Reopen a pool from the manifest written by :func:`embed_pool`."""
        path = Path(path)
        m = json.loads(path.read_text(encoding="utf-8"))
        if m.get("format") != _MANIFEST_FORMAT:
            raise ValueError(f"{path} is not a pool manifest of format {_MANIFEST_FORMAT}")
        return cls(
            root=path.parent.parent,
            identity=m["identity"],
            ranges=np.asarray(m["ranges"], dtype=np.int64).reshape(-1, 2),
            keys=tuple(m["keys"]),
            dim=int(m["dim"]),
            manifest=path,
        )


class _EmbedShardWorker:
    """Per-worker state: one embedder replica and a handle on the cache directory."""

    def __init__(self, embedder_factory: Callable[[], Embedder], root: str, identity: Dict[str, Any]) -> None:
        self.embedder = embedder_factory()
        got = json.loads(json.dumps(dict(self.embedder.identity), sort_keys=True, default=str))
        if got != identity:
            raise ValueError(
                f"the embedder built on a worker has identity {got}, but the driver expected {identity}; "
                "make embedder_factory deterministic (same model, revision and options everywhere)"
            )
        self.identity = identity
        self.cache = EmbeddingCache(root)

    def __call__(self, record: Dict[str, Any]) -> Dict[str, Any]:
        texts = list(record["texts"])
        arr = np.ascontiguousarray(self.embedder.embed(texts), dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise ValueError(f"embedder returned shape {arr.shape} for {len(texts)} texts")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"embedder returned NaN or inf for shard {record['shard']}")
        th = hash_texts(texts)
        if cache_key(self.identity, th) != record["key"]:
            raise ValueError(f"shard {record['shard']}: texts changed in transit (key mismatch)")
        self.cache.put(record["key"], arr, self.identity, th)
        return {
            "shard": int(record["shard"]),
            "rows": int(arr.shape[0]),
            "dim": int(arr.shape[1]),
            "sha256": hash_array(arr),
        }


def _canonical_identity(identity: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(json.dumps(dict(identity), sort_keys=True, default=str))


def embed_pool(
    embedder_factory: Callable[[], Embedder],
    texts: Sequence[str],
    executor: Union[None, str, Executor] = None,
    shard_size: int = D.TEXT_SHARD_SIZE,
    out_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    identity: Optional[Dict[str, Any]] = None,
    num_actors: Optional[int] = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
) -> PoolEmbeddings:
    """Embed a pool shard by shard on ``executor``, writing verified, resumable shards.

    Parameters
    ----------
    embedder_factory : callable
        Zero-argument, picklable callable returning an :class:`~ucs.embedding.Embedder` (a class,
        a module-level function or a ``functools.partial``); called once per worker.
    texts : sequence of str
        The pool's input texts, in pool order.
    executor : {"local", "ray"} or Executor, optional
        Default local.
    shard_size : int, default=10000
        Texts per shard (and per cache entry). Keep it fixed across runs to reuse shards.
    out_dir : path, optional
        Cache directory (default the local embedding cache, :func:`~ucs.embedding.default_cache_dir`
        ``/ "embeddings"``). On a multi-node cluster it must be storage every node can write.
    identity : dict, optional
        The embedder's :attr:`~ucs.embedding.Embedder.identity`. When omitted the driver builds
        one embedder with ``embedder_factory()`` to read it.
    num_actors : int, optional
        Embedder replicas (default: one per worker CPU).
    num_cpus, num_gpus : float
        Resources per replica.

    Returns
    -------
    PoolEmbeddings

    Notes
    -----
    Time: the embedder's cost over the pending shards divided across replicas, plus hashing
    (``O(total characters)`` on the driver and ``O(n d)`` to verify existing shards). The driver
    never holds the embeddings; each replica holds one shard's texts and vectors at a time.
    """
    shard_size = check_shard_size(shard_size)
    texts = sanitize_texts(texts)
    if len(texts) == 0:
        raise ValueError("texts is empty; give at least one pool text")
    ex = get_executor(executor)
    root = Path(out_dir) if out_dir is not None else default_cache_dir() / "embeddings"
    if identity is None:
        identity = dict(embedder_factory().identity)
    identity = _canonical_identity(identity)
    cache = EmbeddingCache(root)
    ranges = shard_ranges(len(texts), shard_size)
    keys: List[str] = []
    pending: List[Dict[str, Any]] = []
    dims: Dict[int, int] = {}
    for i, (a, b) in enumerate(ranges):
        chunk = texts[a:b]
        key = cache_key(identity, hash_texts(chunk))
        keys.append(key)
        have = cache.get(key)
        if have is not None and have.shape[0] == b - a:
            dims[i] = int(have.shape[1])
        else:
            pending.append({"shard": i, "key": key, "texts": chunk})
    done = ex.map_records(
        _factory(embedder_factory, str(root), identity),
        pending,
        num_actors=num_actors,
        num_cpus=num_cpus,
        num_gpus=num_gpus,
    )
    for rec in done:
        dims[int(rec["shard"])] = int(rec["dim"])
    widths = set(dims.values())
    if len(widths) != 1:
        raise ValueError(
            f"shards have different embedding widths {sorted(widths)}; is out_dir shared by other models?"
        )
    dim = widths.pop()
    pool_key = hashlib.sha256(
        json.dumps({"identity": identity, "keys": keys}, sort_keys=True).encode()
    ).hexdigest()
    manifest = root / "pools" / f"{pool_key}.json"
    atomic_write_json(
        manifest,
        {
            "format": _MANIFEST_FORMAT,
            "identity": identity,
            "ranges": ranges.tolist(),
            "keys": keys,
            "dim": dim,
            "n": len(texts),
            "shard_size": shard_size,
        },
    )
    return PoolEmbeddings(
        root=root,
        identity=identity,
        ranges=ranges,
        keys=tuple(keys),
        dim=dim,
        manifest=manifest,
        n_embedded=len(done),
        n_skipped=len(keys) - len(done),
    )


def _factory(embedder_factory: Callable[[], Embedder], root: str, identity: Dict[str, Any]):
    import functools

    return functools.partial(_EmbedShardWorker, embedder_factory, root, identity)

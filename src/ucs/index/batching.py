"""Micro-batching for a server: the selections of concurrent requests answered together, on worker threads.

A :class:`SelectionBatcher` owns ``workers`` worker threads, the only ones that embed queries and select.
Requests are queued with :meth:`SelectionBatcher.submit`; a worker takes every request waiting when it is free
(after waiting up to ``window_s`` for more when fewer than ``max_queries`` wait and its previous batch held
several requests), embeds the texts of all requests that can share a call with one
:meth:`SelectorIndex.embed_queries`, selects for them with one :meth:`SelectorIndex.select`, and hands each
request its own rows. Other work on the model (a new version's warm-up, the embedding of added examples) runs
on a worker through :meth:`SelectionBatcher.call`, between that worker's batches. With several workers,
batches run side by side: the query encoder (ONNX Runtime, one intra-op thread per call) and the selection
(numpy, faiss) are read-only and release the GIL in their kernels, and each worker sets its own thread counts
(OpenMP's are per thread). The answers do not depend on which worker, or which batch, answers a request
(below).

**Same answers as alone.** Requests share a call only where that cannot change a bit of any answer:

* the embedding is shared when the embedder says a text's vector does not depend on the other texts of a call
  (``query_batch_invariant``: the ONNX Runtime query encoder, checked when it is built; the torch path rounds
  differently in a batch, so there each text is embedded alone);
* the selection is shared for methods whose per-query work is independent of the other queries
  (:data:`BATCHED_METHODS`) when the candidate search is (``row_invariant``: faiss scans each query on its
  own, numpy's matrix product rounds by batch size);
* requests with ``where`` or ``dedupe`` and query-independent methods are answered one by one, on the worker.

Everything else about a request (its ``k``, ``order``, ``example_keys``, its index version) must match for two
requests to share a selection; those that differ form separate groups of the same batch.

A failure in a shared call is retried request by request, so one bad request fails alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

import numpy as np

from ucs.embedding.threads import limit_threads

__all__ = ["BATCHED_METHODS", "SelectionBatcher"]

_LOG = logging.getLogger(__name__)

#: Methods whose selection for several queries is, query by query, the selection of each alone (bit for bit;
#: tested in tests/index/test_batching.py): their per-query work reads only that query's candidates.
BATCHED_METHODS = ("topk", "topk+ucs", "dpp", "dpp+ucs", "mmr", "labelaware")


@dataclass
class _Select:
    index: Any
    texts: Optional[List[str]]
    k: int
    order: Optional[str]
    example_keys: Optional[Tuple[str, ...]]
    where: Optional[Dict[str, Any]]
    dedupe: Optional[float]
    future: Future = field(default_factory=Future)

    def shares(self) -> bool:
        """Whether this request may share calls with others (see the module notes)."""
        index = self.index
        search = getattr(index, "search_", None)
        return (
            self.texts is not None
            and self.where is None
            and self.dedupe is None
            and index.method_ in BATCHED_METHODS
            and bool(getattr(search, "row_invariant", False))
        )

    def key(self) -> Tuple[Any, ...]:
        return (id(self.index), self.k, self.order, self.example_keys)


def _size(job: Any) -> int:
    """A queued job's share of a batch: its queries, or one for a call."""
    return max(1, len(job.texts or ())) if isinstance(job, _Select) else 1


@dataclass
class _Call:
    fn: Callable[..., Any]
    args: Tuple[Any, ...]
    future: Future = field(default_factory=Future)


class SelectionBatcher:
    """The worker thread that answers every selection of a server, several requests per call.

    Parameters
    ----------
    window_s : float, default=0.002
        When the worker is free, fewer than ``max_queries`` queries wait and its previous batch held several
        requests (so others are likely on their way), it waits this long for more before it starts (``0``: it
        starts at once with what waits; requests that arrive while it works form the next batch either way). A
        request after a batch of one, as from a lone client, starts at once.
    max_queries : int, default=64
        Queries in one batch at most (a request of more queries is answered in a batch of its own).
    threads : int, optional
        torch / BLAS / OpenMP threads while a worker embeds and selects (default: unchanged).
    workers : int, default=1
        Worker threads answering batches side by side (``ucs serve`` passes
        :data:`ucs.defaults.SERVE_WORKERS`, at most the cores available). With ``w`` workers and one thread
        each, up to ``w`` batches run at once.

    Attributes
    ----------
    n_batches_, n_requests_, largest_batch_ : int
        Batches run, select requests answered, most requests in one batch.

    Notes
    -----
    A batch of ``R`` requests with ``Q`` queries in all costs one embedding call over the ``Q`` texts (grouped
    by length, see :func:`ucs.embedding.onnx_query.length_groups`) and one selection call, instead of ``R`` of
    each; what remains per request is splitting the rows, O(Q).
    """

    def __init__(
        self, window_s: float = 0.002, max_queries: int = 64, threads: Optional[int] = None, workers: int = 1
    ) -> None:
        if not window_s >= 0:
            raise ValueError(f"window_s must be >= 0 seconds; got {window_s!r}")
        if not isinstance(max_queries, int) or max_queries < 1:
            raise ValueError(f"max_queries must be a positive integer; got {max_queries!r}")
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer (worker threads); got {workers!r}")
        self.window_s = float(window_s)
        self.max_queries = max_queries
        self.threads = threads
        self.workers = workers
        self.n_batches_ = self.n_requests_ = self.largest_batch_ = 0
        self._queue: Deque[Any] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._last_batch = 0
        self._idle = 0  # workers in _take
        self._threads = [
            threading.Thread(target=self._loop, name=f"ucs-serve-batcher-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ callers
    def submit(
        self,
        index: Any,
        texts: Optional[List[str]],
        k: int,
        *,
        order: Optional[str] = None,
        example_keys: Optional[List[str]] = None,
        where: Optional[Dict[str, Any]] = None,
        dedupe: Optional[float] = None,
    ) -> "Future[List[Any]]":
        """Queue one request: ``index.select(texts, k, order=..., ...)`` → a future of its list of
        :class:`~ucs.index.IndexSelection` (one per text; one shared selection when ``texts`` is ``None``, for
        query-independent methods). A ``ValueError`` of the selection is the future's exception."""
        job = _Select(
            index,
            None if texts is None else list(texts),
            int(k),
            order,
            None if example_keys is None else tuple(example_keys),
            where,
            dedupe,
        )
        self._put(job)
        return job.future

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on a worker, between its batches, and return its result (or raise its exception):
        for other work with the model (warming a new version up, embedding added examples)."""
        if threading.current_thread() in self._threads:
            return fn(*args)
        job = _Call(fn, args)
        self._put(job)
        return job.future.result()

    def close(self) -> None:
        """Finish what is queued, then stop the workers."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()

    def _put(self, job: Any) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the selection batcher is closed")
            self._queue.append(job)
            self._cond.notify()

    # ------------------------------------------------------------------ worker
    def _loop(self) -> None:
        while True:
            jobs = self._take()
            if jobs is None:
                return
            try:
                with limit_threads(self.threads):
                    self._run(jobs)
            except BaseException as exc:  # noqa: BLE001 - never leave a caller waiting
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(exc)

    def _take(self) -> Optional[List[Any]]:
        """The next batch: the waiting jobs up to ``max_queries`` queries (waiting ``window_s`` for more),
        shared with the other idle workers: with ``w`` workers free, this one takes about ``1 / w`` of what
        waits (in queries; a call counts as one) and wakes the next for the rest."""
        with self._cond:
            self._idle += 1
            try:
                while not self._queue:
                    if self._closed:
                        return None
                    self._cond.wait()
                if (
                    self.window_s > 0 and self._last_batch > 1 and not self._closed
                ):  # a lone client never waits
                    deadline = time.monotonic() + self.window_s
                    while self._n_queries() < self.max_queries and not self._closed:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
                share = min(self.max_queries, -(-sum(map(_size, self._queue)) // self._idle))
                jobs, n = [], 0
                while self._queue:
                    size = _size(self._queue[0])
                    if jobs and n + size > share:
                        break
                    jobs.append(self._queue.popleft())
                    n += size
                self._last_batch = sum(isinstance(j, _Select) for j in jobs)
                if self._queue:
                    self._cond.notify()
                return jobs
            finally:
                self._idle -= 1

    def _n_queries(self) -> int:
        return sum(len(j.texts or ()) if isinstance(j, _Select) else 0 for j in self._queue)

    def _run(self, jobs: List[Any]) -> None:
        groups: Dict[Tuple[Any, ...], List[_Select]] = {}
        alone: List[Any] = []
        for job in jobs:
            if isinstance(job, _Select) and job.shares():
                groups.setdefault(job.key(), []).append(job)
            else:
                alone.append(job)
        selects = sum(isinstance(j, _Select) for j in jobs)
        if selects:
            with self._cond:
                self.n_batches_ += 1
                self.n_requests_ += selects
                self.largest_batch_ = max(self.largest_batch_, selects)
        for group in groups.values():
            if len(group) == 1:
                alone.append(group[0])
                continue
            try:
                self._run_group(group)
            except Exception:  # noqa: BLE001 - answered one by one below: only a bad request fails
                alone.extend(group)
        for job in alone:
            self._run_alone(job)

    def _run_group(self, group: List[_Select]) -> None:
        """One embedding call (when the embedder allows) and one selection call for requests that share
        them."""
        first = group[0]
        index = first.index
        texts = [t for job in group for t in job.texts]
        emb = index.get_embedder()
        if getattr(emb, "query_batch_invariant", False):
            E = index.embed_queries(texts)
        else:
            E = np.concatenate([index.embed_queries([t]) for t in texts])
        rows = index.select(
            texts, first.k, query_embeddings=E, order=first.order, example_keys=first.example_keys
        )
        start = 0
        for job in group:
            n = len(job.texts)
            job.future.set_result(rows[start : start + n])
            start += n

    def _run_alone(self, job: Any) -> None:
        if job.future.done():
            return
        try:
            if isinstance(job, _Call):
                job.future.set_result(job.fn(*job.args))
                return
            out = job.index.select(
                job.texts,
                job.k,
                order=job.order,
                where=job.where,
                dedupe=job.dedupe,
                example_keys=job.example_keys,
            )
            job.future.set_result(out if isinstance(out, list) else [out])
        except Exception as exc:  # noqa: BLE001 - the caller's to raise (a bad filter is its ValueError)
            job.future.set_exception(exc)

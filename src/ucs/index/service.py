"""The selector index over HTTP: a FastAPI app that answers ``POST /v1/select`` from a saved index folder.

:func:`create_app` builds the app; ``ucs serve INDEX`` runs it with uvicorn (needs the ``serve`` extra).
Endpoints:

* ``POST /v1/select``: one query (``query``) or several (``queries``), ``k``, and optionally ``order``,
  ``where``, ``dedupe`` and ``example_keys`` → per query the demonstrations, their scores, cluster ids, the
  subset's Φ and ``n_matched`` / ``note`` (:class:`ucs.index.IndexSelection`);
* ``POST /v1/examples``: add examples and save them as a new version. Off unless the app has a token; a
  request needs ``Authorization: Bearer <token>`` (none: 401, another: 403). The token is registered with
  :func:`ucs.utils.redact.register_secret` and never logged;
* ``GET /health``: the version served, the example count, the method;
* ``/docs`` and ``/openapi.json``: the request and answer models.

**Batching.** Every selection runs on one of the worker threads (:class:`ucs.index.batching.SelectionBatcher`,
``workers`` of them side by side): the requests that arrive together are answered with one embedding call and
one selection call, each request getting exactly the rows it would get alone (the module says when requests
share a call). ``/v1/select`` is a coroutine that waits for its rows, so the event loop keeps reading requests
while the worker computes (ONNX Runtime and faiss release the GIL).

**Reloading.** :class:`ServedIndex` reads the folder's ``CURRENT`` (:meth:`SelectorIndex.latest_version`, one
small file) at most every ``reload_interval_s`` as requests arrive; a new version is loaded in a background
thread, warmed up on the worker, and swapped in with one assignment, so no request waits for it. A
request takes the index once, when it starts, and finishes on that version. A version that fails to load
(damaged files) is logged and not used; the old one keeps serving.

**Additions** never stop selections for longer than the new examples' embedding (on the worker, between two
batches): the served version is copied (:meth:`SelectorIndex.copy`, sharing its arrays), the copy grows
(:meth:`SelectorIndex.add_examples` with the embeddings) and is saved as the next version in the request's own
thread while the worker keeps answering from the served one, which the new version then replaces with one
assignment. One addition at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Literal, Optional, Union

import numpy as np
from fastapi import Depends, FastAPI, Header, HTTPException
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ucs import defaults as D
from ucs.embedding.threads import set_threads
from ucs.index.batching import SelectionBatcher
from ucs.index.examples import example_text, query_text
from ucs.index.index import SelectorIndex
from ucs.utils.cpu import available_cores
from ucs.utils.redact import redact, register_secret

__all__ = [
    "ServedIndex",
    "default_workers",
    "create_app",
    "SelectRequest",
    "SelectResponse",
    "AddRequest",
    "AddResponse",
    "Health",
    "MAX_QUERIES",
    "MAX_K",
    "MAX_ADD",
]

_LOG = logging.getLogger(__name__)

#: Queries per ``/v1/select`` request, demonstrations per query, examples per ``/v1/examples`` request.
MAX_QUERIES, MAX_K, MAX_ADD = 256, 256, 10_000

Query = Union[str, Dict[str, str]]
Order = Literal["selected", "similar_first", "similar_last", "vote_last"]


class SelectRequest(BaseModel):
    """Which demonstrations for these queries."""

    model_config = ConfigDict(extra="forbid")
    query: Optional[Query] = Field(
        None, description="One query: its text, or a dict of the index's input fields."
    )
    queries: Optional[List[Query]] = Field(
        None, min_length=1, max_length=MAX_QUERIES, description="Several queries (instead of `query`)."
    )
    k: int = Field(4, ge=0, le=MAX_K, description="Demonstrations per query (clipped to the index size).")
    order: Optional[Order] = Field(None, description="Prompt order; default the index's own.")
    where: Optional[Dict[str, Any]] = Field(
        None, description='Choose only among examples whose fields match: {"lang": "de", "tier": ["a", "b"]}.'
    )
    dedupe: Optional[float] = Field(None, gt=0, le=1, description="No two returned with cosine >= this.")
    example_keys: Optional[List[str]] = Field(None, description="Return only these fields of each example.")

    @model_validator(mode="after")
    def _one_of(self) -> "SelectRequest":
        if self.query is not None and self.queries is not None:
            raise ValueError("give either query or queries, not both")
        return self


class Selection(BaseModel):
    """The demonstrations chosen for one query."""

    query: Optional[str] = Field(None, description="The text that was embedded (null: query-independent).")
    examples: List[Dict[str, Any]] = Field(description="The chosen examples, in prompt order.")
    indices: List[int] = Field(description="Their positions in the index.")
    scores: List[Optional[float]] = Field(description="Each one's score when chosen (null where none).")
    cluster_ids: List[int] = Field(description="Their latent clusters.")
    phi: float = Field(description="Coverage Φ of the subset under the index's unseen estimator.")
    clusters_covered: int
    n_matched: Optional[int] = Field(None, description="With `where`: how many examples matched.")
    note: Optional[str] = Field(None, description="Why fewer than k came back, else null.")


class SelectResponse(BaseModel):
    version: int = Field(description="The index version that answered.")
    method: str
    k: int
    results: List[Selection] = Field(description="One per query, in request order.")


class AddRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    examples: List[Dict[str, Any]] = Field(
        min_length=1, max_length=MAX_ADD, description="Examples with the index's input (and output) fields."
    )


class AddResponse(BaseModel):
    version: int = Field(description="The version saved with the new examples (now served).")
    added: int
    n_examples: int
    joined: Optional[int] = Field(None, description="New examples that joined an existing cluster.")


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: int
    n_examples: int
    n_clusters: int
    method: str
    adds_enabled: bool


class ServedIndex:
    """The index a server answers from, reloaded when its folder gets a new version.

    Parameters
    ----------
    directory : path
        The folder written by :meth:`SelectorIndex.save`.
    embedder : Embedder, optional
        Passed to every :meth:`SelectorIndex.load` (default: the index's own retrieval model or backbone).
    reload_interval_s : float, default=1.0
        Read ``CURRENT`` at most this often (``0``: on every request).
    loader : callable, optional
        ``loader(directory, version) -> SelectorIndex`` (default: :meth:`SelectorIndex.load` without warm-up).
    batch_window_s : float, default=0.002
        How long the free worker waits for more requests to answer together (:class:`SelectionBatcher`).
    max_batch : int, default=64
        Queries answered in one batch at most.
    threads : int, optional
        torch / BLAS / OpenMP threads of each worker (default: unchanged; ``ucs serve`` passes the embedder's
        ``query_threads``).
    workers : int, optional
        Worker threads answering batches side by side (default :data:`ucs.defaults.SERVE_WORKERS`, at most the
        cores available).

    Attributes
    ----------
    index : SelectorIndex
        The version served now (replaced, never modified).
    batcher : SelectionBatcher
        The workers that run every selection and every use of the model.
    """

    def __init__(
        self,
        directory: Union[str, Path],
        embedder: Any = None,
        reload_interval_s: float = 1.0,
        loader: Optional[Callable[..., SelectorIndex]] = None,
        batch_window_s: float = 0.002,
        max_batch: int = 64,
        threads: Optional[int] = None,
        workers: Optional[int] = None,
    ) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.reload_interval_s = float(reload_interval_s)
        self._loader = loader or (
            lambda d, v: SelectorIndex.load(d, embedder=self.embedder, warmup=False, version=v)
        )
        if workers is None:
            workers = default_workers()
        self.batcher = SelectionBatcher(
            window_s=batch_window_s, max_queries=max_batch, threads=threads, workers=workers
        )
        # additions and reloads: one thread, below the worker's priority where the OS allows
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="ucs-serve-writer", initializer=_background)
        self._write_lock = threading.Lock()  # one addition (copy, add, save) at a time
        self._swap_lock = threading.Lock()
        self._reloading = False
        self._failed: Optional[int] = None
        self._checked = 0.0
        try:
            self.index = self._load(None)
            if (
                threads is not None
            ):  # once the model's libraries are loaded: for good, so nothing toggles them
                self.batcher.call(set_threads, threads)
        except BaseException:
            self.close()
            raise

    def _load(self, version: Optional[int]) -> SelectorIndex:
        index = self._loader(self.directory, version)
        if self.embedder is None:
            self.embedder = index.embedder  # later versions reuse the loaded model
        self.batcher.call(index.warmup)
        return index

    def close(self) -> None:
        """Stop the worker (after the selections queued) and the writer (after its addition or reload)."""
        self.batcher.close()
        self._writer.shutdown(wait=True)

    def warmup_adds(self) -> None:
        """Embed one example once, on the worker, as an addition does: the pool's embedding path (torch for a
        sentence-transformers model) is not the queries' (ONNX Runtime), and its first call initialises it
        (about half a second of the worker's time for all-MiniLM-L6-v2), which would otherwise stall the
        selections queued behind the first addition."""
        index = self.index
        probe = example_text(index.examples_[0], index.input_keys_)
        self.batcher.call(lambda: index.get_embedder().embed([probe]))

    def current(self) -> SelectorIndex:
        """The index to answer one request with (starts a background reload when a newer version is saved)."""
        now = time.monotonic()
        if now - self._checked >= self.reload_interval_s:
            self._checked = now
            latest = SelectorIndex.latest_version(self.directory)
            if latest is not None and latest != self.index.version_ and latest != self._failed:
                self._start_reload(latest)
        return self.index

    def select(self, index: SelectorIndex, texts: Optional[List[str]], k: int, **options: Any) -> "Any":
        """A future of ``index``'s selections for ``texts`` (see :meth:`SelectionBatcher.submit`)."""
        return self.batcher.submit(index, texts, k, **options)

    def _start_reload(self, version: int) -> None:
        with self._swap_lock:
            if self._reloading:
                return
            self._reloading = True
        self._writer.submit(self.reload, version)

    def reload(self, version: Optional[int] = None) -> SelectorIndex:
        """Load ``version`` (default the current one) and serve it; a failure is logged, the old one stays."""
        try:
            if version is not None and version == self.index.version_:  # an addition saved and served it
                return self.index
            index = self._load(version)
            with self._swap_lock:  # only while it is still the folder's current version (an addition
                # may have saved and swapped in a newer one meanwhile)
                current = SelectorIndex.latest_version(self.directory)
                if index.version_ != self.index.version_ and index.version_ == current:
                    _LOG.info(
                        "serving version %s of %s (%d examples)",
                        index.version_,
                        self.directory,
                        index.n_examples_,
                    )
                    self.index = index
        except Exception as exc:  # noqa: BLE001 - a damaged version is not served
            self._failed = version
            _LOG.warning("version %s of %s was not loaded: %s", version, self.directory, redact(exc))
        finally:
            with self._swap_lock:
                self._reloading = False
        return self.index

    def add(self, examples: List[Dict[str, Any]]) -> SelectorIndex:
        """Add ``examples`` to the newest saved version, save it as the next one and serve it.

        The served version is the base when it is the folder's current one (else the current one is loaded).
        Only the examples' embedding runs on the worker; the copy, the addition and the save run on the writer
        thread (at a lower priority) while the worker keeps answering from the served version. Another process
        saving into the folder between the base's read and this save (rechecked up to three times) would have
        its version superseded by one without its examples: that is logged. Keep one writer per folder."""
        return self._writer.submit(self._add, examples).result()

    def _add(self, examples: List[Dict[str, Any]]) -> SelectorIndex:
        with self._write_lock:
            for _ in range(3):  # another process saved meanwhile: start again from its version
                base = self.index
                if SelectorIndex.latest_version(self.directory) != base.version_:
                    base = self._loader(self.directory, None)
                E = self.batcher.call(base.embed_examples, examples)  # the shared model, between two batches
                grow = base.copy().add_examples
                # Set-BSR's refit embeds the pool's tokens with the model: that part runs on the worker too
                index = (
                    self.batcher.call(grow, examples, E)
                    if base.selector_.needs_token_embedder
                    else grow(examples, E)
                )
                if SelectorIndex.latest_version(self.directory) == base.version_:
                    break
            index.save(self.directory)
            if index.version_ != base.version_ + 1:
                _LOG.warning(
                    "another writer saved %s while examples were added: version %s lacks what it added",
                    self.directory,
                    index.version_,
                )
            with self._swap_lock:
                self.index = index
            _LOG.info(
                "added %d examples to %s: version %s (%d examples)",
                len(examples),
                self.directory,
                index.version_,
                index.n_examples_,
            )
            return index


def default_workers() -> int:
    """The worker threads of a server started without ``workers``: :data:`ucs.defaults.SERVE_WORKERS`, at most
    the cores available to this process, at least one."""
    return max(1, min(D.SERVE_WORKERS, available_cores()))


def _background() -> None:
    """Lower the calling thread's priority (Linux: a thread's nice value is its own), so that additions and
    reloads take the cores the worker and the event loop leave free. Elsewhere nothing changes (there the call
    would lower the whole process)."""
    if sys.platform.startswith("linux"):
        try:
            nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        except (AttributeError, OSError):  # not permitted here: the writer keeps the process's priority
            pass


def _selection(s: Any) -> Dict[str, Any]:
    """One :class:`Selection` as plain JSON values (the answer is written without a second validation)."""
    return {
        "query": s.query,
        "examples": s.examples,
        "indices": [int(i) for i in s.indices],
        "scores": [float(x) if np.isfinite(x) else None for x in np.asarray(s.scores, dtype=float)],
        "cluster_ids": [int(c) for c in s.cluster_ids],
        "phi": float(s.phi),
        "clusters_covered": int(s.clusters_covered),
        "n_matched": s.n_matched,
        "note": s.note,
    }


def _authorize(token: Optional[str]) -> Callable[..., None]:
    """The dependency of ``/v1/examples``: off without a token, else ``Authorization: Bearer <token>``."""

    def check(authorization: Optional[str] = Header(None, description="Bearer <token>")) -> None:
        if token is None:
            raise HTTPException(
                403,
                "adding examples is off: start `ucs serve` with a token in the environment "
                "variable named by --token-env",
            )
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise HTTPException(
                401, "send the header Authorization: Bearer <token>", headers={"WWW-Authenticate": "Bearer"}
            )
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise HTTPException(403, "the bearer token is not the server's")

    return check


def create_app(served: ServedIndex, token: Optional[str] = None) -> FastAPI:
    """The FastAPI app answering from ``served``; ``token`` turns ``POST /v1/examples`` on."""
    token = token.strip() if token and token.strip() else None
    if token is not None:
        register_secret(token)
        served.warmup_adds()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        served.close()  # the server stops: the worker finishes what is queued

    app = FastAPI(
        title="ucs selector index",
        summary="Few-shot demonstrations per query (Unseen Coverage Selection).",
        lifespan=lifespan,
    )
    app.state.served = served

    @app.exception_handler(ValueError)
    async def _bad_value(
        request: Any, exc: ValueError
    ) -> JSONResponse:  # unknown filter field, bad example ...
        return JSONResponse({"detail": redact(exc)}, status_code=400)

    @app.post(
        "/v1/select", response_model=SelectResponse, responses={400: {"description": "A bad filter or query"}}
    )
    async def select(req: SelectRequest) -> Response:
        index = served.current()
        if req.query is None and req.queries is None and index.selector_.query_dependent:
            raise HTTPException(422, f"method {index.method_!r} chooses per query: give query or queries")
        items = req.queries if req.queries is not None else (None if req.query is None else [req.query])
        texts = None if items is None else [query_text(q, index.input_keys_) for q in items]
        rows = await asyncio.wrap_future(
            served.select(
                index,
                texts,
                req.k,
                order=req.order,
                where=req.where,
                dedupe=req.dedupe,
                example_keys=req.example_keys,
            )
        )
        return JSONResponse(
            {
                "version": index.version_,
                "method": index.method_,
                "k": req.k,
                "results": [_selection(s) for s in rows],
            }
        )

    @app.post(
        "/v1/examples",
        response_model=AddResponse,
        dependencies=[Depends(_authorize(token))],
        responses={401: {"description": "No bearer token"}, 403: {"description": "Off, or a wrong token"}},
    )
    def add(req: AddRequest) -> AddResponse:
        index = served.add(req.examples)
        placed = getattr(index, "last_placement_", None)
        joined = placed.get("joined") if isinstance(placed, dict) else None
        return AddResponse(
            version=index.version_, added=len(req.examples), n_examples=index.n_examples_, joined=joined
        )

    @app.get("/health", response_model=Health)
    def health() -> Health:
        index = served.current()
        return Health(
            version=index.version_,
            n_examples=index.n_examples_,
            n_clusters=index.n_clusters_,
            method=index.method_,
            adds_enabled=token is not None,
        )

    return app

"""One backbone in several worker processes: prompts scored, or answered, side by side on a machine's cores.

A llama.cpp or transformers backbone computes one prompt at a time, and its own threads scale poorly on the
small batches of one prompt (and collapse when another job takes a core: llama.cpp's threads spin on a
barrier). :class:`BackbonePool` starts ``workers`` processes instead, each with its own copy of the model on
one thread, and hands each a share of the prompts
(:meth:`BackbonePool.score_many`, :meth:`BackbonePool.generate`).

Every worker loads the same model with the same options, and a prompt's scores do not depend on which prompts
a worker saw before it (the llama.cpp engine's prefix reuse keeps exactly the numbers of a fresh context,
``tests/models/test_llamacpp.py``), so the answers are those of one process, bit for bit, whatever the number
of workers; :attr:`BackbonePool.identity` is the backbone's own. Memory: the weights are memory-mapped
(llama.cpp, shared through the page cache) or loaded once per worker (transformers), plus each worker's KV
cache.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ucs.models.llama_kernels import child_environment
from ucs.utils.cpu import available_cores

__all__ = ["BackbonePool", "default_workers"]

_WORKER: Dict[str, Any] = {}


def default_workers() -> int:
    """One worker per core this process may run on (:func:`ucs.utils.cpu.available_cores`)."""
    return available_cores()


def _start(
    model: str, engine: str, kwargs: Dict[str, Any], kernels: Optional[Dict[str, Optional[str]]] = None
) -> None:
    """Worker initializer: the parent's llama.cpp build (``kernels``, before anything loads it), one thread,
    then the backbone."""
    from ucs.models.llama_kernels import apply_environment
    from ucs.models.registry import load_backbone

    apply_environment(kernels or {})
    if engine == "transformers":
        import torch

        torch.set_num_threads(1)
    _WORKER["bb"] = load_backbone(model, engine=engine, **kwargs).load()


def _score(prefix: str, continuations: Sequence[str]) -> Tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    scores = _WORKER["bb"].score_continuations(prefix, continuations)
    return np.asarray(scores, dtype=np.float64), time.perf_counter() - t0


def _choose(prefix: str, continuations: Sequence[str]) -> Tuple[Tuple[int, float], float]:
    t0 = time.perf_counter()
    bb = _WORKER["bb"]
    if hasattr(bb, "choose_continuation"):
        found = bb.choose_continuation(prefix, continuations)
    else:
        scores = bb.score_continuations(prefix, continuations)
        found = (int(np.argmax(scores)), float(np.max(scores)))
    return found, time.perf_counter() - t0


def _generate(prompt: str, options: Dict[str, Any]) -> Tuple[str, float]:
    t0 = time.perf_counter()
    out = _WORKER["bb"].generate([prompt], **options)
    return out[0], time.perf_counter() - t0


class BackbonePool:
    """``workers`` processes, each holding ``load_backbone(model, engine, **kwargs)`` on one thread.

    Parameters
    ----------
    model : str
        What :func:`ucs.models.load_backbone` takes: ``"smollm2"``, ``"gemma3"``, a GGUF file, a model
        directory or a hub id (not an endpoint URL: a served model is parallel already).
    engine : {"llama", "transformers"} or None
        ``None``: the engine :func:`~ucs.models.load_backbone` chooses here (checked once, in this process).
    workers : int, optional
        Worker processes (default :func:`default_workers`, the cores available).
    **kwargs
        The backbone's options; a llama.cpp backbone's ``n_threads`` is set to 1.

    Notes
    -----
    The workers start (spawned) on the first scoring or generation call, each loading the model (SmolLM2:
    ≈ 2 s). ``score_many`` of ``n`` prompts costs ≈ ``n / workers`` prompts of wall time when the cores are
    free. Tokenising, counting tokens and :attr:`identity` use a copy in this process.
    """

    def __init__(
        self, model: str, engine: Optional[str] = None, workers: Optional[int] = None, **kwargs: Any
    ) -> None:
        from ucs.models.registry import load_backbone

        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise ValueError(
                f"workers must be a positive integer (processes answering side by side); got {workers!r}"
            )
        if str(model).startswith(("http://", "https://")):
            raise ValueError(
                f"a served model ({model}) answers requests in parallel already; pass it to "
                "load_backbone, not to BackbonePool"
            )
        self.workers = workers or default_workers()
        self.local = load_backbone(model, engine=engine, **kwargs)
        self.engine = self.local.engine
        if self.engine == "llama":
            kwargs = {**kwargs, "n_threads": 1}
        self._recipe = (str(model), self.engine, kwargs)
        self._pool: Optional[ProcessPoolExecutor] = None
        self.generates_one_at_a_time = getattr(self.local, "generates_one_at_a_time", False)

    @property
    def identity(self) -> Dict[str, Any]:
        return self.local.identity

    @property
    def name(self) -> str:
        return getattr(self.local, "name", self._recipe[0])

    def count_tokens(self, text: str) -> int:
        return self.local.count_tokens(text)

    def tokenize(self, text: str, add_special: bool = True) -> List[int]:
        return self.local.tokenize(text, add_special)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            if self.engine == "llama":  # convert a float copy once, here, not in every worker at once
                self.local.load()
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=mp.get_context("spawn"),
                initializer=_start,
                initargs=(*self._recipe, child_environment()),
            )
        return self._pool

    def _stream(self, fn: Callable[..., Any], items: Iterable[Any], *extra: Any) -> Iterator[Any]:
        """``fn(item, *extra)`` in the workers for each item, the results in the items' order, as they come.

        Items are taken from ``items`` only as the workers need them (at most ``2 × workers`` in flight), so a
        caller that prepares each item lazily (a selection, a prompt) does so while the workers compute."""
        ex = self._executor()
        flight: Deque[Future] = collections.deque()
        try:
            for item in items:
                flight.append(ex.submit(fn, item, *extra))
                if len(flight) >= 2 * self.workers:
                    yield flight.popleft().result()
            while flight:
                yield flight.popleft().result()
        finally:
            for f in flight:
                f.cancel()

    def score_many(
        self, prefixes: Iterable[str], continuations: Sequence[str]
    ) -> Iterator[Tuple[np.ndarray, float]]:
        """``(log-probabilities of every continuation after prefix i, seconds it took)`` for each prefix, in
        their order, as they come; the workers compute them side by side."""
        return self._stream(_score, prefixes, list(continuations))

    def choose_many(
        self, prefixes: Iterable[str], continuations: Sequence[str]
    ) -> Iterator[Tuple[Tuple[int, float], float]]:
        """``((index, log-probability) of the most likely continuation after prefix i, seconds it took)`` for
        each prefix, in order, as they come (the backbone's ``choose_continuation`` where it has one, else the
        argmax of every continuation's score)."""
        return self._stream(_choose, prefixes, list(continuations))

    @property
    def chooses(self) -> bool:
        """Whether the workers find the most likely continuation by branch and bound (the backbone has
        ``choose_continuation``)."""
        return hasattr(self.local, "choose_continuation")

    def choose_continuation(self, prefix: str, continuations: Sequence[str]) -> Tuple[int, float]:
        """``(index, log-probability)`` of the most likely continuation after ``prefix`` (one worker)."""
        return next(self.choose_many([prefix], continuations))[0]

    def score_continuations(
        self, prefix: str, continuations: Sequence[str], reduction: str = "sum"
    ) -> np.ndarray:
        """Summed log-probabilities of each continuation after ``prefix`` (one worker), shape ``(k,)``."""
        if reduction != "sum":
            return self.local.score_continuations(prefix, continuations, reduction)
        return next(self.score_many([prefix], continuations))[0]

    def generate_many(self, prompts: Iterable[str], **options: Any) -> Iterator[Tuple[str, float]]:
        """``(completion of prompt i, seconds it took)`` for each prompt, in their order, as they come
        (``options``: those of ``generate``)."""
        return self._stream(_generate, prompts, options)

    def generate(self, prompts: Sequence[str], **options: Any) -> List[str]:
        """One completion per prompt, the prompts shared out among the workers."""
        return [text for text, _ in self.generate_many(prompts, **options)]

    def close(self) -> None:
        """Stop the workers (they are started again by the next call)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "BackbonePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BackbonePool({self._recipe[0]!r}, engine={self.engine!r}, workers={self.workers})"

"""What an evaluation will do, fixed before anything is asked of the model: queries, prompts, key, work left.

:func:`plan_evaluation` checks the runner's arguments, draws the protocol's test queries, fixes the prompt
format, the prompt budget in tokens and the answer matcher, and builds the resume ``key`` recorded in the
manifest. :meth:`EvaluationPlan.pending` and :meth:`EvaluationPlan.batches` say which (method, run seed,
query) are left and how they group into batches; nothing here touches the model or the output folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from ucs.data.dataset import Dataset
from ucs.data.splits import TestProtocol
from ucs.evaluation.predict import PredictionMode, get_mode
from ucs.evaluation.prompts import BuiltPrompt, PromptBuilder, PromptFormat, check_drop_from, format_for_task
from ucs.utils.redact import redact, redact_obj

__all__ = ["EvaluationPlan", "model_identity", "plan_evaluation"]


def model_identity(lm: Any, given: Optional[dict]) -> dict:
    """``given``, else the LM's ``identity`` (a dict, JSON-normalised), else its ``repr``; credentials masked
    (:func:`ucs.utils.redact.redact`: a model URL's password or key never reaches a manifest)."""
    if given is not None:
        return redact_obj(dict(given), registered=False)
    ident = getattr(lm, "identity", None)
    if callable(ident):
        ident = ident()
    if isinstance(ident, dict):
        return redact_obj(json.loads(json.dumps(ident, default=str)), registered=False)
    return {"repr": redact(repr(lm), registered=False)}


@dataclass(frozen=True)
class EvaluationPlan:
    """The fixed part of an evaluation (see :func:`plan_evaluation`).

    Attributes
    ----------
    dataset : Dataset                 the full dataset (pool and label names).
    mode : PredictionMode
    prompt_format : PromptFormat
    test_indices : ndarray (T,)       the protocol's test draw, indices into the dataset's test split.
    query_texts : list of str (Q,)    the evaluated queries (the first ``limit`` of the draw).
    gold : ndarray (Q,)               their gold label ids.
    continuations : list of str (L,)  each label as the prompt's continuation (likelihood mode).
    builder : PromptBuilder
    matcher : callable or None        answer → label id (generation modes).
    run_seeds : tuple of int
    batch_size : int
    key : dict                        the manifest's resume key.
    drop_from : {"end", "start"}      where a too-long prompt loses demonstrations
    (:meth:`PromptBuilder.build`).
    """

    dataset: Dataset
    mode: PredictionMode
    prompt_format: PromptFormat
    test_indices: np.ndarray
    query_texts: list
    gold: np.ndarray
    continuations: list
    builder: PromptBuilder
    matcher: Optional[Callable[..., Any]]
    run_seeds: tuple
    batch_size: int
    key: dict
    drop_from: str = "end"

    @property
    def n_queries(self) -> int:
        return len(self.query_texts)

    def pending(self, done: "set[tuple]", method: str, seed: int) -> list[int]:
        """Query positions of (``method``, ``seed``) without a record in ``done`` (keys ``(method, seed,
        q)``)."""
        return [q for q in range(self.n_queries) if (method, seed, q) not in done]

    def count_pending(self, done: "set[tuple]", methods: Sequence[str]) -> int:
        return sum(len(self.pending(done, m, s)) for m in methods for s in self.run_seeds)

    def batches(self, pending: Sequence[int]) -> Iterator[list[int]]:
        """The fixed batches (``batch_size`` consecutive queries from a multiple of it) holding a pending
        query.

        Batches are fixed so that a sampled answer's seed does not depend on where a run was interrupted.
        """
        n = self.n_queries
        for start in sorted({q - q % self.batch_size for q in pending}):
            yield list(range(start, min(start + self.batch_size, n)))

    def build(self, selection: np.ndarray, q: int) -> "tuple[int, BuiltPrompt, list[int]]":
        """Query ``q``'s prompt from ``selection`` (Q, B) or (1, B): ``(q, prompt, demonstration
        indices)``."""
        row = selection[0] if selection.shape[0] == 1 else selection[q]
        idx = row.tolist()
        ds = self.dataset
        demos = [(ds.pool.texts[i], ds.label_names[int(ds.pool.labels[i])]) for i in idx]
        return q, self.builder.build(demos, self.query_texts[q], self.drop_from), idx


def _check_args(methods: Sequence[str], batch_size: int, limit: Optional[int]) -> None:
    if not methods:
        raise ValueError("methods must name at least one method")
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods must be distinct, got {list(methods)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")


def _prompt_budget(
    lm: Any, pm: PredictionMode, continuations: Sequence[str], max_context: Optional[int]
) -> Optional[int]:
    """Tokens a prompt may use: the context minus the longest answer; ``None`` when the LM cannot count."""
    count_tokens = getattr(lm, "count_tokens", None)
    context = max_context if max_context is not None else getattr(lm, "context_length", None)
    if context is None or count_tokens is None:
        return None
    reserve = pm.answer_tokens() if pm.kind == "generate" else max(count_tokens(c) for c in continuations)
    budget = int(context) - int(reserve)
    if budget < 1:
        raise ValueError(
            f"the model context ({context}) leaves no room for a prompt after {reserve} answer tokens"
        )
    return budget


def plan_evaluation(
    dataset: Dataset,
    lm: Any,
    methods: Sequence[str],
    *,
    mode: "str | PredictionMode" = "paper",
    protocol: TestProtocol | None = None,
    limit: Optional[int] = None,
    batch_size: int = 8,
    prompt_format: PromptFormat | None = None,
    chat_template: Any = None,
    max_context: Optional[int] = None,
    model_identity_: Optional[dict] = None,
    config: Optional[dict] = None,
    drop_from: str = "end",
) -> EvaluationPlan:
    """Check the arguments of :func:`ucs.evaluation.evaluate` and fix everything but the answers.

    Cost: one protocol draw, one ``count_tokens`` per label; O(T) for the test-index hash.
    """
    _check_args(methods, batch_size, limit)
    check_drop_from(drop_from)
    protocol = protocol or TestProtocol()
    pm = get_mode(mode)
    fmt = prompt_format or format_for_task(dataset.task)
    test_idx = protocol.test_indices(dataset)
    eval_ds = dataset.with_test(test_idx)
    n_q = len(eval_ds.test) if limit is None else min(limit, len(eval_ds.test))
    chat = chat_template is not None
    continuations = [fmt.continuation(n, chat=chat) for n in dataset.label_names]
    budget = _prompt_budget(lm, pm, continuations, max_context)
    key = {
        "dataset": {
            "name": dataset.name,
            "fingerprint": dataset.fingerprint(),
            "source": dict(dataset.source),
            "info": {
                k: v for k, v in dataset.info.items() if k not in ("pool_indices", "test_source_indices")
            },
        },
        "protocol": {
            "test_size": protocol.size_for(dataset),
            "test_seed": protocol.test_seed,
            "run_seeds": list(protocol.run_seeds),
            "test_indices_sha256": hashlib.sha256(np.asarray(test_idx, "<i8").tobytes()).hexdigest(),
        },
        "mode": pm.as_dict(),
        "prompt_format": fmt.name,
        "chat_template": chat,
        "prompt_budget_tokens": budget,
        "batch_size": batch_size,
        "model": model_identity(lm, model_identity_),
        "config": json.loads(json.dumps(config or {}, default=str)),
    }
    return EvaluationPlan(
        dataset=dataset,
        mode=pm,
        prompt_format=fmt,
        test_indices=np.asarray(test_idx),
        query_texts=list(eval_ds.test.texts[:n_q]),
        gold=eval_ds.test.labels[:n_q],
        continuations=continuations,
        builder=PromptBuilder(
            fmt, dataset.label_names, getattr(lm, "count_tokens", None), budget, chat_template
        ),
        matcher=pm.make_matcher(fmt.answer_marker) if pm.kind == "generate" else None,
        run_seeds=tuple(protocol.run_seeds),
        batch_size=batch_size,
        key=key,
        drop_from=drop_from,
    )

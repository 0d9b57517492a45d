"""The resumable ICL evaluation runner.

For every (method, run seed, test query) the runner renders the prompt from the method's selection, asks the
LM, matches the answer and appends **one JSON line** to ``records.jsonl`` (flushed and synced after each
batch, or after each answered part of it where prompts are asked one by one: :func:`answers_separately`).
Re-running with the same configuration skips what is recorded and recomputes nothing else, so a killed run
resumes without repeating or losing a record. ``manifest.json`` (written atomically) holds the
configuration, package versions, model identity, data hashes and seeds; a resume with a different
configuration is refused, naming the differing fields. The folder is locked while a run writes to it
(:meth:`RunFolder.lock <ucs.evaluation.run_folder.RunFolder.lock>`), and a run stopped by Ctrl-C or SIGTERM
records ``"status": "interrupted"`` (another exception: ``"failed"``) in its manifest.

The runner does not know the selectors: it takes a *selection function*
``select(method, seed, query_texts) -> int array (Q, B)`` (or ``(B,)`` / ``(1, B)`` for one selection shared
by all queries) giving pool indices in prompt order. Selections are cached under ``selections/`` so a resume
does not re-fit anything.

:func:`evaluate` only orchestrates four units, each tested on its own: the plan
(:mod:`ucs.evaluation.plan`), the manifest and its resume check (:mod:`ucs.evaluation.manifest`), a batch's
answers and records (:mod:`ucs.evaluation.batches`), and the record file (:mod:`ucs.evaluation.records`).
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ucs.data.dataset import Dataset, split_description
from ucs.data.splits import TestProtocol
from ucs.evaluation.batches import AnswerBook, answer_batch, batch_records, prompt_hash
from ucs.evaluation.fingerprints import record_fingerprints
from ucs.evaluation.manifest import (
    is_test_double,
    ConfigurationMismatchError,
    config_differences,
    finish_manifest,
    open_manifest,
    package_versions,
    platform_info,
    read_manifest,
    record_stop,
)
from ucs.evaluation.plan import EvaluationPlan, plan_evaluation
from ucs.evaluation.predict import PredictionMode
from ucs.evaluation.prompts import PromptFormat
from ucs.evaluation.records import RecordWriter, read_records, record_key
from ucs.evaluation.summary import demonstration_vote, strict_matcher_summary, summarize, write_report
from ucs.evaluation.run_folder import RunFolder
from ucs.utils.integrity import load_checked_npy, save_checked_npy
from ucs.utils.progress import progress_enabled, stage

__all__ = [
    "SelectionFn",
    "EvaluationResult",
    "evaluate",
    "package_versions",
    "platform_info",
    "prompt_hash",
    "selection_path",
    "ConfigurationMismatchError",
    "config_differences",
    "read_manifest",
    "answers_separately",
    "RECORD_EVERY_S",
]

#: ``select(method, seed, query_texts) -> (Q, B) int array of pool indices``.
SelectionFn = Callable[[str, int, Sequence[str]], Any]


@dataclass(frozen=True)
class EvaluationResult:
    """What :func:`evaluate` produced: the summary and the paths of its files."""

    summary: dict
    out_dir: Path
    records_path: Path
    manifest_path: Path
    n_new_records: int

    def to_markdown(self) -> str:
        from ucs.evaluation.summary import to_markdown

        return to_markdown(self.summary)


def _check_selection(sel: Any, n_queries: int, n_pool: int, method: str, seed: int) -> np.ndarray:
    arr = np.asarray(sel)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(
            f"selection of {method!r} (seed {seed}) must be an integer array of shape (Q, B) or (B,), "
            f"got dtype {arr.dtype} shape {arr.shape}"
        )
    if arr.shape[0] not in (1, n_queries):
        raise ValueError(
            f"selection of {method!r} (seed {seed}) has {arr.shape[0]} rows; expected {n_queries} (one per "
            "query) or 1 (shared by all queries)"
        )
    if arr.size and (arr.min() < 0 or arr.max() >= n_pool):
        raise ValueError(f"selection of {method!r} (seed {seed}) has pool indices outside [0, {n_pool})")
    return arr.astype(np.int64)


def _holding_the_folder(fn: Callable[..., EvaluationResult]) -> Callable[..., EvaluationResult]:
    """Run ``fn`` (:func:`evaluate`) holding the lock of its ``out_dir`` (waiting with ``wait=True``), and
    mark its manifest ``interrupted`` (Ctrl-C, SIGTERM, exit) or ``failed`` (another exception) when it stops
    early."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> EvaluationResult:
        bound = sig.bind(*args, **kwargs)
        folder = RunFolder(bound.arguments["out_dir"])
        with folder.lock(wait=bool(bound.arguments.get("wait", False))):
            try:
                return fn(*args, **kwargs)
            except BaseException as exc:
                record_stop(folder.manifest, exc)
                raise

    return wrapper


@_holding_the_folder
def evaluate(
    dataset: Dataset,
    lm: Any,
    methods: Sequence[str],
    select: SelectionFn,
    out_dir: "str | os.PathLike[str]",
    *,
    mode: "str | PredictionMode" = "paper",
    protocol: TestProtocol | None = None,
    limit: Optional[int] = None,
    batch_size: int = 8,
    prompt_format: PromptFormat | None = None,
    chat_template: Any = None,
    max_context: Optional[int] = None,
    model_identity: Optional[dict] = None,
    config: Optional[dict] = None,
    progress: bool = True,
    n_boot: int = 2000,
    answer_store: "str | os.PathLike[str] | None" = None,
    wait: bool = False,
    drop_from: str = "end",
) -> EvaluationResult:
    """Evaluate ``methods`` on ``dataset`` with ``lm``; resumable, one JSON record per (method, run, query).

    Parameters
    ----------
    dataset : Dataset
        Full dataset; the protocol draws the evaluation queries from its test split.
    lm : LanguageModel
        Needs ``generate`` (generation modes) or ``score_continuations[_detailed]`` (likelihood mode);
        ``count_tokens`` and ``context_length`` enable the prompt budget.
    methods : sequence of str
        Method names passed to ``select``.
    select : SelectionFn
        ``select(method, seed, query_texts)`` → pool indices, shape (Q, B), or (B,) shared by all queries.
    out_dir : path
        Receives ``records.jsonl``, ``manifest.json``, ``selections/``, ``results.json``, ``results.md``.
    mode : str or PredictionMode
        ``paper`` (default), ``greedy``, ``greedy-strict``, ``likelihood``.
    protocol : TestProtocol
        Test-set draw and run seeds; default 500 / 40 queries, seed 42, runs 42, 43, 44.
    limit : int, optional
        Evaluate only the first ``limit`` protocol queries (a quick look; resumable into the full run).
    batch_size : int
        Prompts per ``generate`` call. Part of the configuration (sampling seeds are per batch).
    prompt_format : PromptFormat, optional
        Default: the dataset task's format.
    chat_template : callable or tokenizer, optional
        Render prompts through a chat template.
    max_context : int, optional
        Context size in tokens; default ``lm.context_length``. Demonstrations are dropped from a prompt that
        exceeds it (minus the answer budget) and the number dropped is recorded (see ``drop_from``).
    model_identity : dict, optional
        Overrides ``lm.identity`` in the manifest.
    config : dict, optional
        Extra configuration recorded in the manifest and part of the resume check (selector settings...).
    progress : bool
        Show the progress with ETA on stderr (a rich bar on a terminal, a plain line at a steady pace
        otherwise;
        :mod:`ucs.utils.progress`).
    answer_store : path, optional
        Directory of an :class:`~ucs.evaluation.answers.AnswerStore` shared with other evaluations: in the
        deterministic modes, prompts answered by any evaluation of the same model, mode and label set are
        not sent to the model again (their records carry ``"reused": true``); in sampled modes the same holds
        for a prompt drawn with the same sample seed (the same prompt at the same batch position of the same
        run seed), so a sampled evaluation resumes from a committed store on a fresh machine.
    wait : bool
        When another process is evaluating into ``out_dir`` (it holds the folder's lock,
        :func:`~ucs.utils.lock.folder_lock`), wait for it instead of raising
        :class:`~ucs.utils.lock.FolderLockedError`.
    drop_from : {"end", "start"}
        Which demonstrations a too-long prompt loses: the last of the selection (``"end"``, default: selectors
        put the most relevant first) or the first (``"start"``: for selections ordered with the most relevant
        last, ``similar_last`` and ``vote_last``). Records of prompts that lost demonstrations from the start
        carry ``"dropped_from": "start"``, so the no-LM vote and relevance count what the prompt holds.

    Returns
    -------
    EvaluationResult

    Notes
    -----
    Cost: one ``generate`` call per batch of ``batch_size`` prompts (or one shared-prefix label scoring per
    prompt in likelihood mode) for each pending (method, run, query). In the deterministic modes (greedy,
    greedy-strict, likelihood) a prompt that was already answered in ``out_dir`` — the same demonstrations
    for the same query, as a seed-independent selector such as TopK or DPP gives in every run — is not sent to
    the model again; its record copies the earlier answer and carries ``"reused": true``. In sampled modes
    prompt ``i`` of a batch is drawn with seed ``batch_seed(run seed, batch start) + i`` (recorded as
    ``sample_seed``), alone or with the batch, so on resume a partly recorded batch asks only its missing
    prompts and outputs do not depend on where the interruption happened.
    """
    plan = plan_evaluation(
        dataset,
        lm,
        methods,
        mode=mode,
        protocol=protocol,
        limit=limit,
        batch_size=batch_size,
        prompt_format=prompt_format,
        chat_template=chat_template,
        max_context=max_context,
        model_identity_=model_identity,
        config=config,
        drop_from=drop_from,
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = open_manifest(out, plan.key, methods, plan.run_seeds, plan.key["protocol"]["test_seed"], limit)
    if getattr(plan.dataset, "validation", None) is not None:  # sizes and pool/test overlap, for the reader
        manifest["data"] = plan.dataset.validation.as_dict()
    records_path = RunFolder(out).records
    existing = read_records(records_path)
    done = {record_key(r) for r in existing}
    book = AnswerBook(
        plan.mode.name, plan.mode.sampled, existing, _answer_store(plan, answer_store, existing)
    )
    n_new = 0
    with (
        RecordWriter(records_path) as writer,
        progress_enabled(progress),
        stage(
            f"evaluating {dataset.name} [{plan.mode.name}]",
            plan.count_pending(done, methods),
            kind="evaluate",
        ) as bar,
    ):
        for method in methods:
            for run, seed in enumerate(plan.run_seeds):
                pending = plan.pending(done, method, seed)
                if not pending:
                    continue
                bar.describe(f"evaluating {dataset.name} {method} seed {seed}")
                sel = _selection(out, method, seed, plan.query_texts, select, len(dataset.pool))
                n_new += _run_batches(plan, lm, book, writer, method, seed, run, sel, pending, bar)
    return _finish(plan, out, manifest, n_new, n_boot)


def _answer_store(plan: EvaluationPlan, answer_store: Any, existing: Sequence[dict]) -> Any:
    """The shared :class:`~ucs.evaluation.answers.AnswerStore` of this model, mode and label set (or None)."""
    if answer_store is None:
        return None
    from ucs.evaluation.answers import AnswerStore

    store = AnswerStore(
        answer_store,
        {
            "model": plan.key["model"],
            "mode": plan.key["mode"],
            "prompt_format": plan.prompt_format.name,
            "chat": plan.key["chat_template"],
            "labels": list(plan.dataset.label_names),
            "continuations": plan.continuations,
        },
        sampled=plan.mode.sampled,
    )
    store.add(r for r in existing if r.get("mode") == plan.mode.name and "prompt_sha256" in r)
    return store


#: In the deterministic modes a batch whose prompts the LM answers one after another is asked in parts, each
#: part's records written as soon as it is answered; a part grows (doubling, up to the batch) while answering
#: it takes less than this many seconds, so slow prompts are recorded one by one and fast ones a batch at a
#: time.
RECORD_EVERY_S = 1.0


def answers_separately(plan: EvaluationPlan, lm: Any) -> bool:
    """Whether splitting a batch changes neither the answers nor the number of model calls: a deterministic
    mode whose prompts are asked one by one anyway (label likelihood: one scoring per prompt), or generation
    with an LM that declares ``generates_one_at_a_time`` (the local backends; a served model answers a batch's
    prompts concurrently, so it keeps whole batches)."""
    if plan.mode.sampled:
        return False
    return plan.mode.kind != "generate" or bool(getattr(lm, "generates_one_at_a_time", False))


def _run_batches(
    plan: EvaluationPlan,
    lm: Any,
    book: AnswerBook,
    writer: RecordWriter,
    method: str,
    seed: int,
    run: int,
    sel: np.ndarray,
    pending: Sequence[int],
    bar: Any,
) -> int:
    """Answer and record ``pending`` queries of (``method``, ``seed``) batch by batch; returns records
    written.

    In sampled modes the whole batch is built, so each prompt keeps its position and sample seed; its recorded
    or stored prompts are reused and only its missing records are written. Where :func:`answers_separately`
    holds, a batch is asked in parts of adaptive size (:data:`RECORD_EVERY_S`), so an interruption loses at
    most the part in flight: one prompt when prompts are slow.
    """
    pending_set = set(pending)
    split = answers_separately(plan, lm)
    size, n = 1, 0
    for batch in plan.batches(pending):
        run_on = batch if plan.mode.sampled else [q for q in batch if q in pending_set]
        i = 0
        while i < len(run_on):
            part = run_on[i : i + size] if split else run_on
            t0 = time.perf_counter()
            n += _answer_part(
                plan, lm, book, writer, (method, seed, run), sel, part, batch[0], pending_set, bar
            )
            i += len(part)
            if split and time.perf_counter() - t0 < RECORD_EVERY_S:
                size = min(2 * size, plan.batch_size)
    return n


def _answer_part(
    plan: EvaluationPlan,
    lm: Any,
    book: AnswerBook,
    writer: RecordWriter,
    who: tuple,
    sel: np.ndarray,
    queries: Sequence[int],
    start: int,
    pending_set: "set[int]",
    bar: Any,
) -> int:
    """Build, answer and record ``queries`` (part of the batch starting at ``start``); returns records
    written."""
    method, seed, run = who
    built = [plan.build(sel, q) for q in queries]
    answers = answer_batch(plan, lm, [b[1].text for b in built], book, seed, start)
    recs = batch_records(plan, method, seed, run, built, answers, pending_set)
    writer.write(recs)
    book.remember(recs)
    bar.advance(len(recs), reused=sum(1 for r in recs if r.get("reused")))
    return len(recs)


def _finish(plan: EvaluationPlan, out: Path, manifest: dict, n_new: int, n_boot: int) -> EvaluationResult:
    """Summarise every record of the folder's methods, write the report and close the manifest."""
    folder = RunFolder(out)
    records_path = folder.records
    records = read_records(records_path)
    shown = [r for r in records if r["method"] in manifest["methods"] and r["query"] < plan.n_queries]
    summary = summarize(
        shown,
        run_seeds=plan.run_seeds,
        n_boot=n_boot,
    )
    if plan.matcher is not None and plan.mode.matcher != "strict":
        summary["strict_matcher"] = strict_matcher_summary(
            shown, plan.dataset.label_names, plan.prompt_format.answer_marker, plan.run_seeds, n_boot
        )
    summary["dataset"] = plan.dataset.name
    summary["data"] = {
        "n_pool": len(plan.dataset.pool),
        "n_test": len(plan.dataset.test),
        "split": split_description(plan.dataset),
    }
    if is_test_double(plan.key.get("model")):
        summary["test_double"] = True
    # the no-LM baseline: the answer each prompt's demonstrations vote for (intent labels, BBEH answers)
    summary["vote"] = demonstration_vote(
        shown, plan.dataset.pool.labels, run_seeds=plan.run_seeds, n_boot=n_boot
    )
    summary["mode"] = plan.mode.name
    summary["n_queries_requested"] = plan.n_queries
    write_report(out, summary, title=f"{plan.dataset.name} — mode {plan.mode.name}")
    finish_manifest(
        out,
        manifest,
        all(m["complete"] for m in summary["methods"].values()),
        len(records),
        record_fingerprints(shown),
    )
    return EvaluationResult(summary, out, records_path, folder.manifest, n_new)


def selection_path(
    out_dir: "str | os.PathLike[str]", method: str, seed: int, query_texts: Sequence[str]
) -> Path:
    """Where the runner caches the selection of ``method`` for run ``seed`` on ``query_texts`` in ``out_dir``.

    A selection written there (an int array (Q, B), or (1, B) shared by all queries) is used by
    :func:`evaluate` instead of calling the selection function, so a stage that computed selections
    elsewhere (coverage diagnostics) can hand them to a later evaluation of the same folder.
    """
    return RunFolder(out_dir).runner_selection(method, seed, query_texts)


def _selection(
    out: Path, method: str, seed: int, queries: list[str], select: SelectionFn, n_pool: int
) -> np.ndarray:
    """The selection of (``method``, ``seed``): the verified cached one in ``out``, else computed and
    cached."""
    n_q = len(queries)
    path = selection_path(out, method, seed, queries)
    cached = load_checked_npy(
        path,
        f"selection of {method!r} (seed {seed})",
        min_value=0,
        max_value=n_pool - 1,
        adopt_unverified=True,
    )  # selections of older runs: range-checked, then adopted
    if cached is not None and cached.ndim == 2 and cached.shape[0] in (1, n_q):
        return _check_selection(cached, n_q, n_pool, method, seed)
    sel = _check_selection(select(method, seed, queries), n_q, n_pool, method, seed)
    save_checked_npy(path, sel)
    return sel

"""The resumable ICL evaluation runner.

For every (method, run seed, test query) the runner renders the prompt from the method's selection, asks the
LM, matches the answer and appends **one JSON line** to ``records.jsonl`` (flushed and synced after each
batch). Re-running with the same configuration skips what is recorded and recomputes nothing else, so a
killed run resumes without repeating or losing a record. ``manifest.json`` (written atomically) holds the
configuration, package versions, model identity, data hashes and seeds; a resume with a different
configuration is refused, naming the differing fields. The folder is locked while a run writes to it
(:func:`~ucs.utils.lock.folder_lock`), and a run stopped by Ctrl-C or SIGTERM records ``"status":
"interrupted"`` (another exception: ``"failed"``) in its manifest.

The runner does not know the selectors: it takes a *selection function*
``select(method, seed, query_texts) -> int array (Q, B)`` (or ``(B,)`` / ``(1, B)`` for one selection shared
by all queries) giving pool indices in prompt order. Selections are cached under ``selections/`` so a resume
does not re-fit anything.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ucs.data.dataset import Dataset
from ucs.data.splits import TestProtocol
from ucs.evaluation.file_names import selection_file_stem
from ucs.evaluation.predict import PredictionMode, generate_answers, get_mode, likelihood_predict
from ucs.evaluation.prompts import PromptBuilder, PromptFormat, format_for_task
from ucs.evaluation.records import RecordWriter, read_records, record_key
from ucs.evaluation.report import summarize, write_report
from ucs.utils.integrity import load_checked_npy, save_checked_npy
from ucs.utils.io import atomic_write_json, hash_texts
from ucs.utils.lock import folder_lock

__all__ = ["SelectionFn", "EvaluationResult", "evaluate", "package_versions", "platform_info", "prompt_hash",
           "selection_path", "ConfigurationMismatchError", "config_differences", "read_manifest"]

#: ``select(method, seed, query_texts) -> (Q, B) int array of pool indices``.
SelectionFn = Callable[[str, int, Sequence[str]], Any]

RECORDS = "records.jsonl"
MANIFEST = "manifest.json"
_VERSIONED = (
    "ucs-icl", "numpy", "scipy", "scikit-learn", "torch", "transformers", "sentence-transformers",
    "llama_cpp_python", "faiss-cpu", "datasets",
)


def package_versions(names: Sequence[str] = _VERSIONED) -> dict[str, str]:
    """Installed versions of the packages that can change results (absent ones omitted), plus Python's."""
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    if "ucs-icl" not in out:
        from ucs import __version__

        out["ucs"] = __version__
    return out


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`), or ``""``.

    Recorded in manifests because low-precision kernels differ between CPUs: bfloat16 embeddings of the same
    texts differ slightly between processors, and the latent clusters built from them can differ visibly.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or ""


def platform_info() -> dict[str, Any]:
    """Python version, machine, OS, CPU model and CPU count of this process's machine."""
    return {"python": sys.version.split()[0], "machine": platform.machine(), "system": platform.system(),
            "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _batch_seed(run_seed: int, batch_start: int) -> int:
    """Sampling seed of a batch: fixed per (run seed, batch position), independent of resumes."""
    d = hashlib.sha256(f"{int(run_seed)}:{int(batch_start)}".encode()).digest()
    return int.from_bytes(d[:4], "little")


@dataclass(frozen=True)
class EvaluationResult:
    """What :func:`evaluate` produced: the summary and the paths of its files."""

    summary: dict
    out_dir: Path
    records_path: Path
    manifest_path: Path
    n_new_records: int

    def to_markdown(self) -> str:
        from ucs.evaluation.report import to_markdown

        return to_markdown(self.summary)


def _model_identity(lm: Any, given: Optional[dict]) -> dict:
    if given is not None:
        return dict(given)
    ident = getattr(lm, "identity", None)
    if callable(ident):
        ident = ident()
    if isinstance(ident, dict):
        return json.loads(json.dumps(ident, default=str))
    return {"repr": repr(lm)}


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
    """Run ``fn`` (:func:`evaluate`) holding the lock of its ``out_dir`` (waiting with ``wait=True``), and mark
    its manifest ``interrupted`` (Ctrl-C, SIGTERM, exit) or ``failed`` (another exception) when it stops early."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> EvaluationResult:
        bound = sig.bind(*args, **kwargs)
        out = Path(bound.arguments["out_dir"])
        with folder_lock(out, wait=bool(bound.arguments.get("wait", False))):
            try:
                return fn(*args, **kwargs)
            except BaseException as exc:
                _record_stop(out / MANIFEST, exc)
                raise

    return wrapper


def _record_stop(manifest_path: Path, exc: BaseException) -> None:
    """Replace a ``running`` status in the manifest by why the run stopped (what was written stays)."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(manifest, dict) or manifest.get("status") != "running":
        return
    manifest["status"] = "interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "failed"
    manifest["stopped_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if manifest["status"] == "failed":
        manifest["error"] = f"{type(exc).__name__}: {exc}"[:500]
    atomic_write_json(manifest_path, manifest)


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
        Context size in tokens; default ``lm.context_length``. Demonstrations are dropped from the end of a
        prompt that exceeds it (minus the answer budget) and the number dropped is recorded.
    model_identity : dict, optional
        Overrides ``lm.identity`` in the manifest.
    config : dict, optional
        Extra configuration recorded in the manifest and part of the resume check (selector settings...).
    progress : bool
        Show the progress with ETA on stderr (a rich bar on a terminal, a plain line at a steady pace otherwise;
        :mod:`ucs.utils.progress`).
    answer_store : path, optional
        Directory of an :class:`~ucs.evaluation.answers.AnswerStore` shared with other evaluations: in the
        deterministic modes, prompts answered by any evaluation of the same model, mode and label set are
        not sent to the model again (their records carry ``"reused": true``). Ignored in sampled modes.
    wait : bool
        When another process is evaluating into ``out_dir`` (it holds the folder's lock,
        :func:`~ucs.utils.lock.folder_lock`), wait for it instead of raising
        :class:`~ucs.utils.lock.FolderLockedError`.

    Returns
    -------
    EvaluationResult

    Notes
    -----
    Cost: one ``generate`` call per batch of ``batch_size`` prompts (or one shared-prefix label scoring per
    prompt in likelihood mode) for each pending (method, run, query). In the deterministic modes (greedy,
    greedy-strict, likelihood) a prompt that was already answered in ``out_dir`` — the same demonstrations
    for the same query, as a seed-independent selector such as TopK or DPP gives in every run — is not sent to
    the model again; its record copies the earlier answer and carries ``"reused": true``. On resume, a batch that was partly
    recorded is generated again as a whole (same prompts, same seed) and only its missing records are
    written, so outputs do not depend on where the interruption happened.
    """
    if not methods:
        raise ValueError("methods must name at least one method")
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods must be distinct, got {list(methods)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    protocol = protocol or TestProtocol()
    pm = get_mode(mode)
    fmt = prompt_format or format_for_task(dataset.task)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    test_idx = protocol.test_indices(dataset)
    eval_ds = dataset.with_test(test_idx)
    n_q = len(eval_ds.test) if limit is None else min(limit, len(eval_ds.test))
    query_texts = list(eval_ds.test.texts[:n_q])
    gold = eval_ds.test.labels[:n_q]
    label_names = dataset.label_names

    count_tokens = getattr(lm, "count_tokens", None)
    context = max_context if max_context is not None else getattr(lm, "context_length", None)
    chat = chat_template is not None
    continuations = [fmt.continuation(n, chat=chat) for n in label_names]
    budget = None
    if context is not None and count_tokens is not None:
        reserve = pm.answer_tokens() if pm.kind == "generate" else max(count_tokens(c) for c in continuations)
        budget = int(context) - int(reserve)
        if budget < 1:
            raise ValueError(f"the model context ({context}) leaves no room for a prompt after {reserve} answer tokens")
    builder = PromptBuilder(fmt, label_names, count_tokens, budget, chat_template)
    matcher = pm.make_matcher(fmt.answer_marker) if pm.kind == "generate" else None

    key_config = {
        "dataset": {
            "name": dataset.name,
            "fingerprint": dataset.fingerprint(),
            "source": dict(dataset.source),
            "info": {k: v for k, v in dataset.info.items() if k not in ("pool_indices", "test_source_indices")},
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
        "model": _model_identity(lm, model_identity),
        "config": json.loads(json.dumps(config or {}, default=str)),
    }
    manifest_path = out / MANIFEST
    records_path = out / RECORDS
    previous_methods: list[str] = []
    if manifest_path.exists():
        old = read_manifest(manifest_path)
        old_key = old.get("key", {})
        if old_key != key_config:
            raise ConfigurationMismatchError(out, config_differences(old_key, key_config))
        previous_methods = list(old.get("methods", []))
    all_methods = previous_methods + [m for m in methods if m not in previous_methods]
    manifest = {
        "key": key_config,
        "methods": all_methods,
        "seeds": {"test_seed": protocol.test_seed, "run_seeds": list(protocol.run_seeds)},
        "limit": limit,
        "versions": package_versions(),
        "platform": platform_info(),
        "status": "running",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write_json(manifest_path, manifest)

    existing = read_records(records_path)
    done = {record_key(r) for r in existing}
    # Deterministic modes give the same answer to the same prompt: a prompt already answered (by another run
    # seed of a seed-independent selector such as TopK, or by another method) is not sent to the model again.
    answered: dict[str, dict] = {} if pm.sampled else {
        r["prompt_sha256"]: r for r in existing if r.get("mode") == pm.name and "prompt_sha256" in r
    }
    store = None
    if answer_store is not None and not pm.sampled:
        from ucs.evaluation.answers import AnswerStore

        store = AnswerStore(answer_store, {
            "model": key_config["model"], "mode": key_config["mode"], "prompt_format": fmt.name, "chat": chat,
            "labels": list(label_names), "continuations": continuations,
        })
        store.add(r for r in existing if r.get("mode") == pm.name and "prompt_sha256" in r)
    total_pending = sum(
        1 for m in methods for s in protocol.run_seeds for q in range(n_q) if (m, s, q) not in done
    )
    qhash = hash_texts(query_texts)[:16]
    n_new = 0
    from ucs.utils.progress import progress_enabled, stage

    with RecordWriter(records_path) as writer, progress_enabled(progress), \
            stage(f"evaluating {dataset.name} [{pm.name}]", total_pending, kind="evaluate") as bar:
        for method in methods:
            for run, seed in enumerate(protocol.run_seeds):
                pending = [q for q in range(n_q) if (method, seed, q) not in done]
                if not pending:
                    continue
                bar.describe(f"evaluating {dataset.name} {method} seed {seed}")
                sel = _selection(out, method, seed, qhash, query_texts, select, len(dataset.pool), n_q)
                pending_set = set(pending)
                starts = sorted({q - q % batch_size for q in pending})
                for start in starts:
                    batch = list(range(start, min(start + batch_size, n_q)))
                    todo = [q for q in batch if q in pending_set]
                    run_on = batch if pm.sampled else todo
                    built = [_build(builder, dataset, sel, q, query_texts[q]) for q in run_on]
                    hashes = [prompt_hash(b[1].text) for b in built]
                    if store is not None:
                        for h in hashes:
                            if h not in answered and store.get(h) is not None:
                                answered[h] = store.get(h)
                    fresh = [i for i, h in enumerate(hashes) if h not in answered]
                    prompts = [built[i][1].text for i in fresh]
                    outputs: list = [None] * len(built)
                    parsed: list = [None] * len(built)
                    extra: list = [{} for _ in built]
                    if pm.kind == "generate" and prompts:
                        gen = generate_answers(lm, prompts, pm, _batch_seed(seed, start))
                        for i, o in zip(fresh, gen):
                            outputs[i], parsed[i] = o, matcher(o, label_names)
                    elif prompts:
                        pred, margin = likelihood_predict(lm, prompts, continuations, pm.reduction)
                        for i, p_, m_ in zip(fresh, pred.tolist(), margin):
                            outputs[i], parsed[i], extra[i] = label_names[p_], p_, {"margin": float(m_)}
                    fresh_set = set(fresh)
                    for i, h in enumerate(hashes):
                        if i not in fresh_set:
                            prev = answered[h]
                            outputs[i], parsed[i] = prev["raw_output"], prev["parsed_id"]
                            extra[i] = {"margin": prev["margin"]} if "margin" in prev else {}
                            extra[i]["reused"] = True
                    recs = []
                    for (q, b, demos), o, p, e in zip(built, outputs, parsed, extra):
                        if q not in pending_set:
                            continue
                        g = int(gold[q])
                        recs.append({
                            "method": method,
                            "seed": int(seed),
                            "run": run,
                            "query": q,
                            "test_index": int(test_idx[q]),
                            "mode": pm.name,
                            "prompt_sha256": prompt_hash(b.text),
                            "n_prompt_tokens": b.n_tokens,
                            "selected": demos,
                            "n_demos": b.n_demos,
                            "n_dropped": b.n_dropped,
                            "prompt_fits": b.fits,
                            "raw_output": o,
                            "parsed": None if p is None else label_names[p],
                            "parsed_id": p,
                            "gold": label_names[g],
                            "gold_id": g,
                            "correct": p is not None and int(p) == g,
                            **e,
                        })
                    if not pm.sampled:
                        for r in recs:
                            answered.setdefault(r["prompt_sha256"], r)
                    writer.write(recs)
                    if store is not None:
                        store.add(recs)
                    n_new += len(recs)
                    bar.advance(len(recs))

    records = read_records(records_path)
    summary = summarize(
        [r for r in records if r["method"] in all_methods and r["query"] < n_q],
        run_seeds=protocol.run_seeds,
        n_boot=n_boot,
    )
    summary["dataset"] = dataset.name
    summary["mode"] = pm.name
    summary["n_queries_requested"] = n_q
    write_report(out, summary, title=f"{dataset.name} — mode {pm.name}")
    manifest["status"] = "complete" if all(m["complete"] for m in summary["methods"].values()) else "partial"
    manifest["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest["n_records"] = len(records)
    atomic_write_json(manifest_path, manifest)
    return EvaluationResult(summary, out, records_path, manifest_path, n_new)


def selection_path(out_dir: "str | os.PathLike[str]", method: str, seed: int, query_texts: Sequence[str]) -> Path:
    """Where the runner caches the selection of ``method`` for run ``seed`` on ``query_texts`` in ``out_dir``.

    A selection written there (an int array (Q, B), or (1, B) shared by all queries) is used by
    :func:`evaluate` instead of calling the selection function, so a stage that computed selections
    elsewhere (coverage diagnostics) can hand them to a later evaluation of the same folder.
    """
    safe = selection_file_stem(method)
    qhash = hash_texts(list(query_texts))[:16]
    return Path(out_dir) / "selections" / f"{safe}__seed{seed}__{len(query_texts)}q_{qhash}.npy"


def _selection(
    out: Path, method: str, seed: int, qhash: str, queries: list[str], select: SelectionFn, n_pool: int, n_q: int
) -> np.ndarray:
    path = selection_path(out, method, seed, queries)
    cached = load_checked_npy(path, f"selection of {method!r} (seed {seed})", min_value=0, max_value=n_pool - 1,
                              adopt_unverified=True)  # selections of older runs: range-checked, then adopted
    if cached is not None and cached.ndim == 2 and cached.shape[0] in (1, n_q):
        return _check_selection(cached, n_q, n_pool, method, seed)
    sel = _check_selection(select(method, seed, queries), n_q, n_pool, method, seed)
    save_checked_npy(path, sel)
    return sel


class ConfigurationMismatchError(ValueError):
    """An output folder holds records of another configuration (the differing fields are named)."""

    def __init__(self, folder: Path, differences: list[str]) -> None:
        self.folder = Path(folder)
        self.differences = differences
        shown = "; ".join(differences[:4]) + (f"; and {len(differences) - 4} more" if len(differences) > 4 else "")
        super().__init__(
            f"{self.folder} holds results of a different configuration (differs in: {shown}); use another output "
            "folder, or --fresh to move the old one aside and start over"
        )


def config_differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the fields that differ between two configurations, with both values (``a.b: x → y``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            if old.get(k) != new.get(k):
                out += config_differences(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out

    def short(v: Any) -> str:
        t = json.dumps(v, default=str)
        return t if len(t) <= 40 else t[:37] + "..."

    return [f"{prefix or 'value'}: {short(old)} → {short(new)}"]


def read_manifest(path: Path) -> dict:
    """A run manifest; a damaged one raises a ``ValueError`` naming the file and the way out."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is damaged ({exc}); use another output folder, or --fresh to move this one "
                         "aside and start over") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("key", {}), dict):
        raise ValueError(f"{path} is not a run manifest; use another output folder, or --fresh to move this "
                         "one aside and start over")
    return obj


def _build(builder: PromptBuilder, dataset: Dataset, sel: np.ndarray, q: int, query: str):
    row = sel[0] if sel.shape[0] == 1 else sel[q]
    idx = row.tolist()
    demos = [(dataset.pool.texts[i], dataset.label_names[int(dataset.pool.labels[i])]) for i in idx]
    return q, builder.build(demos, query), idx

"""One batch of an evaluation: answers for its prompts (asked, or reused) and the records they make.

In the deterministic modes (greedy, greedy-strict, likelihood) the same prompt always gets the same answer,
so an :class:`AnswerBook` remembers answers by prompt hash — from the folder's own records and from a shared
:class:`~ucs.evaluation.answers.AnswerStore` — and :func:`answer_batch` sends only the unknown prompts to the
model. In sampled modes an answer is a function of the prompt *and its sample seed*: every language model
samples prompt ``i`` of a ``generate`` call with seed ``seed + i`` (the ``sample_seeds`` clause of
:func:`ucs.testing.check_language_model`), so prompt ``i`` of a batch drawn with :func:`batch_seed` ``s`` is
keyed by :func:`sample_key` ``(prompt hash, s + i)``, and a batch that is partly known sends each unknown
prompt alone with its own seed — the same answers one call for the whole batch gives. :func:`batch_records`
turns a batch's answers into the runner's JSON records (one per pending query).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Optional, Sequence

from ucs.evaluation.answers import answer_key_of, sample_key
from ucs.evaluation.plan import EvaluationPlan
from ucs.evaluation.predict import generate_answers, likelihood_predict
from ucs.utils.cpu import machine_signature

__all__ = ["Answer", "AnswerBook", "answer_batch", "batch_records", "batch_seed", "prompt_hash"]

#: ``(raw output, parsed label id or None, extra record fields)`` of one prompt.
Answer = tuple


def prompt_hash(text: str) -> str:
    """SHA-256 hex digest of a prompt's text (the key of reused answers)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def batch_seed(run_seed: int, batch_start: int) -> int:
    """Sampling seed of a batch: fixed per (run seed, batch position), independent of resumes."""
    d = hashlib.sha256(f"{int(run_seed)}:{int(batch_start)}".encode()).digest()
    return int.from_bytes(d[:4], "little")


class AnswerBook:
    """Answers already known: the folder's records of this mode, then a shared store's.

    Keyed by prompt hash in deterministic modes and by :func:`sample_key` in sampled ones.
    """

    def __init__(
        self, mode_name: str, sampled: bool, records: Iterable[dict] = (), store: Any = None
    ) -> None:
        self.sampled = sampled
        self.store = store
        self._known: dict[str, dict] = {}
        for r in records:
            k = answer_key_of(r, sampled) if r.get("mode") == mode_name else None
            if k is not None:
                self._known.setdefault(k, r)

    def lookup(self, keys: Sequence[str]) -> None:
        """Pull the store's answers of ``keys`` into the book (the store is read lazily, per batch)."""
        if self.store is None:
            return
        for h in keys:
            if h not in self._known and self.store.get(h) is not None:
                self._known[h] = self.store.get(h)

    def get(self, h: str) -> Optional[dict]:
        return self._known.get(h)

    def remember(self, records: Sequence[dict]) -> None:
        """Keep new records' answers (the first answer of a key stays) and add them to the store."""
        for r in records:
            k = answer_key_of(r, self.sampled)
            if k is not None:
                self._known.setdefault(k, r)
        if self.store is not None:
            self.store.add(records)


def answer_batch(
    plan: EvaluationPlan, lm: Any, prompts: Sequence[str], book: AnswerBook, seed: int, start: int
) -> list:
    """An :data:`Answer` per prompt: known answers reused (``"reused": true``), the rest asked of ``lm``.

    In sampled modes prompt ``i`` is drawn with seed ``batch_seed(seed, start) + i`` (recorded as
    ``sample_seed``) whether it is asked alone or with the whole batch.

    Cost: one ``generate`` call for the unknown prompts (generation modes; in sampled modes one per unknown
    prompt when part of the batch is known) or one shared-prefix label scoring per unknown prompt (likelihood
    mode); none when every prompt is known.
    """
    hashes = [prompt_hash(p) for p in prompts]
    base = batch_seed(seed, start)
    keys = [sample_key(h, base + i) for i, h in enumerate(hashes)] if plan.mode.sampled else hashes
    book.lookup(keys)
    fresh = [i for i, k in enumerate(keys) if book.get(k) is None]
    answers: list = [None] * len(prompts)
    labels = plan.dataset.label_names
    here = {"answered_on": machine_signature()}  # provenance: bfloat16 answers differ between CPU kinds
    if plan.mode.kind == "generate" and fresh:
        for i, o in zip(fresh, _generate(plan, lm, prompts, fresh, base)):
            answers[i] = (o, plan.matcher(o, labels), dict(here))
    elif fresh:
        pred, margin = likelihood_predict(
            lm, [prompts[i] for i in fresh], plan.continuations, plan.mode.reduction
        )
        for i, p_, m_ in zip(fresh, pred.tolist(), margin):
            answers[i] = (labels[p_], p_, {"margin": float(m_), **here})
    fresh_set = set(fresh)
    for i, k in enumerate(keys):
        if i not in fresh_set:
            prev = book.get(k)
            extra = {f: prev[f] for f in ("margin", "answered_on") if f in prev}
            extra["reused"] = True
            answers[i] = (prev["raw_output"], prev["parsed_id"], extra)
    if plan.mode.sampled:
        for i, a in enumerate(answers):
            a[2]["sample_seed"] = base + i
    return answers


def _generate(plan: EvaluationPlan, lm: Any, prompts: Sequence[str], fresh: Sequence[int], base: int) -> list:
    """Completions of ``prompts[i]`` for ``i`` in ``fresh``; sampled prompt ``i`` is drawn with seed ``base +
    i``."""
    if not plan.mode.sampled or len(fresh) == len(prompts):
        return generate_answers(lm, [prompts[i] for i in fresh], plan.mode, base)
    return [generate_answers(lm, [prompts[i]], plan.mode, base + i)[0] for i in fresh]


def batch_records(
    plan: EvaluationPlan,
    method: str,
    seed: int,
    run: int,
    built: Sequence[tuple],
    answers: Sequence[Answer],
    pending: "set[int]",
) -> list[dict]:
    """The records of a batch's pending queries: ``built`` holds ``(q, prompt, demonstration indices)``."""
    labels = plan.dataset.label_names
    recs = []
    for (q, b, demos), (o, p, e) in zip(built, answers):
        if q not in pending:
            continue
        g = int(plan.gold[q])
        recs.append(
            {
                "method": method,
                "seed": int(seed),
                "run": run,
                "query": q,
                "test_index": int(plan.test_indices[q]),
                "mode": plan.mode.name,
                "prompt_sha256": prompt_hash(b.text),
                "n_prompt_tokens": b.n_tokens,
                "selected": demos,
                "n_demos": b.n_demos,
                "n_dropped": b.n_dropped,
                **({"dropped_from": "start"} if b.n_dropped and b.dropped_from == "start" else {}),
                "prompt_fits": b.fits,
                "raw_output": o,
                "parsed": None if p is None else labels[p],
                "parsed_id": p,
                "gold": labels[g],
                "gold_id": g,
                "correct": p is not None and int(p) == g,
                **e,
            }
        )
    return recs

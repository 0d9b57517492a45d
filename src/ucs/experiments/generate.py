"""Compare's generate mode: tasks whose answers are text, not labels, scored in [0, 1] with a copy baseline.

* :class:`generating_predictor` makes a predictor of a ucs backbone that *writes* the answer: the project's
  free-form prompt (:data:`~ucs.evaluation.prompts.REASONING_FORMAT`: an instruction line, the
  demonstrations as ``Q: …`` / ``A: …`` pairs, then the query) continued greedily up to ``max_new_tokens``
  and cut at the end of the answer's line;
* :class:`AnswerScoring` scores each answer against the query's reference with an
  :class:`~ucs.evaluation.answer_metrics.AnswerMetric` (``exact``, ``f1``, ``json``, ``regex:PATTERN``,
  ``module:function``) and computes the **copy baseline** beside it: the answer of the chosen demonstration
  most similar to the query (cosine of the retrieval embeddings, whatever order the prompt shows them in),
  scored with the same metric — what the selection gives with no model;
* :func:`score_summary` and :func:`copy_fields` turn those per-answer scores into a comparison's rows: the
  mean score with its bootstrap interval over queries, and the model's paired gain over the copy baseline.

Records of a scored comparison carry ``score`` (the model's answer, in [0, 1]), ``copy`` (the copied answer),
``copy_of`` (its pool position) and ``copy_score``; ``prediction`` is the generated answer and ``correct`` is
``score == 1``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ucs.evaluation.answer_metrics import AnswerMetric, get_metric
from ucs.evaluation.metrics import bootstrap_ci
from ucs.evaluation.prompts import CHAT_TEMPLATES, REASONING_FORMAT, PromptBuilder
from ucs.evaluation.summary import paired_delta

__all__ = [
    "AnswerScoring",
    "GENERATE_STOP",
    "answer_scoring",
    "copy_fields",
    "default_max_new_tokens",
    "first_answer_line",
    "generating_predictor",
    "score_summary",
]

#: Where a generated answer ends: the next question, a blank line, or a chat turn's end.
GENERATE_STOP = ("\nQ:", "\n\n", "<|im_end|>")

#: Tokens added to the longest example answer for the default ``max_new_tokens``, and its cap.
ANSWER_MARGIN, ANSWER_CAP = 8, 256


def default_max_new_tokens(
    count_tokens: Any, answers: Iterable[str], margin: int = ANSWER_MARGIN, cap: int = ANSWER_CAP
) -> int:
    """Enough tokens for the longest of ``answers`` plus ``margin``, at most ``cap`` (and at least 1).
    One ``count_tokens`` call per distinct answer."""
    longest = max((int(count_tokens(a)) for a in set(map(str, answers))), default=0)
    return max(1, min(cap, longest + margin))


def first_answer_line(text: str, marker: str = REASONING_FORMAT.answer_marker) -> str:
    """The answer in a completion: its first non-blank line, stripped, without a repeated answer marker."""
    for line in str(text).splitlines():
        line = line.strip()
        if line.startswith(marker):
            line = line[len(marker) :].strip()
        if line:
            return line
    return ""


class generating_predictor:  # noqa: N801 - used like a function, as backbone_predictor
    """A ucs backbone as a predictor that writes its answer: the demonstrations and the query in the project's
    free-form prompt (``Q: …`` / ``A: …``), continued greedily, the answer cut at the end of its line.

    Parameters
    ----------
    backbone : LanguageModel
        Anything with ``generate(prompts, max_new_tokens, temperature, top_p, stop)`` (in-process or HTTP).
    max_new_tokens : int
        The longest answer, in tokens (:func:`default_max_new_tokens` sizes it from the examples' answers).
    text_key, label_key : str
        The demonstrations' question and answer fields.
    chat_template : str, callable or tokenizer, optional
        Render the prompt through a chat template (``"chatml"``, a callable ``messages -> text`` or a
        tokenizer).
    """

    def __init__(
        self,
        backbone: Any,
        max_new_tokens: int,
        text_key: str = "text",
        label_key: str = "label",
        chat_template: Any = None,
    ) -> None:
        if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer; got {max_new_tokens!r}")
        self.backbone = backbone
        self.max_new_tokens = int(max_new_tokens)
        self.text_key, self.label_key = text_key, label_key
        if isinstance(chat_template, str):
            if chat_template not in CHAT_TEMPLATES:
                raise ValueError(
                    f"chat_template must be one of {sorted(CHAT_TEMPLATES)}, a callable "
                    f"messages -> text or a tokenizer; got {chat_template!r}"
                )
            chat_template = CHAT_TEMPLATES[chat_template]
        self.builder = PromptBuilder(REASONING_FORMAT, [], chat_template=chat_template)

    @property
    def identity(self) -> Dict[str, Any]:
        return {
            "backbone": repr(getattr(self.backbone, "identity", type(self.backbone).__name__)),
            "format": "reasoning-generate",
            "max_new_tokens": self.max_new_tokens,
            "chat": self.builder.chat,
            "stop": "\x1f".join(GENERATE_STOP),
        }

    def prompt(self, text: str, demos: List[Dict[str, Any]]) -> str:
        """The prompt the model continues for ``text`` after ``demos``."""
        pairs = [(str(d[self.text_key]), str(d[self.label_key])) for d in demos]
        return self.builder.render(pairs, text)

    def _options(self) -> Dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": 0.0, "stop": list(GENERATE_STOP)}

    def __call__(self, text: str, demos: List[Dict[str, Any]]) -> str:
        out = self.backbone.generate([self.prompt(text, demos)], **self._options())
        return first_answer_line(out[0])

    def many(self, items: Iterable[Tuple[str, List[Dict[str, Any]]]]) -> Iterator[Tuple[str, float]]:
        """``(answer, model seconds)`` for each (text, demonstrations), in order, as they come: side by side
        on a backbone with ``generate_many`` (:class:`~ucs.models.pool.BackbonePool`), else one after
        another."""
        prompts = (self.prompt(t, d) for t, d in items)
        if hasattr(self.backbone, "generate_many"):
            for out, seconds in self.backbone.generate_many(prompts, **self._options()):
                yield first_answer_line(out), seconds
            return
        for p in prompts:
            t0 = time.perf_counter()
            out = self.backbone.generate([p], **self._options())[0]
            yield first_answer_line(out), time.perf_counter() - t0


class AnswerScoring:
    """Scores of a comparison's answers with ``metric`` and the copy baseline of each (module docstring)."""

    def __init__(self, metric: AnswerMetric, label_key: str = "label") -> None:
        self.metric = metric
        self.label_key = label_key

    @property
    def name(self) -> str:
        return self.metric.name

    @staticmethod
    def check(answers: Sequence[str]) -> None:
        """Refuse answers that are all the same (every answer, copied or written, would score alike);
        all-distinct answers are what free-form tasks have."""
        if not answers:
            raise ValueError("no examples were given; a comparison needs examples with answers")
        if len(set(answers)) < 2:
            raise ValueError(
                f"every example and query has the same answer ({answers[0]!r}); a comparison "
                "needs answers that differ: check the answer (label) column"
            )

    def fields(
        self,
        query: Dict[str, Any],
        answer: str,
        chosen: Sequence[int],
        demos: Sequence[Dict[str, Any]],
        pool_emb: np.ndarray,
        query_emb: np.ndarray,
    ) -> Dict[str, Any]:
        """``correct``, ``score``, ``copy``, ``copy_of``, ``copy_score`` of one answer; ``chosen``: the
        demonstrations' pool positions (rows of ``pool_emb``), ``demos`` the same examples."""
        gold = str(query[self.label_key])
        score = self.metric(str(answer), gold)
        out: Dict[str, Any] = {
            "correct": score >= 1.0,
            "score": score,
            "copy": None,
            "copy_of": None,
            "copy_score": None,
        }
        if len(chosen):
            near = nearest(pool_emb[np.asarray(chosen, dtype=np.int64)], query_emb)
            copy = str(demos[near][self.label_key])
            out.update(copy=copy, copy_of=int(chosen[near]), copy_score=self.metric(copy, gold))
        return out


def nearest(demo_emb: np.ndarray, query_emb: np.ndarray) -> int:
    """Position of the row of ``demo_emb`` with the highest cosine similarity to ``query_emb`` (the first on a
    tie). O(k·d)."""
    d = np.asarray(demo_emb, dtype=np.float64)
    q = np.asarray(query_emb, dtype=np.float64).ravel()
    norms = np.linalg.norm(d, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
    return int(np.argmax(d @ q / np.maximum(norms, 1e-12)))


def answer_scoring(metric: Any, label_key: str = "label") -> Optional[AnswerScoring]:
    """An :class:`AnswerScoring` for a metric name or :class:`AnswerMetric`; ``None`` for no metric or a
    ``metric(example, answer) -> bool`` callable (the label comparison). Raises ``ValueError`` for a bad
    name."""
    if isinstance(metric, str):
        metric = get_metric(metric)
    return AnswerScoring(metric, label_key) if isinstance(metric, AnswerMetric) else None


def score_summary(
    records: Iterable[dict], field: str = "score", n_boot: int = 2000
) -> Dict[str, Dict[str, Any]]:
    """Per method, the mean of the records' ``field`` (``score`` or ``copy_score``) with its bootstrap
    interval over queries, in the form of :func:`ucs.evaluation.summary.summarize`'s methods (``mean``,
    ``ci``, ``n_queries``, ``per_query``: ``query`` and ``accuracy``) so ``paired_delta`` compares two of
    them."""
    by: Dict[str, Dict[int, float]] = defaultdict(dict)
    for r in records:
        if r.get(field) is not None:
            by[r["method"]][int(r["query"])] = float(r[field])
    out = {}
    for method, values in by.items():
        qs = sorted(values)
        vals = np.array([values[q] for q in qs], dtype=np.float64)
        out[method] = {
            "mean": float(vals.mean()),
            "ci": list(bootstrap_ci(vals, n_boot=n_boot)),
            "n_queries": len(qs),
            "per_query": {"query": qs, "accuracy": vals.tolist()},
        }
    return out


def copy_fields(model: Optional[Dict[str, Any]], copy: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A row's copy baseline: its mean score (``copy``, ``copy_ci``) and the model's paired gain over it
    (``over_copy``, ``over_copy_ci``) on the queries both scored."""
    d = paired_delta(model, copy) if model is not None and copy is not None else None
    return {
        "copy": None if copy is None else copy["mean"],
        "copy_ci": None if copy is None else copy["ci"],
        "over_copy": None if d is None else d["delta"],
        "over_copy_ci": None if d is None else d["ci"],
    }

"""What :func:`ucs.experiments.compare.compare` calls with each query and its demonstrations.

A predictor answers one query given the chosen demonstrations. :func:`as_predictor` turns what the user has
into ``predict(query_example, demonstrations) -> (correct, answer)``:

* a plain callable ``f(query_text, demonstrations) -> answer``;
* a LangChain ``Runnable`` (anything with ``invoke``), invoked with ``{"query": text, "examples": demos}``;
* a DSPy program (anything with ``predictors()`` and ``__call__``): every predictor's ``demos`` become the
  demonstrations (as ``dspy.Example`` s with the query field as input) for the call
  ``program(**{text_key: text})``;
* :func:`backbone_predictor` wraps a ucs backbone (in-process or HTTP): the label with the highest
  log-likelihood after the evaluation's prompt.

Nothing here imports LangChain or DSPy: they are recognised by their methods, so neither is needed unless
used.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ucs.evaluation.prompts import CHAT_TEMPLATES, INTENT_FORMAT, PromptBuilder

__all__ = ["as_predictor", "backbone_predictor", "predictor_identity", "answer_text"]

Predict = Callable[[Dict[str, Any], List[Dict[str, Any]]], Tuple[bool, Any]]


def answer_text(answer: Any, label_key: str = "label") -> str:
    """The text of an answer: a string, a chat message's ``content``, or a DSPy prediction's ``label_key``."""
    if isinstance(answer, str):
        return answer
    content = getattr(answer, "content", None)
    if isinstance(content, str):
        return content
    field = getattr(answer, label_key, None)
    if field is not None:
        return str(field)
    if isinstance(answer, dict) and label_key in answer:
        return str(answer[label_key])
    return str(answer)


def _same(answer: str, gold: str) -> bool:
    return answer.strip().strip("\"'").rstrip(".").strip().casefold() == gold.strip().casefold()


def _is_dspy_program(obj: Any) -> bool:
    return callable(getattr(obj, "predictors", None)) and callable(obj) and not hasattr(obj, "invoke")


def _dspy_call(program: Any, text_key: str) -> Callable[[str, List[Dict[str, Any]]], Any]:
    import dspy

    def call(text: str, demos: List[Dict[str, Any]]) -> Any:
        examples = [dspy.Example(**d).with_inputs(text_key) for d in demos]
        for p in program.predictors():
            p.demos = list(examples)
        return program(**{text_key: text})

    return call


def as_predictor(
    obj: Any,
    *,
    text_key: str = "text",
    label_key: str = "label",
    metric: Optional[Callable[[Any, Any], Any]] = None,
) -> Predict:
    """``predict(query_example, demonstrations) -> (correct, answer text)`` for a callable, a LangChain
    ``Runnable`` or a DSPy program (see the module docstring); ``metric(query_example, answer)`` decides
    correctness when given (a DSPy program's metric gets a ``dspy.Example`` of the query), else the answer's
    text equals the gold label up to case, quotes, a final period and surrounding spaces."""
    if hasattr(obj, "invoke"):

        def call(text: str, demos: List[Dict[str, Any]]) -> Any:
            return obj.invoke({"query": text, "examples": demos})
    elif _is_dspy_program(obj):
        call = _dspy_call(obj, text_key)
    elif callable(obj):
        call = obj
    else:
        raise ValueError(
            f"predictor must be a callable f(query, demonstrations), a LangChain Runnable or a DSPy "
            f"program; got {type(obj).__name__}"
        )
    dspy_metric = metric is not None and _is_dspy_program(obj)

    def judge(query: Dict[str, Any], answer: Any) -> Tuple[bool, Any]:
        if metric is not None:
            example = query
            if dspy_metric:
                import dspy

                example = dspy.Example(**query).with_inputs(text_key)
            return bool(metric(example, answer)), answer_text(answer, label_key)
        text = answer_text(answer, label_key)
        return _same(text, str(query[label_key])), text

    def predict(query: Dict[str, Any], demos: List[Dict[str, Any]]) -> Tuple[bool, Any]:
        return judge(query, call(str(query[text_key]), demos))

    def many(
        items: Iterable[Tuple[Dict[str, Any], List[Dict[str, Any]]]],
    ) -> Iterator[Tuple[bool, Any, float]]:
        """``(correct, answer, model seconds)`` for each (query, demonstrations), in order, as they come: side
        by side when the predictor has ``many``."""
        asked: Deque[Dict[str, Any]] = collections.deque()

        def texts() -> Iterator[Tuple[str, List[Dict[str, Any]]]]:
            for q, d in items:
                asked.append(q)
                yield str(q[text_key]), d

        if hasattr(obj, "many") and not hasattr(obj, "invoke"):
            done: Iterable[Tuple[Any, float]] = obj.many(texts())
        else:
            done = (_timed(call, t, d) for t, d in texts())
        for answer, seconds in done:
            yield (*judge(asked.popleft(), answer), seconds)

    predict.many = many  # type: ignore[attr-defined]
    return predict


def predictor_identity(obj: Any) -> str:
    """What keys a comparison folder to its predictor: a backbone's identity, else the object's type name."""
    ident = getattr(obj, "identity", None)
    if isinstance(ident, dict):
        return repr(sorted(ident.items()))
    return f"{type(obj).__module__}.{type(obj).__qualname__}:{getattr(obj, '__name__', '')}"


class backbone_predictor:  # noqa: N801 - used like a function
    """A ucs backbone as a predictor: the label whose continuation has the highest log-likelihood after the
    evaluation's intent prompt (``INTENT_FORMAT``) with the demonstrations; one scoring call per query.

    Parameters
    ----------
    backbone : LanguageModel
        Anything with ``score_continuations(prefix, continuations)`` (in-process or HTTP).
    labels : sequence of str
        The label set the model chooses from.
    label_key : str
        The demonstrations' label field.
    chat_template : str, callable or tokenizer, optional
        Render the prompt through a chat template (``"chatml"``, a callable ``messages -> text`` or a
        tokenizer), as a served model's own template would; ``None``: the plain intent prompt.
    """

    def __init__(
        self,
        backbone: Any,
        labels: Sequence[str],
        text_key: str = "text",
        label_key: str = "label",
        chat_template: Any = None,
    ) -> None:
        self.backbone = backbone
        self.labels = list(labels)
        self.text_key = text_key
        self.label_key = label_key
        if isinstance(chat_template, str):
            if chat_template not in CHAT_TEMPLATES:
                raise ValueError(
                    f"chat_template must be one of {sorted(CHAT_TEMPLATES)}, a callable messages -> text "
                    f"or a tokenizer; got {chat_template!r}"
                )
            chat_template = CHAT_TEMPLATES[chat_template]
        self.builder = PromptBuilder(INTENT_FORMAT, self.labels, chat_template=chat_template)
        self.continuations = [INTENT_FORMAT.continuation(y, chat=self.builder.chat) for y in self.labels]

    @property
    def identity(self) -> Dict[str, Any]:
        found = {"search": "branch-and-bound"} if self._chooses else {}
        return {
            "backbone": repr(getattr(self.backbone, "identity", type(self.backbone).__name__)),
            "labels": "\x1f".join(self.labels),
            "format": "intent-likelihood",
            "chat": self.builder.chat,
            **found,
        }

    @property
    def _chooses(self) -> bool:
        """Whether the backbone finds the most likely label without scoring every one
        (``choose_continuation``, :mod:`ucs.lm.best_continuation`)."""
        return bool(getattr(self.backbone, "chooses", hasattr(self.backbone, "choose_continuation")))

    def prompt(self, text: str, demos: List[Dict[str, Any]]) -> str:
        """The prompt whose label continuations are scored for ``text`` after ``demos``."""
        return self.builder.render([(str(d[self.text_key]), str(d[self.label_key])) for d in demos], text)

    def _answer(self, prompt: str) -> str:
        if self._chooses:
            return self.labels[self.backbone.choose_continuation(prompt, self.continuations)[0]]
        return self.labels[int(np.argmax(self.backbone.score_continuations(prompt, self.continuations)))]

    def __call__(self, text: str, demos: List[Dict[str, Any]]) -> str:
        return self._answer(self.prompt(text, demos))

    def many(self, items: Iterable[Tuple[str, List[Dict[str, Any]]]]) -> Iterator[Tuple[str, float]]:
        """``(answer, model seconds)`` for each (text, demonstrations), in order, as they come: side by side
        on a backbone with ``choose_many`` (:class:`~ucs.models.pool.BackbonePool`, which takes the items as
        its workers need them), else one after another."""
        prompts = (self.prompt(t, d) for t, d in items)
        if hasattr(self.backbone, "choose_many"):
            for (j, _), seconds in self.backbone.choose_many(prompts, self.continuations):
                yield self.labels[j], seconds
            return
        for p in prompts:
            yield _timed(self._answer, p)


def _timed(fn: Callable[..., Any], *args: Any) -> Tuple[Any, float]:
    """``(fn(*args), seconds it took)``."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0

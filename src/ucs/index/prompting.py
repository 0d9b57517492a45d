"""From a fitted :class:`~ucs.index.SelectorIndex` and new queries to the prompts themselves.

:func:`prompt_records` turns queries into one JSON-able record each: the chosen demonstrations (text, label,
index, score) and the prompt, rendered with the evaluation's intent layout
(:data:`ucs.evaluation.prompts.INTENT_FORMAT`, the one ``ucs evaluate`` scores), as OpenAI-style chat
messages, or with the caller's Jinja template (variables ``demonstrations`` — a list of ``{"text", "label"}``
—, ``query`` and ``labels``). Queries are consumed in batches of ``batch_size`` (one embedding call and one
selection call each), so a query file of any length streams through in O(batch) memory. Multi-line texts are
kept as they are.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

from ucs.evaluation.prompts import INTENT_FORMAT

__all__ = ["prompt_records", "FORMATS"]

#: How a prompt is written: plain text, chat messages (system + user), or a Jinja template.
FORMATS = ("text", "chat")


def _batches(items: Iterable[str], size: int) -> Iterator[List[str]]:
    batch: List[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _render(
    demos: Sequence[tuple], query: str, labels: Sequence[str], fmt: str, template: Any
) -> Dict[str, Any]:
    if template is not None:
        return {
            "prompt": template.render(
                demonstrations=[{"text": t, "label": y} for t, y in demos], query=query, labels=list(labels)
            )
        }
    if fmt == "chat":
        return {
            "messages": [
                {"role": "system", "content": INTENT_FORMAT.system},
                {"role": "user", "content": INTENT_FORMAT.user_part(demos, query, labels)},
            ]
        }
    return {"prompt": INTENT_FORMAT.render(demos, query, labels)}


def prompt_records(
    index: Any,
    queries: Iterable[str],
    k: int,
    *,
    text_key: str,
    label_key: str,
    fmt: str = "text",
    template: Any = None,
    order: Optional[str] = None,
    batch_size: int = 512,
) -> Iterator[Dict[str, Any]]:
    """One record per query, in input order: ``{"query", "demonstrations", "prompt" | "messages"}``.

    ``index`` is fitted on examples holding ``text_key`` and ``label_key``; ``template`` is a compiled Jinja
    template or ``None``. Time: one embedding and one selection call per batch; memory O(batch_size · k).
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}; got {fmt!r}")
    labels = sorted({str(e[label_key]) for e in index.examples_})
    for batch in _batches(queries, batch_size):
        chosen = index.select(batch, k, order=order)
        for query, sel in zip(batch, chosen):
            demos = [(str(e[text_key]), str(e[label_key])) for e in sel.examples]
            record: Dict[str, Any] = {
                "query": query,
                "demonstrations": [
                    {"index": int(i), "text": t, "label": y, "score": _finite(s)}
                    for (t, y), i, s in zip(demos, sel.indices, sel.scores)
                ],
            }
            record.update(_render(demos, query, labels, fmt, template))
            yield record


def _finite(x: float) -> Optional[float]:
    x = float(x)
    return x if x == x and abs(x) != float("inf") else None

"""Prompt formats of the ICL protocol (SPEC §5), chat-template rendering and the prompt token budget.

Intent tasks (plain text, no chat template, as in the paper)::

    You are an assistant for intent classification.
    Assign exactly one label from the list below to the text. Answer as 'Label: <intent_name>'.
    Labels: card_arrival, card_linking, ...

    Example:
    Text: <demo text>
    Label: <demo label>

    ...

    Now answer the following question.
    Text: <query>
    Label:

Reasoning tasks (BBEH) use ``Q: … A: …`` blocks under a reasoning-assistant system line and no label list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ucs.utils.fitting import longest_fitting_prefix

__all__ = [
    "PromptFormat",
    "INTENT_FORMAT",
    "REASONING_FORMAT",
    "format_for_task",
    "BuiltPrompt",
    "DROP_SIDES",
    "PromptBuilder",
    "check_drop_from",
    "render_chat",
    "shown_demonstrations",
]


@dataclass(frozen=True)
class PromptFormat:
    """A plain-text ICL prompt layout.

    Parameters
    ----------
    system : str
        First line of the prompt (the system message when a chat template is used).
    instruction : str
        Task instruction; ``{labels}`` is replaced by the comma-separated label names.
    demo_template, query_template : str
        ``{text}`` / ``{label}`` placeholders; the query template ends with the answer marker.
    answer_marker : str
        The string after which the model answers (``"Label:"``); answer extraction looks for it.
    block_separator : str
        Between header, demonstrations and the query.
    """

    name: str
    system: str
    instruction: str
    demo_template: str
    query_template: str
    answer_marker: str
    block_separator: str = "\n\n"

    def header(self, label_names: Sequence[str]) -> str:
        instruction = self.instruction.replace("{labels}", ", ".join(label_names))
        return f"{self.system}\n{instruction}"

    def demo(self, text: str, label: str) -> str:
        return self.demo_template.replace("{text}", text).replace("{label}", label)

    def query(self, text: str) -> str:
        return self.query_template.replace("{text}", text)

    def user_part(self, demos: Sequence[tuple[str, str]], query: str, label_names: Sequence[str]) -> str:
        """Everything after the system line (the user message of a chat rendering)."""
        instruction = self.instruction.replace("{labels}", ", ".join(label_names))
        blocks = [instruction, *(self.demo(t, y) for t, y in demos), self.query(query)]
        return self.block_separator.join(blocks)

    def render(self, demos: Sequence[tuple[str, str]], query: str, label_names: Sequence[str]) -> str:
        """The plain-text prompt for ``demos`` (``(text, label)`` pairs, in order) and ``query``."""
        return f"{self.system}\n{self.user_part(demos, query, label_names)}"

    def continuation(self, label: str, chat: bool = False) -> str:
        """The text scored for ``label`` in likelihood mode: ``" " + label`` after the marker."""
        return label if chat else " " + label


INTENT_FORMAT = PromptFormat(
    name="intent",
    system="You are an assistant for intent classification.",
    instruction=(
        "Assign exactly one label from the list below to the text. Answer as 'Label: <intent_name>'.\n"
        "Labels: {labels}"
    ),
    demo_template="Example:\nText: {text}\nLabel: {label}",
    query_template="Now answer the following question.\nText: {text}\nLabel:",
    answer_marker="Label:",
)

REASONING_FORMAT = PromptFormat(
    name="reasoning",
    system="You are an assistant for reasoning tasks.",
    instruction="Answer the last question. Give only the final answer after 'A:'.",
    demo_template="Q: {text}\nA: {label}",
    query_template="Q: {text}\nA:",
    answer_marker="A:",
)

_FORMATS = {"intent": INTENT_FORMAT, "reasoning": REASONING_FORMAT}


def format_for_task(task: str) -> PromptFormat:
    """The default format of a dataset task kind (``"intent"`` or ``"reasoning"``)."""
    if task not in _FORMATS:
        raise ValueError(f"task must be one of {sorted(_FORMATS)}, got {task!r}")
    return _FORMATS[task]


ChatTemplate = Callable[[list], str]


def chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """The ChatML chat template (SmolLM2, Qwen and others): ``<|im_start|>role\ncontent<|im_end|>`` per
    message, then the assistant's turn opened. For models served over HTTP, where the tokenizer's own template
    is not at hand (llama-cpp-python's server aligns echoed log-probabilities only for prompts that start with
    the model's BOS token, ``<|im_start|>`` for SmolLM2)."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


#: Chat templates by name (``--chat-template``).
CHAT_TEMPLATES = {"chatml": chatml}


def render_chat(
    fmt: PromptFormat,
    demos: Sequence[tuple[str, str]],
    query: str,
    label_names: Sequence[str],
    chat_template: Any,
) -> str:
    """Render through a chat template: system message = ``fmt.system``, user message = the rest.

    ``chat_template`` is a callable ``messages -> str`` or a tokenizer with ``apply_chat_template`` (called
    with ``tokenize=False, add_generation_prompt=True``). Templates that reject a system role (some
    instruct models) get the system line prepended to the user message instead.
    """
    system: Mapping[str, str] = {"role": "system", "content": fmt.system}
    user = {"role": "user", "content": fmt.user_part(demos, query, label_names)}
    apply = _template_callable(chat_template)
    try:
        return apply([dict(system), user])
    except Exception:
        merged = {"role": "user", "content": f"{fmt.system}\n{user['content']}"}
        return apply([merged])


def _template_callable(chat_template: Any) -> ChatTemplate:
    if hasattr(chat_template, "apply_chat_template"):

        def apply(messages: list) -> str:
            return chat_template.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

        return apply
    if callable(chat_template):
        return chat_template
    raise ValueError(
        "chat_template must be a callable messages -> str or a tokenizer with apply_chat_template"
    )


@dataclass(frozen=True)
class BuiltPrompt:
    """A rendered prompt and what the budget did to it.

    ``n_demos`` demonstrations were kept, ``n_dropped`` were removed to fit ``max_tokens`` from the end of the
    selection (``dropped_from="end"``: the first ones kept) or from its start (``"start"``: the last ones
    kept); ``n_tokens`` is the prompt's token count (``None`` without a counter); ``fits`` is False when even
    the prompt without demonstrations exceeds the budget.
    """

    text: str
    n_demos: int
    n_dropped: int
    n_tokens: int | None
    fits: bool
    dropped_from: str = "end"

    def shown(self, demos: Sequence[Any]) -> list:
        """The items of ``demos`` (the selection the prompt was built from) that the prompt holds."""
        return shown_demonstrations(demos, self.n_dropped, self.dropped_from)


#: Where a too-long prompt loses demonstrations: from the end of the selection (its first ones kept: the
#: selectors' own order, most relevant first) or from its start (orders that put the most relevant last).
DROP_SIDES = ("end", "start")


def check_drop_from(drop_from: str) -> str:
    """``drop_from`` if it is one of :data:`DROP_SIDES`, else a ValueError naming the choices."""
    if drop_from not in DROP_SIDES:
        raise ValueError(f"drop_from must be one of {DROP_SIDES}; got {drop_from!r}")
    return drop_from


def shown_demonstrations(demos: Sequence[Any], n_dropped: int, dropped_from: str = "end") -> list:
    """The demonstrations a prompt holds after ``n_dropped`` were removed from ``dropped_from``. O(B)."""
    demos = list(demos)
    if n_dropped <= 0:
        return demos
    return demos[n_dropped:] if dropped_from == "start" else demos[: len(demos) - n_dropped]


class PromptBuilder:
    """Render prompts for one dataset and keep them within the model's context.

    Parameters
    ----------
    fmt : PromptFormat
    label_names : sequence of str
        All label names of the task (listed in intent prompts).
    count_tokens : callable, optional
        ``text -> int`` (e.g. ``lm.count_tokens``). Without it no budget is enforced.
    max_tokens : int, optional
        Prompt budget in tokens: the model context minus the tokens reserved for the answer.
    chat_template : callable or tokenizer, optional
        Render through a chat template (see :func:`render_chat`) instead of plain text.

    Notes
    -----
    When a prompt is too long, demonstrations are dropped from the **end** of the selection (the selector's
    order is kept for the rest), or from its **start** with ``build(..., drop_from="start")`` — for orders
    that put the most relevant demonstration last, next to the query (``similar_last``, ``vote_last``), so the
    budget still keeps the most relevant ones. The number kept is found by binary search over its length, so a
    selection of B demonstrations costs O(log B) token counts instead of O(B).
    """

    def __init__(
        self,
        fmt: PromptFormat,
        label_names: Sequence[str],
        count_tokens: Callable[[str], int] | None = None,
        max_tokens: int | None = None,
        chat_template: Any = None,
    ) -> None:
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
        if max_tokens is not None and count_tokens is None:
            raise ValueError("max_tokens needs count_tokens (a callable text -> number of tokens)")
        self.fmt = fmt
        self.label_names = tuple(label_names)
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self.chat_template = chat_template

    @property
    def chat(self) -> bool:
        return self.chat_template is not None

    def render(self, demos: Sequence[tuple[str, str]], query: str) -> str:
        if self.chat_template is not None:
            return render_chat(self.fmt, demos, query, self.label_names, self.chat_template)
        return self.fmt.render(demos, query, self.label_names)

    def build(self, demos: Sequence[tuple[str, str]], query: str, drop_from: str = "end") -> BuiltPrompt:
        """Render ``demos`` + ``query``, dropping demonstrations from ``drop_from`` (``"end"`` or ``"start"``
        of the selection) until the prompt fits."""
        check_drop_from(drop_from)
        demos = list(demos)
        full = self.render(demos, query)
        if self.max_tokens is None or self.count_tokens is None:
            n = self.count_tokens(full) if self.count_tokens is not None else None
            return BuiltPrompt(full, len(demos), 0, n, True, drop_from)
        n_full = self.count_tokens(full)
        if n_full <= self.max_tokens:
            return BuiltPrompt(full, len(demos), 0, n_full, True, drop_from)
        cache: dict[int, tuple[str, int]] = {len(demos): (full, n_full)}

        def measure(k: int) -> tuple[str, int]:
            if k not in cache:
                text = self.render(shown_demonstrations(demos, len(demos) - k, drop_from), query)
                cache[k] = (text, self.count_tokens(text))
            return cache[k]

        if measure(0)[1] > self.max_tokens:
            text, n = measure(0)
            return BuiltPrompt(text, 0, len(demos), n, False, drop_from)
        k = longest_fitting_prefix(len(demos), lambda j: measure(j)[1] <= self.max_tokens)
        text, n = measure(k)
        return BuiltPrompt(text, k, len(demos) - k, n, True, drop_from)

from __future__ import annotations

import pytest

from ucs.evaluation import INTENT_FORMAT, REASONING_FORMAT, PromptBuilder, format_for_task, render_chat

LABELS = ["card_arrival", "pin_blocked"]
DEMOS = [("where is my card", "card_arrival"), ("my pin is blocked", "pin_blocked")]


def test_intent_prompt_matches_the_spec_layout():
    p = INTENT_FORMAT.render(DEMOS, "card still not here", LABELS)
    assert p.startswith("You are an assistant for intent classification.\n")
    assert "exactly one label" in p and "'Label: <intent_name>'" in p
    assert "Labels: card_arrival, pin_blocked" in p
    assert "Example:\nText: where is my card\nLabel: card_arrival\n\nExample:\nText: my pin is blocked" in p
    assert p.endswith("\n\nNow answer the following question.\nText: card still not here\nLabel:")
    assert INTENT_FORMAT.continuation("pin_blocked") == " pin_blocked"


def test_reasoning_prompt_and_zero_demos():
    p = REASONING_FORMAT.render([("Is 2 even?", "Yes")], "Is 3 even?", ["No", "Yes"])
    assert "reasoning" in p.splitlines()[0]
    assert "Q: Is 2 even?\nA: Yes\n\nQ: Is 3 even?\nA:" in p and "Labels:" not in p
    assert format_for_task("reasoning") is REASONING_FORMAT
    with pytest.raises(ValueError, match="task must be one of"):
        format_for_task("qa")
    p0 = INTENT_FORMAT.render([], "q", LABELS)
    assert "Example:" not in p0 and p0.endswith("Text: q\nLabel:")


def test_chat_rendering_with_callable_and_tokenizer_like():
    seen = []

    def template(messages):
        seen.append(messages)
        return "|".join(f"<{m['role']}>{m['content']}" for m in messages) + "|<assistant>"

    out = render_chat(INTENT_FORMAT, DEMOS, "q", LABELS, template)
    assert out.startswith("<system>You are an assistant for intent classification.|<user>Assign exactly one")
    assert seen[0][1]["content"].endswith("Text: q\nLabel:")

    class NoSystemTokenizer:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            assert tokenize is False and add_generation_prompt is True
            if any(m["role"] == "system" for m in messages):
                raise ValueError("System role not supported")
            return "<user>" + messages[0]["content"]

    out = render_chat(INTENT_FORMAT, DEMOS, "q", LABELS, NoSystemTokenizer())
    assert out.startswith("<user>You are an assistant for intent classification.\nAssign")
    with pytest.raises(ValueError, match="chat_template"):
        render_chat(INTENT_FORMAT, DEMOS, "q", LABELS, 42)


def _count(text):
    return len(text.split())


def test_budget_drops_demonstrations_from_the_end():
    demos = [(f"text number {i} " + "word " * 10, "card_arrival") for i in range(10)]
    free = PromptBuilder(INTENT_FORMAT, LABELS, _count, None).build(demos, "q")
    assert free.n_demos == 10 and free.n_dropped == 0 and free.fits
    per_demo = _count(INTENT_FORMAT.demo(*demos[0]))
    base = _count(INTENT_FORMAT.render([], "q", LABELS))
    budget = base + 4 * per_demo + 3
    built = PromptBuilder(INTENT_FORMAT, LABELS, _count, budget).build(demos, "q")
    assert (built.n_demos, built.n_dropped, built.fits) == (4, 6, True)
    assert built.text == INTENT_FORMAT.render(demos[:4], "q", LABELS)
    assert built.n_tokens <= budget
    tiny = PromptBuilder(INTENT_FORMAT, LABELS, _count, 3).build(demos, "q")
    assert (tiny.n_demos, tiny.n_dropped, tiny.fits) == (0, 10, False)
    # orders that put the most relevant last drop from the start: the last four are kept, in their order
    last = PromptBuilder(INTENT_FORMAT, LABELS, _count, budget).build(demos, "q", drop_from="start")
    assert (last.n_demos, last.n_dropped, last.dropped_from) == (4, 6, "start")
    assert last.text == INTENT_FORMAT.render(demos[6:], "q", LABELS)
    assert last.shown(list(range(10))) == [6, 7, 8, 9] and built.shown(list(range(10))) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="drop_from"):
        PromptBuilder(INTENT_FORMAT, LABELS, _count, budget).build(demos, "q", drop_from="middle")
    with pytest.raises(ValueError, match="count_tokens"):
        PromptBuilder(INTENT_FORMAT, LABELS, None, 100)

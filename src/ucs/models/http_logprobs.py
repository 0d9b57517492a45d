"""Reading a continuation's log-probability off an echoed ``/v1/completions`` answer.

A scoring request sends ``prompt = prefix + continuation`` with ``echo=true``, ``logprobs=1`` and
``max_tokens=1`` (``0`` would be cleaner, but llama-cpp-python's server reads 0 as "no limit"). The answer's
``logprobs`` lists, for every token of the echoed text (the prompt, then the generated token), its string
(``tokens``), where it starts (``text_offset``) and ``log p(token | everything before it)``
(``token_logprobs``, ``null`` for the first token).

**Which tokens belong to the continuation.** The server tokenises the prompt as one text, so the boundary
between prefix and continuation is found in characters: a token belongs to the continuation when it ends after
the prefix and starts before the end of the prompt. That is every token whose text offset is ≥ ``len(prefix)``
and, where the server's tokeniser merged the last characters of the prefix with the first ones of the
continuation into one token, that straddling token as well: every character of the continuation is then
covered by a scored token, and the score never silently drops the continuation's first characters. (The
in-process engines tokenise prefix and continuation separately, so a straddling token is the one case where
the two can disagree; moving the prefix's trailing spaces onto the continuation, as both do, makes it rare:
tokenisers start words with their space.)

**Offsets.** Some servers count offsets in text with the special tokens left out (llama-cpp-python renders
``<|im_start|>`` as ``""``), so offsets are re-anchored at the end of the echoed text, where the continuation
is: the last token ends where the text ends. Every token of the continuation is then checked against the
echoed text character by character; a mismatch raises :class:`MisalignedLogprobsError` rather than returning a
wrong score.

Cost: O(number of echoed tokens) per answer.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

__all__ = [
    "PromptLogprobsUnavailableError",
    "MisalignedLogprobsError",
    "continuation_logprob",
    "GENERATE_FIX",
]

#: The one-line fix named wherever likelihood scoring is impossible through an endpoint.
GENERATE_FIX = "use --mode generate (generation works through any OpenAI-compatible endpoint)"


class PromptLogprobsUnavailableError(ValueError):
    """The endpoint does not return the prompt's log-probabilities, so only generation modes can run."""


class MisalignedLogprobsError(PromptLogprobsUnavailableError):
    """The endpoint returns prompt log-probabilities that do not line up with the prompt's tokens."""


def continuation_logprob(
    choice: Dict[str, Any], prompt: str, prefix_len: int, where: str
) -> Tuple[float, int]:
    """``(log p(continuation | prefix), number of continuation tokens)`` from one echoed completion choice.

    Parameters
    ----------
    choice : dict
        ``response["choices"][0]`` of ``POST /v1/completions`` with ``echo=true`` and ``logprobs >= 0``.
    prompt : str
        The prompt sent, ``prefix + continuation``.
    prefix_len : int
        ``len(prefix)`` in characters; ``0 < prefix_len < len(prompt)``.
    where : str
        The endpoint, for messages.
    """
    tokens, offsets, lps = _fields(choice, where)
    text = choice.get("text")
    if not isinstance(text, str) or not text.startswith(prompt):
        raise PromptLogprobsUnavailableError(
            f"{where} did not echo the prompt (echo=true), so it cannot score label continuations; "
            f"{GENERATE_FIX}"
        )
    picked = _continuation_tokens(tokens, offsets, text, prompt, prefix_len)
    if picked is None:
        raise MisalignedLogprobsError(
            f"{where}: the echoed tokens do not line up with the echoed text (offsets, or the generated "
            "token, are "
            f"missing), so its prompt log-probabilities cannot be trusted; {GENERATE_FIX}"
        )
    values = [lps[i] for i in picked]
    if any(v is None for v in values):
        raise ValueError("the prefix must not be empty: the first token of a text has no log-probability")
    return float(sum(values)), len(picked)


def _continuation_tokens(
    tokens: List[str], offsets: List[int], text: str, prompt: str, prefix_len: int
) -> "List[int] | None":
    """Indices of the continuation's tokens, or ``None`` when no anchoring of the offsets matches the text.

    Anchors tried in order: the last token ends where the echoed text ends (the generated token has an entry);
    then, only when nothing visible was generated (an end-of-sequence token), the last or second-to-last token
    ends where the prompt ends. A server that leaves out the generated token while the text shows it fails all
    (llama-cpp-python's misaligned echo does).
    """
    ends = [(len(text), len(tokens) - 1)]
    if len(text) == len(prompt):
        ends += [(len(prompt), j) for j in (len(tokens) - 1, len(tokens) - 2) if j >= 0]
    for end, j in ends:
        shift = end - (offsets[j] + len(tokens[j]))
        picked = [
            i
            for i in range(j + 1)
            if offsets[i] + shift + len(tokens[i]) > prefix_len and offsets[i] + shift < len(prompt)
        ]
        if picked and "".join(tokens[picked[0] : j + 1]) == text[offsets[picked[0]] + shift : end]:
            return picked
    return None


def _fields(choice: Dict[str, Any], where: str) -> Tuple[List[str], List[int], List[Any]]:
    """``(tokens, text_offset, token_logprobs)`` of a choice, or the error saying they are missing."""
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    keys = ("tokens", "text_offset", "token_logprobs")
    if not isinstance(lp, dict) or any(not isinstance(lp.get(k), list) for k in keys) or not lp["tokens"]:
        raise PromptLogprobsUnavailableError(
            f"{where} does not return prompt log-probabilities (echo=true with logprobs on /v1/completions), "
            f"so label likelihoods cannot be computed; {GENERATE_FIX}"
        )
    tokens, offsets, lps = (lp[k] for k in keys)
    if not len(tokens) == len(offsets) == len(lps):
        raise MisalignedLogprobsError(f"{where} returned logprobs lists of different lengths; {GENERATE_FIX}")
    return [str(t) for t in tokens], [int(o) for o in offsets], lps

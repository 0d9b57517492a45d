"""A local OpenAI-compatible completions server over a tiny deterministic model, for orchestration tests and
the HTTP benchmark: the request shapes of vLLM, without weights.

:class:`CompletionsDouble` answers ``GET /v1/models`` and ``POST /v1/completions`` with ``prompt`` a string
or, as vLLM and the OpenAI API do, a *list* of strings (one choice per prompt, ``choices[i].index == i``),
with ``echo``, ``logprobs`` (``tokens``, ``token_logprobs``, ``text_offset``, ``top_logprobs``; ``null`` for
the first token) and greedy generation (``max_tokens`` tokens from a small vocabulary). Its "model" is a hash:
the log-probability of a token is a fixed function of the token and the 64 characters before it, so the echo
of ``prefix + g`` gives ``g`` the very number generation reported for it (the backbone's alignment check
passes) and a wrong pairing of prompts and choices changes the scores.

Two switches play other servers: ``lists=False`` refuses a list of more than one prompt with HTTP 500 and
takes a list of one, as llama-cpp-python's server does (an ``assert`` in its route); ``reverse_choices=True``
returns the choices of a list in reverse order (their ``index`` is still right), so a client that pairs them
by position fails. It counts the requests and prompts it answers (:attr:`CompletionsDouble.requests`,
:attr:`CompletionsDouble.prompts`). Cost: O(characters of a prompt) hashes of 64 characters each.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["CompletionsDouble", "double_logprob", "double_tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
#: What greedy generation picks from: single punctuation marks, which never merge with the prompt's last
#: token, so the echo of ``prompt + token`` scores the very token that was generated.
VOCAB = (".", ",", "!", "?", ";", ":", "-", "'", ")", "(")


def double_tokens(text: str) -> List[Tuple[int, str]]:
    """``(offset, token)`` of every token of ``text``: a word, a punctuation mark, or a run of spaces; the
    tokens joined give ``text`` back."""
    return [(m.start(), m.group()) for m in _TOKEN.finditer(text)]


def double_logprob(context: str, token: str) -> float:
    """``log p(token | context)`` of the double's model: in ``[-8, -0.05)``, a hash of the token and the last
    64 characters of the context."""
    digest = hashlib.blake2b(f"{context[-64:]}\x00{token}".encode("utf-8"), digest_size=8).digest()
    return -0.05 - 7.95 * int.from_bytes(digest, "big") / 2.0**64


def _greedy(context: str) -> Tuple[str, float]:
    return max(((t, double_logprob(context, t)) for t in VOCAB), key=lambda pair: pair[1])


def _complete(
    prompt: str, echo: bool, logprobs: Optional[int], max_tokens: int, index: int
) -> Dict[str, Any]:
    """One choice: the greedy continuation of ``prompt`` (and the prompt's echo and log-probabilities if
    asked)."""
    toks: List[Tuple[int, str]] = double_tokens(prompt) if echo else []
    lps: List[Optional[float]] = [
        None if i == 0 else double_logprob(prompt[:o], t) for i, (o, t) in enumerate(toks)
    ]
    text = prompt
    for _ in range(max(1, max_tokens)):
        token, lp = _greedy(text)
        toks.append((len(text), token))
        lps.append(lp)
        text += token
    shown = text if echo else text[len(prompt) :]
    start = 0 if echo else len(prompt)
    choice: Dict[str, Any] = {"index": index, "text": shown, "logprobs": None, "finish_reason": "length"}
    if logprobs is not None:
        choice["logprobs"] = {
            "tokens": [t for _, t in toks],
            "token_logprobs": lps,
            "text_offset": [o - start for o, _ in toks],
            "top_logprobs": [None if lp is None else {t: lp} for (_, t), lp in zip(toks, lps)],
        }
    return choice


class CompletionsDouble:
    """The server; a context manager (``with CompletionsDouble() as d: d.url``) that stops it on exit.

    Parameters
    ----------
    lists : bool, default=True
        Take a list of prompts in one request (vLLM); ``False``: refuse lists of more than one with HTTP 500.
    reverse_choices : bool, default=False
        Return a list's choices in reverse order (each with its right ``index``).
    model : str, default="double"
        The id that ``GET /v1/models`` lists.
    delay_s : float, default=0.0
        Seconds each request waits before it is answered (a server's latency).
    """

    def __init__(
        self, lists: bool = True, reverse_choices: bool = False, model: str = "double", delay_s: float = 0.0
    ) -> None:
        self.lists, self.reverse_choices, self.model, self.delay_s = lists, reverse_choices, model, delay_s
        self.requests = 0
        self.prompts = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, name="completions-double", daemon=True).start()

    def __enter__(self) -> "CompletionsDouble":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: Any) -> Tuple[int, Dict[str, Any]]:
        """``(status, JSON body)`` for a request (``body`` is ``None`` for a GET)."""
        with self._lock:
            self.requests += 1
        time.sleep(self.delay_s)
        if path.rstrip("/").endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if not path.rstrip("/").endswith("/completions") or not isinstance(body, dict):
            return 404, {"error": {"message": f"no route {path}"}}
        prompt = body.get("prompt", "")
        prompts = prompt if isinstance(prompt, list) else [prompt]
        if not prompts or not all(isinstance(p, str) for p in prompts):
            return 400, {"error": {"message": "prompt must be a string or a list of strings"}}
        if len(prompts) > 1 and not self.lists:
            return 500, {"error": {"message": "", "type": "internal_server_error"}}
        with self._lock:
            self.prompts += len(prompts)
        lp = body.get("logprobs")
        choices = [
            _complete(
                p,
                bool(body.get("echo")),
                None if lp is None else int(lp),
                int(body.get("max_tokens") or 16),
                i,
            )
            for i, p in enumerate(prompts)
        ]
        if self.reverse_choices:
            choices.reverse()
        return 200, {"object": "text_completion", "model": self.model, "choices": choices}


def _handler(double: CompletionsDouble) -> type:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, body: Any) -> None:
            status, out = double.answer(self.path, body)
            data = json.dumps(out).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            self._reply(None)

        def do_POST(self) -> None:  # noqa: N802
            n = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except json.JSONDecodeError:
                body = None
            self._reply(body)

    return Handler

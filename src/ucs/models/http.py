"""A backbone served over HTTP by any OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp servers, hosted
APIs). Needs the ``http`` extra (``httpx``).

The model spec is the API's base URL, with the model after ``#`` when the server serves several::

    --model http://127.0.0.1:8080/v1#SmolLM2-135M-Instruct      --model https://api.example.com/v1

* **Label likelihoods** (``score_continuations_detailed``): ``POST /completions`` with
  ``prompt = prefix + continuation``, ``echo=true``, ``logprobs=1``, ``max_tokens=1``, read by
  :func:`ucs.models.http_logprobs.continuation_logprob` (token boundaries are documented there). The ``k``
  continuations of a prefix go as a *list* of prompts in one request (``⌈k / max_prompts_per_request⌉``
  requests; the answer's choices are matched to the prompts by their ``index`` and counted), as vLLM and the
  OpenAI API take them. A server that refuses a list (llama-cpp-python's: HTTP 500) or answers it with the
  wrong choices is detected on the first list it is sent; that prefix and every later one are then scored one
  request per continuation (in flight together, at most ``max_in_flight``), each after the prefix alone
  (``warm_prefix``), as llama.cpp's numbers need; one log line says so. With the first scores the endpoint's
  echo is checked once against its own generation log-probabilities (:meth:`HttpBackbone._probe`, two requests
  for the backbone, not per prefix); an endpoint without prompt log-probabilities, or with misaligned ones,
  raises :class:`~ucs.models.http_logprobs.PromptLogprobsUnavailableError` naming the fix (``--mode
  generate``).
* **Cost counters**: :attr:`HttpBackbone.requests_sent` and :attr:`HttpBackbone.prompts_scored` (requests per
  decision = their ratio over a scoring run).
* **Generation**: ``POST /completions`` (or ``/chat/completions`` with ``api="chat"``), one request per
  prompt, in flight together; prompt ``i`` is sampled with seed ``seed + i``.
* **Embeddings**: ``POST /embeddings`` where the server offers it; otherwise a clear error.

The API key is read from the environment variable ``api_key_env`` (default ``OPENAI_API_KEY``) and sent only
in the ``Authorization`` header: :attr:`HttpBackbone.identity` (which keys the answer and embedding stores),
manifests, messages and ``repr`` hold the model id and the server's host, never the key. The key and a URL's
password are registered with :func:`ucs.utils.redact.register_secret`, so every message built from a server's
answer is masked too.

The spec is parsed in :mod:`ucs.models.http_spec` (options after ``#model?``, e.g. ``connect_timeout``).
"""

from __future__ import annotations

import base64
import logging
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

import numpy as np

from ucs.embedding.base import l2_normalize, sanitize_text, sanitize_texts
from ucs.lm.base import ContinuationScores, ReducedScoresMixin, check_generation_args
from ucs.lm.prefix_tree import move_trailing_spaces
from ucs.models.http_client import EndpointError, HttpTransport, host_of
from ucs.models.http_logprobs import (
    GENERATE_FIX,
    MisalignedLogprobsError,
    PromptLogprobsUnavailableError,
    continuation_logprob,
)
from ucs.models.http_spec import (
    CONNECT_TIMEOUT_ENV,
    DEFAULT_CONNECT_TIMEOUT,
    is_endpoint,
    parse_endpoint_spec,
)
from ucs.utils.redact import redact, register_secret, register_secret_env

__all__ = [
    "HttpBackbone",
    "parse_endpoint",
    "is_endpoint",
    "APIS",
    "DEFAULT_PROMPTS_PER_REQUEST",
    "WrongChoicesError",
]

APIS = ("completions", "chat")
#: Probe attempts (prefixes whose greedy next token is visible text) before scoring goes on unverified.
_PROBE_ATTEMPTS = 3
#: Largest |echoed − generated| log-probability of one token accepted as the same number (nats).
_PROBE_TOL = 1e-2
_EMBED_CHUNK = 64
#: Prompts in one scoring request unless ``max_prompts_per_request`` or the spec's ``#model?batch=`` says.
DEFAULT_PROMPTS_PER_REQUEST = 128
#: Statuses with which a server refuses a list of prompts (llama-cpp-python's server: 500, from an assertion):
#: answered at once, not retried, and the backbone falls back to one request per prompt.
_LIST_REFUSALS = frozenset({400, 413, 422, 500, 501})
_LOG = logging.getLogger(__name__)


def parse_endpoint(spec: str) -> Tuple[str, Optional[str]]:
    """``"http://h:8080/v1#my-model"`` → ``("http://h:8080/v1", "my-model")``; no ``#`` → model ``None``
    (:func:`ucs.models.http_spec.parse_endpoint_spec` also returns the options after ``#model?``)."""
    ep = parse_endpoint_spec(spec)
    return ep.base_url, ep.model


def _connect_timeout(given: Optional[float], from_url: Optional[float]) -> float:
    """The keyword, else the spec's ``connect_timeout``, else :data:`CONNECT_TIMEOUT_ENV`, else 5 s."""
    if given is not None:
        return float(given)
    if from_url is not None:
        return from_url
    env = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not env:
        return DEFAULT_CONNECT_TIMEOUT
    try:
        value = float(env)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(
            f"{CONNECT_TIMEOUT_ENV}={env!r} must be a number of seconds > 0 (or unset for "
            f"{DEFAULT_CONNECT_TIMEOUT:g} s)"
        )
    return value


def _register_url_credentials(base: str) -> None:
    """Mask a URL's password, and the ``Basic`` header made of it, wherever they would be shown."""
    parts = urlsplit(base)
    if parts.password:
        user, password = unquote(parts.username or ""), unquote(parts.password)
        register_secret(password)
        register_secret(base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii"))


class HttpBackbone(ReducedScoresMixin):
    """A model behind an OpenAI-compatible HTTP API; implements ``Embedder`` and ``LanguageModel``.

    Parameters
    ----------
    base_url : str
        The API root, e.g. ``http://127.0.0.1:8080/v1`` (a ``#model`` suffix is read as ``model``).
    model : str, optional
        Model id sent with every request; default: the only one ``GET /models`` lists.
    name : str, optional
        Ignored beyond compatibility with :func:`ucs.models.load_backbone` (the identity uses the model id).
    api_key_env : str, default="OPENAI_API_KEY"
        Environment variable holding the API key (none needed for local servers).
    max_in_flight : int, default=4
        Requests on the wire at once.
    timeout : float, optional
        Seconds per request attempt (reading a slow generation included): the keyword, else the spec's
        ``#model?timeout=``, else 600.
    connect_timeout : float, optional
        Seconds to wait for a connection to the server: the keyword, else the spec's
        ``#model?connect_timeout=``, else the environment variable ``UCS_HTTP_CONNECT_TIMEOUT``, else 5.
    max_retries : int, default=5
        Further attempts after HTTP 429/5xx, connection errors and timeouts (exponential backoff). Until the
        server has answered once, a failed connection is retried only once (nothing listening fails fast).
    backoff : float, default=0.5
        First wait of the backoff, in seconds (doubled per attempt, capped at 30 s).
    context_length : int, optional
        The server's context in tokens. Only when given does the prompt budget apply; :attr:`count_tokens`
        then uses the server's tokenizer route (llama-cpp-python's ``/extras/tokenize``, vLLM's
        ``/tokenize``).
    normalize : bool, default=False
        ℓ2-normalise embeddings.
    api : {"completions", "chat"}, default="completions"
        Route used by :meth:`generate`; scoring always uses ``/completions``.
    seed : int, default=0
        Default sampling seed of :meth:`generate`.
    warm_prefix : bool, optional
        Before the continuations of a prefix, send the prefix alone (one generated token, no echo): a server
        that reuses the previous prompt's cache (llama.cpp's servers) then evaluates the prefix once and each
        continuation on top of it. That is the in-process engine's split of the work, and llama.cpp's numbers
        depend on that split (measured: up to 0.44 nats between scoring ``prefix + continuation`` in one batch
        and in two). Default (``None``): on, except for a server that takes the continuations as one list (it
        evaluates them together, so the warm-up would only add a request per prefix); ``True``/``False`` force
        it.
    max_prompts_per_request : int, optional
        Most prompts (``prefix + continuation``) in one scoring request: the keyword, else the spec's
        ``#model?batch=``, else :data:`DEFAULT_PROMPTS_PER_REQUEST`. ``1`` sends one request per continuation.

    Notes
    -----
    Scoring ``k`` continuations: ``⌈k / max_prompts_per_request⌉`` requests on a server that takes lists of
    prompts; otherwise ``1 + k`` (the warm-up, then ``k`` in ``⌈k / max_in_flight⌉`` round trips). The first
    scored prefix adds up to two probe requests, and a refused first list one more. Memory: O(response).
    """

    engine = "http"

    def __init__(
        self,
        base_url: str,
        model: Optional[str] = None,
        name: Optional[str] = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_in_flight: int = 4,
        timeout: Optional[float] = None,
        max_retries: int = 5,
        backoff: float = 0.5,
        context_length: Optional[int] = None,
        normalize: bool = False,
        api: str = "completions",
        seed: int = 0,
        warm_prefix: Optional[bool] = None,
        connect_timeout: Optional[float] = None,
        max_prompts_per_request: Optional[int] = None,
    ) -> None:
        spec = parse_endpoint_spec(base_url)
        base, from_url = spec.base_url, spec.model
        timeout = float(spec.options.get("timeout", 600.0)) if timeout is None else timeout
        connect_timeout = _connect_timeout(connect_timeout, spec.options.get("connect_timeout"))
        if max_prompts_per_request is None:
            max_prompts_per_request = int(spec.options.get("batch", DEFAULT_PROMPTS_PER_REQUEST))
        for pname, val in (
            ("max_in_flight", max_in_flight),
            ("max_retries", max_retries + 1),
            ("max_prompts_per_request", max_prompts_per_request),
        ):
            if not isinstance(val, (int, np.integer)) or val < 1:
                raise ValueError(f"{pname} must be a positive integer, got {val!r}")
        if context_length is not None and (
            not isinstance(context_length, (int, np.integer)) or context_length < 1
        ):
            raise ValueError(f"context_length must be a positive integer or None, got {context_length!r}")
        if api not in APIS:
            raise ValueError(f"api must be one of {APIS}, got {api!r}")
        if not timeout > 0 or not connect_timeout > 0 or not backoff >= 0:
            raise ValueError(
                f"timeout and connect_timeout must be > 0 and backoff >= 0, got {timeout!r}, "
                f"{connect_timeout!r} and {backoff!r}"
            )
        self.base_url = base
        self._model = model or from_url
        self.api_key_env = api_key_env
        self.context_length = None if context_length is None else int(context_length)
        self.normalize = bool(normalize)
        self.api = api
        self.seed = int(seed)
        self.warm_prefix = None if warm_prefix is None else bool(warm_prefix)
        self.max_prompts_per_request = int(max_prompts_per_request)
        #: Whether the server takes a list of prompts in one request: None until a list has been sent.
        self.takes_lists: Optional[bool] = None
        #: Prompts scored (calls of :meth:`score_continuations_detailed` with at least one continuation).
        self.prompts_scored = 0
        api_key = os.environ.get(api_key_env) or None
        register_secret_env(api_key_env)
        _register_url_credentials(base)
        self._transport = HttpTransport(
            base,
            api_key,
            int(max_in_flight),
            float(timeout),
            int(max_retries),
            float(backoff),
            connect_timeout=float(connect_timeout),
        )
        self._probe_left = _PROBE_ATTEMPTS
        self._dim: Optional[int] = None
        self._tokenize_route: Optional[Tuple[str, str]] = None

    @property
    def max_in_flight(self) -> int:
        return self._transport.max_in_flight

    @property
    def requests_sent(self) -> int:
        """Requests sent to the server so far (every attempt, retries included; the tokenizer route aside)."""
        return self._transport.requests_sent

    @property
    def where(self) -> str:
        """The endpoint in messages: ``host:port`` and the model id."""
        return f"the endpoint {host_of(self.base_url)} (model {self._model or '?'})"

    # ------------------------------------------------------------------ loading and identity
    def load(self) -> "HttpBackbone":
        """Resolve the model id from ``GET /models`` when none was given (one request); returns ``self``."""
        if self._model is None:
            listed = [str(m.get("id")) for m in self._transport.get("models").get("data", []) if m.get("id")]
            if len(listed) != 1:
                shown = redact(self.base_url)
                raise ValueError(
                    redact(
                        f"the endpoint {shown} serves {len(listed)} models {listed[:10]}: "
                        f"name one as --model {shown}#<model>"
                    )
                )
            self._model = listed[0]
        return self

    @property
    def model(self) -> str:
        return self.load()._model  # type: ignore[return-value]

    @property
    def identity(self) -> Dict[str, Any]:
        """What keys this model's answers and embeddings: model id, server host, engine and ℓ2 (never the
        key)."""
        return {
            "model": self.model,
            "host": host_of(self.base_url),
            "engine": self.engine,
            "l2": self.normalize,
        }

    def close(self) -> None:
        """Close the connections (a later call opens them again)."""
        self._transport.close()

    def __repr__(self) -> str:
        return (
            f"HttpBackbone({host_of(self.base_url)!r}, model={self._model!r}, "
            f"max_in_flight={self.max_in_flight})"
        )

    # ------------------------------------------------------------------ tokens
    @property
    def count_tokens(self):
        """``text -> number of tokens`` through the server's tokenizer when ``context_length`` is set, else
        ``None`` (the prompt budget is then off, as for any language model that cannot count)."""
        return None if self.context_length is None else self._count_tokens

    def _count_tokens(self, text: str) -> int:
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        routes = (
            [self._tokenize_route]
            if self._tokenize_route
            else [("extras/tokenize", "input"), ("tokenize", "prompt")]
        )
        for path, field in routes:
            transport = HttpTransport(
                root, None, 1, self._transport.timeout, 0, connect_timeout=self._transport.connect_timeout
            )
            try:
                out = transport.post_many(path, [{"model": self.model, field: sanitize_text(text)}])[0]
            except EndpointError as exc:
                if exc.status in (404, 405, 422):
                    continue
                raise
            finally:
                transport.close()
            self._tokenize_route = (path, field)
            return int(out["count"]) if "count" in out else len(out["tokens"])
        raise ValueError(
            f"{self.where} offers no tokenizer route (/extras/tokenize or /tokenize), which the prompt "
            "budget needs: leave context_length unset"
        )

    # ------------------------------------------------------------------ scoring
    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]) -> ContinuationScores:
        """Log-probability of each continuation given ``prefix`` (natural log), with the token counts.

        Trailing spaces of the prefix move onto the continuations, as in the in-process engines.
        """
        conts = sanitize_texts(continuations)
        if not conts:
            return ContinuationScores(np.zeros(0), np.zeros(0, dtype=np.int64))
        prefix, conts = move_trailing_spaces(sanitize_text(prefix), conts)
        if not prefix:
            raise ValueError(
                "prefix must not be empty: an endpoint gives the first token of a text no log-probability"
            )
        if any(not c for c in conts):
            raise ValueError("continuations must not be empty")
        if self.warm_prefix or (self.warm_prefix is None and self.takes_lists is not True):
            self._post(
                "completions", [{"model": self.model, "prompt": prefix, "max_tokens": 1, "temperature": 0.0}]
            )
        logp, n_tok = self._score(prefix, conts)
        self._probe(prefix)  # after the scores, so its requests never split this prefix's evaluation
        self.prompts_scored += 1
        return ContinuationScores(
            logprob=np.asarray(logp, dtype=np.float64), n_tokens=np.asarray(n_tok, np.int64)
        )

    def _score(self, prefix: str, conts: Sequence[str]) -> Tuple[List[float], List[int]]:
        prompts = [prefix + c for c in conts]
        pairs = [
            continuation_logprob(choice, p, len(prefix), self.where)
            for choice, p in zip(self._echo(prompts), prompts)
        ]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _echo_payload(self, prompt: "str | List[str]") -> Dict[str, Any]:
        return {
            "model": self.model,
            "prompt": prompt,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 1,
            "temperature": 0.0,
        }

    def _echo(self, prompts: List[str]) -> List[Dict[str, Any]]:
        """One echoed choice per prompt, in the prompts' order: lists of at most ``max_prompts_per_request``
        prompts where the server takes them, else one request per prompt. A single prompt goes alone (a list
        of one proves nothing: llama-cpp-python's server takes that and refuses longer ones)."""
        size = self.max_prompts_per_request
        if len(prompts) < 2 or size < 2 or self.takes_lists is False:
            answers = self._post("completions", [self._echo_payload(p) for p in prompts], scoring=True)
            return [_choice(a, self.where) for a in answers]
        chunks = _split(prompts, size)
        if self.takes_lists is None:
            first, refusal = self._first_list(chunks[0])
            if first is None:
                return self._echo_one_each_from_now_on(prompts, refusal)
            return first + self._echo_lists(chunks[1:])
        return self._echo_lists(chunks)

    def _echo_lists(self, chunks: List[List[str]]) -> List[Dict[str, Any]]:
        answers = self._post("completions", [self._echo_payload(c) for c in chunks], scoring=True)
        return [
            choice for c, a in zip(chunks, answers) for choice in _choices_by_index(a, len(c), self.where)
        ]

    def _first_list(self, chunk: List[str]) -> Tuple[Optional[List[Dict[str, Any]]], str]:
        """``(choices, "")`` of the first list sent, or ``(None, why)`` when the server refuses lists (a
        status of :data:`_LIST_REFUSALS`, not retried, or choices that are not one per prompt); any other
        error is raised as scoring errors are."""
        try:
            answer = self._post(
                "completions", [self._echo_payload(chunk)], scoring=True, final=_LIST_REFUSALS
            )[0]
            choices = _choices_by_index(answer, len(chunk), self.where)
        except (_ListRefused, WrongChoicesError) as exc:
            return None, str(exc)
        self.takes_lists = True
        return choices, ""

    def _echo_one_each_from_now_on(self, prompts: List[str], refusal: str) -> List[Dict[str, Any]]:
        """The fallback: one request per prompt; remembered (and logged once) when those requests succeed."""
        self.takes_lists = False
        try:
            choices = self._echo(prompts)
        except BaseException:
            self.takes_lists = None  # nothing learnt: this server fails single prompts too
            raise
        _LOG.info(
            redact(
                f"{self.where} does not take a list of prompts in one request "
                f"({_short(refusal)}); scoring one request per label continuation from now on"
            )
        )
        return choices

    def _probe(self, prefix: str) -> None:
        """Check once that echoed log-probabilities are the ones the server generates with: the greedy next
        token ``g`` of ``prefix`` and its log-probability come from a plain completion, then ``prefix + g`` is
        scored through the echo; the two numbers must agree. (llama-cpp-python's server pairs every echoed
        token with the distribution *after* it when the prompt does not start with the model's BOS token:
        wrong numbers that look plausible.) Two requests, on at most :data:`_PROBE_ATTEMPTS` prefixes whose
        next token is visible; a failed check raises before the scores of that prefix are returned."""
        if self._probe_left <= 0:
            return
        self._probe_left -= 1
        payload = {"model": self.model, "prompt": prefix, "max_tokens": 1, "temperature": 0.0, "logprobs": 1}
        choice = _choice(self._post("completions", [payload], scoring=True)[0], self.where)
        text, lps = choice.get("text") or "", (choice.get("logprobs") or {}).get("token_logprobs") or []
        if not text or len(lps) != 1 or lps[0] is None:
            return
        (echoed,), (n,) = self._score(prefix, [text])
        if n != 1:
            return
        if abs(echoed - float(lps[0])) > _PROBE_TOL:
            raise MisalignedLogprobsError(
                f"{self.where} echoes prompt log-probabilities that disagree with its own generation "
                f"({echoed:.3f} vs "
                f"{float(lps[0]):.3f} nats for the same token; llama-cpp-python's server does this when the "
                "prompt "
                f"does not start with the model's BOS token); {GENERATE_FIX}"
            )
        self._probe_left = 0

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int = 16,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: Optional[Sequence[str]] = None,
        seed: Optional[int] = None,
    ) -> List[str]:
        """Complete each prompt (greedy when ``temperature == 0``); the new text only, one string per prompt.

        The server's other sampling defaults (top-k, repetition penalty) apply; llama-cpp-python's, for one,
        are not the in-process engine's, so sampled and even greedy answers may differ from it.
        """
        check_generation_args(max_new_tokens, temperature, top_p)
        prompts = sanitize_texts(prompts)
        base = self.seed if seed is None else int(seed)
        common: Dict[str, Any] = {
            "model": self.model,
            "max_tokens": int(max_new_tokens),
            "temperature": float(temperature),
            "top_p": float(top_p),
        }
        if stop:
            common["stop"] = list(stop)
        if self.api == "chat":
            payloads = [
                {**common, "messages": [{"role": "user", "content": p}], "seed": base + i}
                for i, p in enumerate(prompts)
            ]
            answers = self._post("chat/completions", payloads)
            return [str((_choice(a, self.where).get("message") or {}).get("content") or "") for a in answers]
        payloads = [{**common, "prompt": p, "seed": base + i} for i, p in enumerate(prompts)]
        return [str(_choice(a, self.where).get("text") or "") for a in self._post("completions", payloads)]

    # ------------------------------------------------------------------ embeddings
    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``POST /embeddings`` in chunks of 64 texts; shape ``(len(texts), dim)`` float32."""
        texts = sanitize_texts(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        chunks = [texts[s : s + _EMBED_CHUNK] for s in range(0, len(texts), _EMBED_CHUNK)]
        try:
            answers = self._transport.post_many(
                "embeddings", [{"model": self.model, "input": c} for c in chunks]
            )
        except EndpointError as exc:
            if exc.status in (400, 404, 405, 422, 500, 501):
                raise ValueError(
                    f"{self.where} does not serve embeddings (/embeddings: HTTP {exc.status}), which the "
                    "pool "
                    "embeddings need: set --retrieval to a sentence-transformer with --cluster-space "
                    "retrieval, or "
                    "start the server with embeddings on"
                ) from None
            raise
        rows = [
            np.asarray(d["embedding"], dtype=np.float32)
            for a in answers
            for d in sorted(a.get("data", []), key=lambda d: d.get("index", 0))
        ]
        out = np.stack(rows)
        if out.shape[0] != len(texts):
            raise ValueError(f"{self.where} returned {out.shape[0]} embeddings for {len(texts)} texts")
        self._dim = out.shape[1]
        return l2_normalize(out) if self.normalize else out

    # ------------------------------------------------------------------ helpers
    def _post(
        self, path: str, payloads: List[Dict[str, Any]], scoring: bool = False, final: frozenset = frozenset()
    ) -> List[Dict[str, Any]]:
        try:
            return self._transport.post_many(path, payloads, final=final)
        except EndpointError as exc:
            if exc.status in final:
                raise _ListRefused(str(exc)) from None
            if scoring and 400 <= exc.status < 500 and exc.status != 429:
                raise PromptLogprobsUnavailableError(
                    f"{self.where} refused a prompt log-probability request ({exc}); {GENERATE_FIX}"
                ) from None
            raise


class WrongChoicesError(ValueError):
    """A server answered a list of prompts with choices that are not one per prompt (count or ``index``)."""


class _ListRefused(Exception):
    """A server answered a list of prompts with one of :data:`_LIST_REFUSALS`."""


def _split(items: List[str], size: int) -> List[List[str]]:
    """``items`` in ``⌈len / size⌉`` chunks of near-equal length (the longer first), each at most ``size``."""
    n = math.ceil(len(items) / size)
    step, extra = divmod(len(items), n)
    bounds = [0]
    for i in range(n):
        bounds.append(bounds[-1] + step + (1 if i < extra else 0))
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


def _choices_by_index(answer: Dict[str, Any], n: int, where: str) -> List[Dict[str, Any]]:
    """The ``n`` choices of a list request, ordered by their ``index`` (never by position alone): exactly one
    per prompt, indices ``0 … n-1``, else :class:`WrongChoicesError`."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise WrongChoicesError(f"{where} answered a list of {n} prompts without a list of choices")
    by_index = {c.get("index"): c for c in choices}
    if len(choices) != n or len(by_index) != n or set(by_index) != set(range(n)):
        seen = sorted(by_index, key=str)[:10]
        raise WrongChoicesError(
            f"{where} answered a list of {n} prompts with {len(choices)} choices "
            f"(indices {seen}), not one per prompt"
        )
    return [by_index[i] for i in range(n)]


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"


def _choice(answer: Dict[str, Any], where: str) -> Dict[str, Any]:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ValueError(f"{where} answered without choices: {redact(str(answer))[:200]}")
    return choices[0]

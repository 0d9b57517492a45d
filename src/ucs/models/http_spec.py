"""The model spec of a server, ``http(s)://host:port/v1#model?option=value``: the one place it is parsed.

Everything after ``#`` (the URL's fragment) stays on this side and is never sent to the server: the model
id, then, after ``?``, options of the client (:data:`URL_OPTIONS`)::

    http://127.0.0.1:8080/v1#SmolLM2-135M-Instruct?connect_timeout=2
    http://127.0.0.1:8080/v1#?connect_timeout=2          (the model from GET /v1/models)
    http://127.0.0.1:8000/v1#Qwen/Qwen2.5-1.5B?batch=64  (at most 64 prompts in one scoring request)

A malformed spec — a scheme other than http(s), no host, a port that is not a number from 1 to 65535, a
query string on the API root, an unknown option — raises ``ValueError`` naming ``--model`` and the fix; the
spec is shown through :func:`ucs.utils.redact.redact`, so a password in it is not. No ``httpx`` needed (the
CLI names a bad URL without the ``http`` extra).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional
from urllib.parse import parse_qsl, urlsplit

from ucs.utils.redact import redact

__all__ = [
    "Endpoint",
    "URL_OPTIONS",
    "CONNECT_TIMEOUT_ENV",
    "DEFAULT_CONNECT_TIMEOUT",
    "looks_like_url",
    "is_endpoint",
    "parse_endpoint_spec",
    "public_spec",
]

#: Seconds to wait for a TCP connection (and TLS) to the server, unless the spec, the keyword or this
#: environment variable says otherwise; the read timeout (``timeout``) is separate and long.
DEFAULT_CONNECT_TIMEOUT = 5.0
CONNECT_TIMEOUT_ENV = "UCS_HTTP_CONNECT_TIMEOUT"
#: Options a spec may carry after ``#model?``: seconds (> 0), and ``batch``, the most prompts sent in one
#: scoring request (an integer >= 1; the backbone's ``max_prompts_per_request``).
URL_OPTIONS = ("connect_timeout", "timeout", "batch")
_COUNT_OPTIONS = ("batch",)
_FORM = "write it as http(s)://host:port/v1#model-name"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Endpoint:
    """A parsed spec: the API root (credentials included, for the requests), the model id, the options."""

    base_url: str
    model: Optional[str]
    options: Dict[str, float] = field(default_factory=dict)


def is_endpoint(spec: object) -> bool:
    """True for a model spec that names a server (``http://…`` or ``https://…``)."""
    return isinstance(spec, str) and spec.strip().lower().startswith(("http://", "https://"))


def looks_like_url(spec: object) -> bool:
    """True for anything written like a URL (``scheme://…``, ``http:…``): it is parsed as one, so a typo in
    it gets the URL's message instead of "unknown backbone". (A Windows path ``C:\\…`` is not a URL.)"""
    if not isinstance(spec, str):
        return False
    s = spec.strip()
    return "://" in s.split("#")[0] or (bool(_SCHEME.match(s)) and s.lower().startswith(("http:", "https:")))


def parse_endpoint_spec(spec: str) -> Endpoint:
    """``"http://h:8080/v1#m?connect_timeout=2"`` → ``Endpoint("http://h:8080/v1", "m",
    {"connect_timeout": 2.0})``.

    Raises ``ValueError`` (naming ``--model`` and the fix) for a malformed spec.
    """
    spec = str(spec).strip()
    base, _, fragment = spec.partition("#")
    model, _, query = fragment.partition("?")
    shown = redact(spec)
    try:
        parts = urlsplit(base)
    except ValueError as exc:  # e.g. an unclosed '[' of an IPv6 host
        raise ValueError(f"--model {shown!r} is not a URL ({exc}); {_FORM}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not base.lower().startswith(scheme + "://"):
        raise ValueError(f"--model {shown!r}: an endpoint URL starts with http:// or https://; {_FORM}")
    if not parts.hostname:
        raise ValueError(f"--model {shown!r} names no host; {_FORM}")
    _check_port(parts, shown)
    if re.search(r"[\s<>\"{}|\\^`]", parts.hostname):
        raise ValueError(
            f"--model {shown!r}: the host {redact(parts.hostname)!r} is not a host name; {_FORM}"
        )
    if parts.query:
        raise ValueError(
            f"--model {shown!r}: the endpoint URL takes no query string; put the model after "
            f"'#' and client options after it: #model?connect_timeout=2"
        )
    return Endpoint(base.rstrip("/"), model.strip() or None, _options(query, shown))


def _check_port(parts: Any, shown: str) -> None:
    raw = parts.netloc.rpartition("@")[2].rpartition("]")[2]
    raw = raw.rpartition(":")[2] if ":" in raw else ""
    try:
        port = parts.port
    except ValueError:
        port = -1
    if raw and (port is None or not 1 <= port <= 65535):
        raise ValueError(
            f"--model {shown!r}: the port must be a number from 1 to 65535, got {raw!r}; {_FORM}"
        )


def _options(query: str, shown: str) -> Dict[str, float]:
    """The ``?name=value&…`` after the model: seconds, each > 0, and counts (``batch``), each >= 1."""
    if not query:
        return {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        pairs = [("", query)]
    out: Dict[str, float] = {}
    for name, value in pairs:
        if name not in URL_OPTIONS:
            raise ValueError(
                f"--model {shown!r}: unknown option {name!r} after '#model?'; the options "
                f"are connect_timeout, timeout (seconds) and batch (prompts per request), "
                f"e.g. #model?connect_timeout=2"
            )
        if name in _COUNT_OPTIONS:
            out[name] = _count(name, value, shown)
            continue
        try:
            seconds = float(value)
        except ValueError:
            seconds = float("nan")
        if not seconds > 0 or seconds == float("inf"):
            raise ValueError(
                f"--model {shown!r}: {name} must be a number of seconds > 0, "
                f"got {value!r}; e.g. #model?{name}=2"
            )
        out[name] = seconds
    return out


def _count(name: str, value: str, shown: str) -> int:
    """An option that counts (``batch``): a whole number >= 1."""
    if not re.fullmatch(r"\s*[0-9]+\s*", value) or int(value) < 1:
        raise ValueError(
            f"--model {shown!r}: {name} must be a whole number >= 1, got {value!r}; e.g. #model?{name}=64"
        )
    return int(value)


def public_spec(spec: Any, keep_options: bool = True) -> Any:
    """What of a model spec may be written down: credentials masked (:func:`~ucs.utils.redact.redact`'s
    patterns: the URL's user-info and the like; the same spec always gives the same text) and, with
    ``keep_options=False``, the client options after ``#model?`` dropped (they change no answer, so a resume
    key leaves them out). Anything not an endpoint spec comes back as it is."""
    if not is_endpoint(spec):
        return spec
    shown = redact(spec, registered=False)
    if keep_options:
        return shown
    base, hash_, fragment = shown.partition("#")
    model = fragment.partition("?")[0]
    return base + (hash_ + model if model else "")

"""The one place that masks secrets in text shown to a person or written to a file.

:func:`redact` replaces, with ``***``:

* every secret registered with :func:`register_secret` (the API key an HTTP client was given, the
  password of a model URL), and the current value of every environment variable registered with
  :func:`register_secret_env` (``OPENAI_API_KEY`` from the start), whatever their shape;
* the value of an ``Authorization`` / ``Proxy-Authorization`` header (``Authorization: Bearer x`` →
  ``Authorization: ***``; also in JSON or a Python dict's repr) and the token after ``Bearer`` or
  ``Basic``;
* keys shaped like ``sk-…`` (``sk-``, ``sk-proj-``, ``sk-ant-…``: ``sk-`` and 16 or more key characters);
* the user-info of a URL (``https://user:pw@host/v1`` → ``https://***@host/v1``);
* the value of a query parameter named like a credential (``?api_key=…``, ``&token=…``, ``&password=…``).

It is used on every message, log line and file that can carry a URL, a header or a server's answer: the
HTTP client's errors, the model specs written into configurations and manifests, and the CLI's error
guard. Registered secrets shorter than :data:`MIN_SECRET_LENGTH` characters are ignored (masking every
``"pw"`` in a message would garble it); such a value is still masked where it appears as URL user-info or
in a header.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, List, Set

__all__ = ["redact", "redact_obj", "register_secret", "register_secret_env", "MASK", "MIN_SECRET_LENGTH"]

MASK = "***"
#: Registered secrets shorter than this are not masked by value.
MIN_SECRET_LENGTH = 6

_LOCK = threading.Lock()
_SECRETS: Set[str] = set()
_ENV_NAMES: Set[str] = {"OPENAI_API_KEY"}

_HEADER = re.compile(r"""(?ix)
    (\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?)   # the header's name, separator, opening quote
    ([^"'\r\n,}]+)                                       # its value, up to a quote, line end, comma, brace
""")
#: ``Bearer <token>`` (8 or more token characters, so "the bearer of" stays) and ``Basic <base64>`` (a digit,
#: ``+``, ``/`` or ``=`` in it, so "basic settings" stays).
_SCHEME_TOKEN = re.compile(
    r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b((?-i:Basic))(\s+)(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{6,}={0,2}"
)
_SK_KEY = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s#?]+@")  # up to the authority's last '@'
_QUERY = re.compile(r"(?i)([?&#](?:api[_-]?key|access[_-]?token|token|key|password|passwd|secret)=)[^&#\s]+")


def register_secret(value: Any) -> None:
    """Mask ``value`` wherever it appears from now on (ignored when empty or shorter than
    :data:`MIN_SECRET_LENGTH`)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_LENGTH:
        with _LOCK:
            _SECRETS.add(value.strip())


def register_secret_env(name: str) -> None:
    """Mask the value the environment variable ``name`` holds at the time of each :func:`redact` call."""
    if name:
        with _LOCK:
            _ENV_NAMES.add(str(name))


def _known() -> List[str]:
    """The secrets to mask by value, longest first (so a secret containing another is masked whole)."""
    with _LOCK:
        found = set(_SECRETS)
        names = list(_ENV_NAMES)
    for name in names:
        value = (os.environ.get(name) or "").strip()
        if len(value) >= MIN_SECRET_LENGTH:
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact(text: Any, registered: bool = True) -> str:
    """``text`` (made a string) with every secret it shows replaced by ``***`` (see the module's list).

    ``registered=False`` applies the patterns only, not the registered secrets and environment values: what is
    masked then depends on ``text`` alone, as a resume key or a model's identity written to disk must (an
    ``OPENAI_API_KEY`` of ``"ollama"`` must not change the key of a run on a model named ``ollama-…``).
    Idempotent: ``redact(redact(t)) == redact(t)``.
    """
    out = text if isinstance(text, str) else str(text)
    for secret in _known() if registered else ():
        out = out.replace(secret, MASK)
    out = _USERINFO.sub(rf"\1{MASK}@", out)
    out = _HEADER.sub(lambda m: m.group(1) + MASK, out)
    out = _SCHEME_TOKEN.sub(lambda m: (m.group(1) or m.group(3)) + (m.group(2) or m.group(4)) + MASK, out)
    out = _SK_KEY.sub(MASK, out)
    return _QUERY.sub(rf"\1{MASK}", out)


def redact_obj(obj: Any, registered: bool = True) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with every string passed through
    :func:`redact`; other values are returned as they are."""
    if isinstance(obj, str):
        return redact(obj, registered)
    if isinstance(obj, dict):
        return {k: redact_obj(v, registered) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v, registered) for v in obj)
    return obj

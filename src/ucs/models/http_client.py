"""The transport of :class:`~ucs.models.http.HttpBackbone`: JSON requests to an OpenAI-compatible server,
bounded in flight, retried with exponential backoff. Needs the ``http`` extra (``httpx``).

One :class:`HttpTransport` owns an event loop on a daemon thread and one ``httpx.AsyncClient`` (a connection
pool); the synchronous :meth:`HttpTransport.post_many` submits a batch of requests to that loop and waits, so
callers never see ``async`` and it works inside a running loop (a notebook) too. At most ``max_in_flight``
requests are on the wire at once (an ``asyncio.Semaphore``).

Retried (up to ``max_retries`` times, waiting ``backoff · 2^attempt`` seconds, or the server's ``Retry-After``
when it sends one, capped at ``max_backoff``): HTTP 429 and 5xx, connection errors and timeouts. Until the
server has answered once, a connection that cannot be made (refused, unknown host, ``connect_timeout`` passed)
is retried only :data:`FIRST_CONNECT_RETRIES` times: nothing listening fails in about ``backoff`` seconds
instead of the whole backoff (about 16 s), while a server that restarts in the middle of a run still gets
every retry. Other 4xx statuses are the caller's mistake and raise :class:`EndpointError` at once.

The API key goes into the ``Authorization`` header only and is registered with
:func:`ucs.utils.redact.register_secret`; every message (and debug log line) of this module passes through
:func:`~ucs.utils.redact.redact`, so neither the key nor a URL's password shows, even when a server repeats
the request's headers in its error answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from ucs.utils.redact import MASK, redact, register_secret

__all__ = [
    "HttpTransport",
    "EndpointError",
    "EndpointUnreachableError",
    "RETRY_STATUSES",
    "FIRST_CONNECT_RETRIES",
]

#: Statuses worth another try: rate limiting and server-side failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 522, 524})
#: Retries of a failed connection before the server has answered once.
FIRST_CONNECT_RETRIES = 1
_LOG = logging.getLogger(__name__)


class EndpointError(ValueError):
    """The server answered a request with an error status (after the retries, for 429 and 5xx).

    ``status`` is the HTTP status; the message holds the server's own explanation (shortened).
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(redact(message))
        self.status = status


class EndpointUnreachableError(ConnectionError):
    """No answer from the server (refused connection, timeouts) after every retry."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def host_of(base_url: str) -> str:
    """``"http://user:pw@h:8080/v1"`` → ``"h:8080"``: the host (and port) without credentials."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


class HttpTransport:
    """Bounded, retried JSON requests to ``base_url`` (``…/v1``), synchronous from the outside.

    Parameters
    ----------
    base_url : str
        Root of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8080/v1``; request paths are relative to
        it.
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>``; never shown. A user and password in ``base_url``
        (``http://user:pw@host/v1``) are sent as HTTP basic authentication instead (they win over the key) and
        are taken out of the URL, so no request URL — and no log line of ``httpx`` — holds them.
    max_in_flight : int
        Requests on the wire at once.
    timeout : float
        Seconds per request attempt (read, write and waiting for a pooled connection).
    max_retries : int
        Further attempts after a retryable failure (a failed connection before the first answer:
        :data:`FIRST_CONNECT_RETRIES` at most).
    backoff, max_backoff : float
        First wait and the cap of the exponential backoff, in seconds.
    connect_timeout : float
        Seconds to wait for a connection (TCP and TLS) to the server.
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        max_in_flight: int = 4,
        timeout: float = 600.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.base_url, self.__basic = _split_credentials(base_url.rstrip("/"))
        self.connect_timeout = float(connect_timeout)
        self._answered = False
        self.max_in_flight = int(max_in_flight)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.__key = api_key
        register_secret(api_key)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._client: Optional[httpx.AsyncClient] = None
        self._sem: Optional[asyncio.Semaphore] = None
        self._lock = threading.Lock()
        #: Requests sent (every attempt, retries included), for the cost counters of a backbone.
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"HttpTransport({host_of(self.base_url)!r}, max_in_flight={self.max_in_flight})"

    # ------------------------------------------------------------------ loop
    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="ucs-http", daemon=True)
                thread.start()
                headers = {"Authorization": f"Bearer {self.__key}"} if self.__key else {}
                self._client = asyncio.run_coroutine_threadsafe(
                    _make_client(headers, self.timeout, self.connect_timeout, self.__basic), loop
                ).result()
                self._sem = asyncio.run_coroutine_threadsafe(
                    _make_semaphore(self.max_in_flight), loop
                ).result()
                self._loop = loop
                self._finalizer = weakref.finalize(self, _shutdown, loop, self._client, thread)
            return self._loop

    def close(self) -> None:
        """Close the connection pool and stop the loop thread (a later request starts them again)."""
        with self._lock:
            if self._loop is not None:
                self._finalizer()
            self._loop = self._client = self._sem = None

    # ------------------------------------------------------------------ requests
    def get(self, path: str) -> Dict[str, Any]:
        """``GET base_url/path`` → the decoded JSON body."""
        loop = self._start()
        return asyncio.run_coroutine_threadsafe(self._request("GET", path, None), loop).result()

    def post_many(
        self, path: str, payloads: Sequence[Dict[str, Any]], final: frozenset = frozenset()
    ) -> List[Dict[str, Any]]:
        """``POST base_url/path`` once per payload, ``max_in_flight`` at a time; the decoded bodies in order.

        The first request that fails for good cancels the others and its error is raised. Statuses in
        ``final`` are raised at once instead of retried (a server's answer to a request form it may not take).
        """
        if not payloads:
            return []
        loop = self._start()
        return asyncio.run_coroutine_threadsafe(self._gather(path, list(payloads), final), loop).result()

    async def _gather(
        self, path: str, payloads: List[Dict[str, Any]], final: frozenset = frozenset()
    ) -> List[Dict[str, Any]]:
        tasks = [asyncio.ensure_future(self._request("POST", path, p, final)) for p in payloads]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _request(
        self, method: str, path: str, payload: Optional[Dict[str, Any]], final: frozenset = frozenset()
    ) -> Dict[str, Any]:
        url = f"{self.base_url}/{path.lstrip('/')}"
        shown = redact(url)
        assert self._client is not None and self._sem is not None
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                async with self._sem:
                    self.requests_sent += 1
                    resp = await self._client.request(method, url, json=payload)
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                connect = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if last or (connect and not self._answered and attempt >= FIRST_CONNECT_RETRIES):
                    raise EndpointUnreachableError(
                        f"no answer from {shown} after {attempt + 1} attempts ({type(exc).__name__}: {exc}); "
                        "check that the server runs and the URL is right"
                        + (f" (connect timeout {self.connect_timeout:g} s)" if connect else "")
                    ) from None
                wait = self._wait(attempt, None)
                _LOG.debug(redact(f"{method} {shown}: {type(exc).__name__}: {exc}; retrying in {wait:g} s"))
                await asyncio.sleep(wait)
                continue
            self._answered = True
            if resp.status_code in RETRY_STATUSES and not last and resp.status_code not in final:
                wait = self._wait(attempt, resp.headers.get("retry-after"))
                _LOG.debug(
                    redact(
                        f"{method} {shown}: HTTP {resp.status_code} ({_short(resp.text, 120)}); "
                        f"retrying in {wait:g} s"
                    )
                )
                await asyncio.sleep(wait)
                continue
            if resp.status_code >= 400:
                raise EndpointError(
                    f"{method} {shown} failed with HTTP {resp.status_code}"
                    f"{' after ' + str(attempt + 1) + ' attempts' if attempt else ''}: "
                    f"{_short(resp.text)}",
                    resp.status_code,
                )
            try:
                return resp.json()
            except json.JSONDecodeError:
                raise EndpointError(
                    f"{method} {shown} answered with something that is not JSON: {_short(resp.text)}",
                    resp.status_code,
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, retry_after: Optional[str]) -> float:
        """Seconds before the next attempt: the server's ``Retry-After`` (seconds) if given, else the
        backoff."""
        if retry_after is not None:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2**attempt))


def _split_credentials(url: str) -> Tuple[str, Optional[Tuple[str, str]]]:
    """``"http://u:p@h:1/v1"`` → ``("http://h:1/v1", ("u", "p"))``; a URL without user-info → ``(url, None)``.

    The masked user-info of a written configuration (``http://***@h/v1``) is read as no credentials."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    if user == MASK and not password:
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), None
    register_secret(password or user)  # a token given as the user name is the secret then
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), (user, password)


async def _make_client(
    headers: Dict[str, str], timeout: float, connect_timeout: float, basic: Optional[Tuple[str, str]]
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(timeout, connect=connect_timeout),
        auth=None if basic is None else httpx.BasicAuth(*basic),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
    )


async def _make_semaphore(n: int) -> asyncio.Semaphore:
    return asyncio.Semaphore(n)


def _shutdown(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    if loop.is_running():
        try:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout=5)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
    loop.close()


def _short(text: str, limit: int = 300) -> str:
    """A server's answer on one line, secrets masked before it is cut (a cut key would escape the mask)."""
    text = " ".join(redact(text or "").split())
    return text if len(text) <= limit else text[:limit] + " …"

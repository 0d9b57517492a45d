"""``ucs serve INDEX``: the selector index over HTTP (FastAPI + uvicorn, one worker); see
:mod:`ucs.index.service`."""

from __future__ import annotations

import gc
import os
import socket
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ucs import defaults as D

HELP = """Serve a saved selector index over HTTP: POST /v1/select, POST /v1/examples (with a token),
GET /health.

INDEX is a folder written by SelectorIndex.save (or `ucs compare`). The OpenAPI page is at /docs. A new
version saved into INDEX by another process is loaded and served without a restart. Adding examples is off
unless the environment variable named by --token-env holds a token; requests then send
`Authorization: Bearer <token>`. Concurrent selections are answered together (one embedding and one
selection call, each request getting what it would get alone), on --batch-workers worker threads side by
side, each running the model and the selection on $UCS_QUERY_THREADS threads (default 1).
"""


def _check_index(index: Path) -> None:
    from ucs.index import SelectorIndex

    if not index.is_dir():
        raise typer.BadParameter(
            f"{index} is not a folder; give the folder written by SelectorIndex.save", param_hint="INDEX"
        )
    if SelectorIndex.latest_version(index) is None:
        raise typer.BadParameter(
            f"{index} holds no saved index (no CURRENT, no index.json); give the folder "
            "written by SelectorIndex.save",
            param_hint="INDEX",
        )


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a taken port or an unknown host is a user error (exit 2)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise typer.BadParameter(
            f"cannot resolve host {host!r} ({exc.strerror}); give an address such as 127.0.0.1",
            param_hint="--host",
        ) from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: without it a response's second write waits for the client's delayed ACK
    # (40 ms per request), since uvicorn's loop does not set it on connections of a socket it did not bind
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise typer.BadParameter(
            f"cannot listen on {host}:{port} ({exc.strerror}); choose a free port", param_hint="--port"
        ) from None
    return sock


def _token(env: str) -> Optional[str]:
    from ucs.utils.redact import register_secret, register_secret_env

    register_secret_env(env)
    value = (os.environ.get(env) or "").strip()
    if value and len(value) < 16:
        raise typer.BadParameter(
            f"the token in ${env} has {len(value)} characters; use at least 16 "
            "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)",
            param_hint="--token-env",
        )
    register_secret(value)
    return value or None


def _threads() -> int:
    """The worker's threads: ``$UCS_QUERY_THREADS`` (default 1), the query embedding's own setting."""
    from ucs.embedding.threads import QUERY_THREADS_ENV, resolve_query_threads

    try:
        return resolve_query_threads(None)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=f"${QUERY_THREADS_ENV}") from None


def _embedder(name: Optional[str]) -> Any:
    if name is None:
        return None
    from ucs.embedding import load_retrieval_embedder

    return load_retrieval_embedder(name)


def serve_cmd(
    index: Path = typer.Argument(..., help="The index folder (written by SelectorIndex.save)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    token_env: str = typer.Option(
        "UCS_SERVE_TOKEN",
        "--token-env",
        help="Environment variable holding the token that turns "
        "POST /v1/examples on (unset or empty: adding is off).",
    ),
    embedder: Optional[str] = typer.Option(
        None,
        "--embedder",
        help="all-minilm-l6-v2, all-mpnet-base-v2 or a sentence-transformers folder "
        "(default: the index's own).",
    ),
    reload_ms: int = typer.Option(
        1000, "--reload-ms", min=0, help="Check the folder for a new version at most this often."
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning | error."),
    batch_window_ms: float = typer.Option(
        2.0,
        "--batch-window-ms",
        min=0,
        max=1000,
        help="How long the free worker waits for more requests to answer together, after a batch of "
        "several (0: it starts at once).",
    ),
    max_batch: int = typer.Option(64, "--max-batch", min=1, max=4096, help="Queries in one batch at most."),
    batch_workers: Optional[int] = typer.Option(
        None,
        "--batch-workers",
        min=1,
        max=64,
        help="Worker threads answering batches side by side (default: ucs.defaults.SERVE_WORKERS, at most "
        "the cores available).",
    ),
) -> None:
    from ucs.utils.optional import require

    require("fastapi", '"ucs[serve]"', "ucs serve")
    uvicorn = require("uvicorn", '"ucs[serve]"', "ucs serve")
    if log_level not in ("debug", "info", "warning", "error"):
        raise typer.BadParameter(
            f"{log_level!r} is not a level; use debug, info, warning or error", param_hint="--log-level"
        )
    _check_index(index)
    token = _token(token_env)
    threads = _threads()
    sock = _bind(host, port)
    try:
        from ucs.index.service import ServedIndex, create_app

        served = ServedIndex(
            index,
            embedder=_embedder(embedder),
            reload_interval_s=reload_ms / 1000,
            batch_window_s=batch_window_ms / 1000,
            max_batch=max_batch,
            threads=threads,
            workers=batch_workers,
        )
        app = create_app(served, token=token)
        # the loaded index's objects (~0.5 M for 10,000 examples) are never scanned again by the cyclic
        # collector: one full collection over them took 0.1-0.3 s here, a pause of every request
        gc.collect()
        gc.freeze()
        # the workers, the event loop and the writer hand the GIL over every 0.5 ms instead of Python's 5 ms
        sys.setswitchinterval(D.SERVE_SWITCH_INTERVAL_S)
        typer.echo(
            f"serving {index} (version {served.index.version_}, {served.index.n_examples_} examples, "
            f"{served.index.method_}) on http://{host}:{port}  (adding examples: "
            f"{'on' if token else 'off'}; API page /docs)",
            err=True,
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, workers=1))
        server.run(sockets=[sock])
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP)(serve_cmd)

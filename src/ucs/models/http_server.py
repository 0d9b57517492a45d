"""Serve a GGUF file with llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (tests, benchmarks, local
use).

Needs llama-cpp-python's ``server`` extra (fastapi, uvicorn, sse-starlette, starlette-context,
pydantic-settings), which the ``dev`` extra installs. :func:`local_llama_server` starts ``python -m
llama_cpp.server`` in a child process on a free port, waits until ``GET /v1/models`` answers and stops the
process on exit.

The server is started with flash attention on, as the in-process llama.cpp engine scores with it: the two then
give the same log-probabilities (measured: within 1e-6 nats; with flash attention off they differ by up to 0.6
nats).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator, List, Optional

from ucs.models.llama_kernels import child_environment

__all__ = ["SERVER_MODULES", "missing_server_modules", "local_llama_server"]

#: Modules that ``python -m llama_cpp.server`` imports (llama-cpp-python's ``server`` extra).
SERVER_MODULES = (
    "llama_cpp",
    "fastapi",
    "uvicorn",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
    "yaml",
)


def missing_server_modules() -> List[str]:
    """The modules of :data:`SERVER_MODULES` that are not installed (one lookup each, nothing imported)."""
    return [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def local_llama_server(
    model: "str | os.PathLike[str]",
    n_threads: int = 1,
    n_ctx: int = 2048,
    startup_s: float = 180.0,
    log: Optional[Path] = None,
) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:<port>/v1``) of a llama-cpp-python server on ``model``.

    The server loads the llama.cpp build this process loads
    (:func:`ucs.models.llama_kernels.child_environment`: the AVX-512 one where it is installed and this CPU
    runs it), so its scores are the in-process engine's.

    Raises ``RuntimeError`` (with the server's last output) when it does not answer within ``startup_s``
    seconds.
    """
    missing = missing_server_modules()
    if missing:
        raise ModuleNotFoundError(
            f"llama-cpp-python's server needs {missing}: pip install -e '.[dev]' in the ucs "
            "repository, or pip install 'llama-cpp-python[server]'"
        )
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(n_threads),
        "--n_threads_batch",
        str(n_threads),
        "--n_ctx",
        str(n_ctx),
        "--flash_attn",
        "true",
    ]
    env = dict(os.environ)
    for name, value in child_environment().items():  # the llama.cpp build this process loads (or would)
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(proc, url, startup_s, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]


def _wait_ready(proc: subprocess.Popen, url: str, startup_s: float, log: Optional[Path]) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else "(no log kept)"
    raise RuntimeError(f"llama-cpp-python's server did not start at {url} (exit code {proc.poll()}): {tail}")

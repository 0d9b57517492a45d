"""Load test of ``ucs serve`` on 127.0.0.1: 1, 8 and 64 concurrent clients, while another client adds
examples, and 8 clients without additions. The target level (8 clients, additions) runs ``--repeats`` times
and the reading takes its median p99: on a shared machine one run's tail moves by ±10 ms.

Usage (benchmarks/index/RESULTS_serve.md was produced with this)::

    PYTHONPATH=src python benchmarks/index/bench_serve.py --data-dir ../shared/data --seconds 30 \
        --markdown benchmarks/index/RESULTS_serve.md --json benchmarks/index/results_serve.json

The index: the first 10,000 BANKING77 training utterances, ``topk`` (the default method), all-MiniLM-L6-v2.
Every request carries the query's text, so the server embeds it (the embedding is part of every request's
time). ``ucs serve`` runs as a child process (one uvicorn worker, its selections on ``--batch-workers`` worker
threads that answer concurrent requests together) on a free 127.0.0.1 port; the clients are asyncio coroutines
in this process (``--client``: ``aiohttp`` by default, whose client costs about a third of ``httpx``'s CPU per
request; one more level at 8 clients runs on the other, ``--also-client``), on the same cores, each sending
``POST /v1/select {"query": <BANKING77 test utterance>, "k": 8}`` back to back for ``--seconds`` per level
(closed loop), while one more client posts one new example to ``/v1/examples`` every ``--add-every`` seconds
(each one a new saved version the server swaps in). The anchors are the in-process ``SelectorIndex.select`` in
the same run, one caller, same queries: one query per call with its text (and apart: its embedding alone, the
selection alone given the embedding), and 8 queries per call. Each level records the CPU seconds of the server
process and of the clients, and the load average. Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Tuple

import numpy as np


#: The load generator's HTTP clients.
CLIENTS = ("aiohttp", "httpx")
HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def summary(times: List[float], errors: int, seconds: float) -> Dict[str, Any]:
    t = np.asarray(times) * 1e3
    return {
        "n": int(t.size),
        "errors": int(errors),
        "throughput_rps": float(t.size / seconds),
        "p50_ms": float(np.percentile(t, 50)) if t.size else None,
        "p99_ms": float(np.percentile(t, 99)) if t.size else None,
    }


def build_index(data_dir: str, folder: Path, n: int) -> List[str]:
    """Fit and save the 10k index; returns the query texts (BANKING77 test)."""
    from ucs.data import load_dataset
    from ucs.embedding import load_retrieval_embedder
    from ucs.index import SelectorIndex

    ds = load_dataset("banking77", data_dir)
    names = ds.label_names
    rows = [
        {"text": ds.pool.texts[i], "label": names[int(ds.pool.labels[i])]}
        for i in range(min(n, len(ds.pool)))
    ]
    emb = load_retrieval_embedder("all-minilm-l6-v2")
    SelectorIndex(emb, "topk", input_keys=["text"], output_key="label").fit(rows).save(folder)
    return list(ds.test.texts)


def in_process(folder: Path, queries: List[str], seconds: float, k: int) -> Dict[str, Any]:
    """The in-process anchors: one query per call with its text, its embedding alone, the selection alone
    given the embedding, and 8 queries per call (what one batch of 8 requests costs the server's worker)."""
    from ucs.embedding.threads import resolve_query_threads, set_threads
    from ucs.index import SelectorIndex

    index = SelectorIndex.load(folder)
    set_threads(resolve_query_threads(None))  # as `ucs serve` does
    E = index.embed_queries(queries)

    def timed(call: Any, share: float) -> Dict[str, Any]:
        times, i, end = [], 0, time.monotonic() + seconds * share
        while time.monotonic() < end:
            t0 = time.perf_counter()
            call(i)
            times.append(time.perf_counter() - t0)
            i += 1
        return summary(times, 0, seconds * share)

    n = len(queries)
    return {
        "one_query": timed(lambda i: index.select(queries[i % n], k), 1.0),
        "embed_only": timed(lambda i: index.embed_queries([queries[i % n]]), 0.25),
        "select_only": timed(lambda i: index.select(queries[i % n], k, query_embeddings=E[i % n]), 0.25),
        "eight_queries": timed(lambda i: index.select([queries[(8 * i + j) % n] for j in range(8)], k), 0.5),
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Level:
    """One load level: ``clients`` closed-loop clients posting ``queries`` (``k`` each) to ``url`` for
    ``seconds``, one more adding an example every ``add_every`` seconds (``inf``: none), on ``client``."""

    url: str
    token: str
    queries: List[str]
    clients: int
    seconds: float
    k: int
    add_every: float
    client: str = "aiohttp"


def measured_level(level: Level, server_pid: int) -> Dict[str, Any]:
    """One level, with the CPU seconds the server and the clients spent per answered request."""
    load0, server0, client0 = os.getloadavg()[0], _cpu_seconds(server_pid), time.process_time()
    out = asyncio.run(load_level(level))
    n = max(out["n"], 1)
    out["server_cpu_ms_per_request"] = 1e3 * (_cpu_seconds(server_pid) - server0) / n
    out["client_cpu_ms_per_request"] = 1e3 * (time.process_time() - client0) / n
    out["loadavg_1min"] = [load0, os.getloadavg()[0]]
    out["client"] = level.client
    return out


@contextlib.asynccontextmanager
async def http_client(
    kind: str, connections: int
) -> AsyncIterator[Callable[..., Awaitable[Tuple[int, Any]]]]:
    """``post(url, body, headers=None, timeout=60) -> (status, JSON answer or None)`` over ``connections``
    keep-alive connections, with the ``aiohttp`` or the ``httpx`` client."""
    if kind == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:

            async def post_httpx(url: str, body: Any, headers: Any = None, timeout: float = 60) -> Any:
                try:
                    r = await http.post(url, json=body, headers=headers, timeout=timeout)
                except httpx.HTTPError as exc:
                    raise ConnectionError(type(exc).__name__) from exc
                return r.status_code, (r.json() if r.status_code == 200 else None)

            yield post_httpx
        return
    import aiohttp

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def post_aiohttp(url: str, body: Any, headers: Any = None, timeout: float = 60) -> Any:
            try:
                wait = aiohttp.ClientTimeout(total=timeout)
                async with http.post(url, json=body, headers=headers, timeout=wait) as r:
                    return r.status, (await r.json() if r.status == 200 else None)
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                raise ConnectionError(type(exc).__name__) from exc

        yield post_aiohttp


async def load_level(level: Level) -> Dict[str, Any]:
    url, token, queries, k, add_every = level.url, level.token, level.queries, level.k, level.add_every
    times: List[float] = []
    errors = [0]
    kinds: Dict[str, int] = {}
    adds: List[float] = []
    add_errors = [0]
    end = time.monotonic() + level.seconds

    async def client(c: int, post: Any) -> None:
        i = c * 997
        while time.monotonic() < end:
            t0 = time.perf_counter()
            try:
                status, body = await post(f"{url}/v1/select", {"query": queries[i % len(queries)], "k": k})
                ok = status == 200 and len(body["results"][0]["examples"]) == k
                kind = f"HTTP {status}"
            except ConnectionError as exc:
                ok, kind = False, str(exc)
            if not ok:
                kinds[kind] = kinds.get(kind, 0) + 1
            (times.append(time.perf_counter() - t0) if ok else None)
            errors[0] += 0 if ok else 1
            i += 1

    async def adder(post: Any) -> None:
        n = 0
        while time.monotonic() + add_every < end:
            await asyncio.sleep(add_every)
            t0 = time.perf_counter()
            example = {"text": f"is my card {n} on its way {time.time()}", "label": "card_arrival"}
            status, _ = await post(
                f"{url}/v1/examples",
                {"examples": [example]},
                headers={"Authorization": f"Bearer {token}"},
                timeout=120,
            )
            (adds.append(time.perf_counter() - t0) if status == 200 else None)
            add_errors[0] += status != 200
            n += 1

    async with http_client(level.client, level.clients + 1) as post:
        await asyncio.gather(adder(post), *[client(c, post) for c in range(level.clients)])
    out = summary(times, errors[0], level.seconds)
    out.update(
        {
            "clients": level.clients,
            "error_kinds": kinds,
            "adding": add_every != float("inf"),
            "adds": len(adds),
            "add_errors": add_errors[0],
            "add_p50_ms": float(np.median(adds) * 1e3) if adds else None,
        }
    )
    return out


def start_server(folder: Path, port: int, token: str, extra: List[str] = ()) -> subprocess.Popen:
    import httpx

    env = {**os.environ, "UCS_SERVE_TOKEN": token}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ucs.cli",
            "serve",
            str(folder),
            "--host",
            HOST,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--reload-ms",
            "500",
            *extra,
        ],
        env=env,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://{HOST}:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("ucs serve did not answer /health within 180 s")


def render(res: Dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# `ucs serve` under load (127.0.0.1)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores (shared), Python {m['python']}; load average "
        f"{m['loadavg_start'][0]:.2f} at the start, {m['loadavg_end'][0]:.2f} at the end (1 min; each "
        "level's "
        "below).",
        f"Command: `{res['command']}`",
        "",
        f"Index: the first {res['n_examples']:,} BANKING77 training utterances, `topk`, all-MiniLM-L6-v2, k "
        "= "
        f"{res['k']}. **Every request carries the query's text: the server embeds it** (ONNX Runtime, one "
        f"thread per call), then selects. One uvicorn worker; its selections run on {res['workers']} worker "
        "thread(s) side by side, each answering the requests waiting together (one embedding call and one "
        f"selection call per batch; batch window {res['batch_window_ms']:g} ms). The clients (asyncio "
        f"{res.get('client', 'httpx')}, closed loop) run on the same "
        f"{m['cores']} cores as the server. Each level lasts {res['seconds']:g} s; with additions, one more "
        f"client adds one example every {res['add_every']:g} s (each a new saved version the server swaps "
        "in).",
        "",
        "| path | clients | requests | throughput (req/s) | p50 (ms) | p99 (ms) | errors | adds (p50 ms) "
        "| CPU ms/request: server + clients | load (1 min) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ip = res["in_process"]
    for key, label, per in (
        ("one_query", "in-process `select`, text", 1),
        ("embed_only", "in-process embedding only", 1),
        ("select_only", "in-process `select`, embedding given", 1),
        ("eight_queries", "in-process `select`, 8 texts per call", 8),
    ):
        r = ip[key]
        lines.append(
            f"| {label} | 1 | {r['n'] * per} | {r['throughput_rps'] * per:.0f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | 0 | - | - | - |"
        )
    for r in res["http"]:
        lines.append(
            f"| HTTP `/v1/select`, text{_client_note(r, res)} | {r['clients']} | {r['n']} | "
            f"{r['throughput_rps']:.0f} | "
            f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {_errors(r)} | "
            + (f"{r['adds']} ({r['add_p50_ms'] or 0:.0f}) | " if r["adding"] else "none | ")
            + f"{r['server_cpu_ms_per_request']:.2f} + {r['client_cpu_ms_per_request']:.2f} | "
            f"{r['loadavg_1min'][0]:.2f} → {r['loadavg_1min'][1]:.2f} |"
        )
    if res.get("lscpu"):
        lines += [
            "",
            "<details><summary>lscpu</summary>",
            "",
            "```",
            res["lscpu"].strip(),
            "```",
            "",
            "</details>",
        ]
    return "\n".join(lines + [""] + reading(res)) + "\n"


def _client_note(r: Dict[str, Any], res: Dict[str, Any]) -> str:
    """A level run on another client than the page's says which, and a repeated level its run."""
    kind = r.get("client", res.get("client", "httpx"))
    note = "" if kind == res.get("client", "httpx") else f" ({kind} clients)"
    return note + (f" (run {r['repeat']})" if r.get("repeat") else "")


def _errors(r: Dict[str, Any]) -> str:
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(r["error_kinds"].items()))
    return f"{r['errors']} ({kinds})" if kinds else str(r["errors"])


def reading(res: Dict[str, Any]) -> List[str]:
    """The page's reading, computed from its rows: the 8-client p99 while adding against the 50 ms target, the
    64-client errors, what the additions cost the tail, and where the time goes."""
    main = [r for r in res["http"] if r.get("client", res.get("client")) == res.get("client")]
    eights = [r for r in main if r["clients"] == 8 and r["adding"]]
    eight = eights[int(np.argsort([r["p99_ms"] for r in eights])[len(eights) // 2])] if eights else None
    other = next((r for r in res["http"] if r not in main), None)
    quiet = next((r for r in main if not r["adding"]), None)
    many = next((r for r in main if r["clients"] == 64 and r["adding"]), None)
    ip = res["in_process"]
    one = next((r for r in res["http"] if r["clients"] == 1), None)
    out = ["## Reading", ""]
    if res["seconds"] < 30:
        out.append(f"* A shortened run: {res['seconds']:g} s per level (the default is 30 s).")
    if eight is not None:
        verdict = "**meets**" if eight["p99_ms"] <= 50 else "**misses**"
        spread = ", ".join(f"{r['p99_ms']:.1f}" for r in eights)
        runs = (
            f"the median of {len(eights)} runs of the level ({spread} ms)" if len(eights) > 1 else "one run"
        )
        out.append(
            f"* Target (8 clients, additions running, embedding included; {runs}): p99 "
            f"{eight['p99_ms']:.1f} ms "
            f"{verdict} the 50 ms target (p50 {eight['p50_ms']:.1f} ms, {eight['throughput_rps']:.0f} "
            f"requests/s; load average {eight['loadavg_1min'][0]:.2f} → {eight['loadavg_1min'][1]:.2f} "
            "during "
            "the level)."
        )
    if many is not None:
        out.append(
            f"* 64 clients with additions: {_errors(many)} errors in {many['n']} requests, "
            f"{many['adds']} additions ({many['add_errors']} failed)."
        )
    if quiet is not None and eight is not None:
        out.append(
            f"* Without additions ({quiet['clients']} clients): p99 {quiet['p99_ms']:.1f} ms, p50 "
            f"{quiet['p50_ms']:.1f} ms, against p99 {eight['p99_ms']:.1f} ms with them: an addition embeds "
            "its "
            "example on the worker (one short call between two batches) and copies, extends and saves the "
            "index "
            "on a lower-priority thread while the worker keeps answering from the served version."
        )
    e1, s1, b8 = ip["embed_only"]["p50_ms"], ip["select_only"]["p50_ms"], ip["eight_queries"]["p50_ms"]
    out.append(
        f"* Where the time goes: one query in-process costs {ip['one_query']['p50_ms']:.2f} ms at the "
        "median, "
        f"of which the embedding {e1:.2f} ms and the selection given the embedding {s1:.2f} ms; 8 queries in "
        f"one call cost {b8:.2f} ms ({b8 / 8:.2f} ms a query). A closed loop of c clients on w worker "
        "threads waits about one batch of c / w queries per request, while the other workers answer theirs."
    )
    if one is not None:
        out.append(
            f"* One client: {one['p50_ms']:.1f} ms at the median over HTTP against "
            f"{ip['one_query']['p50_ms']:.2f} ms in-process."
        )
    if eight is not None:
        out.append(
            f"* CPU per request at 8 clients: server {eight['server_cpu_ms_per_request']:.2f} ms, clients "
            f"{eight['client_cpu_ms_per_request']:.2f} ms, on {res['machine']['cores']} cores that other "
            "work "
            "shares (see the load average): the throughput is bounded by the cores left over."
        )
    if other is not None and eight is not None:
        out.append(
            f"* The load generator shares the cores: the same level on {other['client']} clients costs "
            f"{other['client_cpu_ms_per_request']:.2f} ms of client CPU a request (against "
            f"{eight['client_cpu_ms_per_request']:.2f} ms) and gives p99 {other['p99_ms']:.1f} ms, p50 "
            f"{other['p50_ms']:.1f} ms, {other['throughput_rps']:.0f} requests/s."
        )
    return out


def _lscpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return "\n".join(line for line in out.splitlines() if not line.startswith(("Vulnerability", "Flags")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--examples", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--add-every", type=float, default=5.0)
    ap.add_argument("--quiet-level", type=int, default=8, help="Clients of a level without adds (0: none).")
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="Runs of the target level (8 clients, additions); the reading takes the median p99.",
    )
    ap.add_argument("--batch-window-ms", type=float, default=2.0, help="Passed to ucs serve.")
    ap.add_argument("--batch-workers", type=int, default=None, help="Passed to ucs serve (default: its own).")
    ap.add_argument("--client", choices=CLIENTS, default="aiohttp", help="The load generator's HTTP client.")
    ap.add_argument(
        "--also-client",
        choices=CLIENTS + ("",),
        default="httpx",
        help="One more level (8 clients, additions) on this client, for comparison ('' for none).",
    )
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_index import machine

    from ucs.index.service import default_workers

    res: Dict[str, Any] = {
        "machine": machine(),
        "command": "python " + " ".join(sys.argv),
        "k": args.k,
        "seconds": args.seconds,
        "add_every": args.add_every,
        "n_examples": args.examples,
        "batch_window_ms": args.batch_window_ms,
        "batch_workers": args.batch_workers,
        "workers": args.batch_workers or default_workers(),
        "lscpu": _lscpu(),
        "client": args.client,
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        queries = build_index(args.data_dir, folder, args.examples)
        res["in_process"] = in_process(folder, queries, args.seconds, args.k)
        token, port = secrets.token_urlsafe(24), _free_port()
        extra = ["--batch-window-ms", str(args.batch_window_ms)]
        if args.batch_workers is not None:
            extra += ["--batch-workers", str(args.batch_workers)]
        proc = start_server(folder, port, token, extra)
        url = f"http://{HOST}:{port}"
        try:

            def level(clients: int, add_every: float, client: str) -> Level:
                return Level(url, token, queries, clients, args.seconds, args.k, add_every, client)

            res["http"] = [
                measured_level(level(int(c), args.add_every, args.client), proc.pid)
                for c in args.clients.split(",")
            ]
            for i in range(2, args.repeats + 1):  # the target level again: the machine's own spread
                again = measured_level(level(8, args.add_every, args.client), proc.pid)
                res["http"].append({**again, "repeat": i})
            if args.quiet_level:  # the same load without additions: what the adds cost the tail
                res["http"].append(
                    measured_level(level(args.quiet_level, float("inf"), args.client), proc.pid)
                )
            if args.also_client and args.also_client != args.client:  # the same level on the other client
                res["http"].append(measured_level(level(8, args.add_every, args.also_client), proc.pid))
        finally:
            proc.terminate()
            proc.wait(30)
    res["machine"]["loadavg_end"] = list(os.getloadavg())
    res["machine"]["platform"] = platform.platform()
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(render(res))


if __name__ == "__main__":
    main()

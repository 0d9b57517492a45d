"""Throughput of the HTTP backbone through a local llama-cpp-python server, beside the in-process llama.cpp engine.

One run starts ``python -m llama_cpp.server`` on 127.0.0.1 (SmolLM2-135M-Instruct, the packaged GGUF) and measures,
with the same prompts and in the same run:

* label scoring: ``--score-prompts`` zero-shot BANKING77 prompts (chat-rendered, 3 labels each, as in
  ``tests/models/test_http_server.py``), prompts/s, and the largest |Δ| against the in-process scores;
* generation: ``--gen-prompts`` prompts, 16 new tokens each, greedy, prompts/s;

through the server at 1, 4 and 16 requests in flight, and in process before and after the server runs (on a shared
machine the load drifts during a run). Writes ``benchmarks/models/RESULTS_http.md``.

    python benchmarks/models/bench_http.py --score-prompts 6 --gen-prompts 8 --threads 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "models"))
from test_http_server import banking_prompts  # noqa: E402

from ucs.models import load_backbone  # noqa: E402
from ucs.models.http_server import local_llama_server  # noqa: E402
from ucs.utils.weights import smollm2_gguf_path  # noqa: E402

IN_FLIGHT = (1, 4, 16)

NOTES = """Reading the table:

- Label scoring through llama-cpp-python's server is bound by the server (about 50× slower than in process
  on a quiet machine), not the transport: it answers one request
  at a time and, for `echo` with `logprobs`, sorts the whole 49,152-token vocabulary in Python for every echoed
  token (measured in its `_create_completion`: about 20-90 ms per token on this machine, most of a request's time).
  More requests in flight barely help; a server that batches concurrent requests (vLLM) is the one to use for
  likelihood mode at scale.
- Each scored prompt costs one warm-up request (the prompt alone) plus one echoed request per label.
- Generation through the server runs at about the in-process rate (the request is one prompt and a few new
  tokens; the server answers one request at a time, so more in flight only queue there). The two need not generate
  the same tokens or stop at the same place: the server applies its own sampling defaults (top-k 40, min-p 0.05,
  repetition penalty 1.1; the in-process engine samples with none of them).
- The load matters more than the transport for everything in process: on a loaded machine (1-minute load 3-7,
  2026-11-29 earlier) the same in-process scoring ran at 0.25-0.75 prompts/s and the server at 0.07-0.08.
- The last column checks the numbers: the server's label scores against the in-process engine's, same prompts."""


def timed(fn: Callable[[], object]) -> "tuple[float, object]":
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def score_all(model, prompts) -> np.ndarray:
    return np.concatenate([model.score_continuations_detailed(p, c).logprob for p, c, _ in prompts])


def measure(model, prompts, gen_prompts: List[str]) -> Dict[str, object]:
    t_s, scores = timed(lambda: score_all(model, prompts))
    t_g, _ = timed(lambda: model.generate(gen_prompts, max_new_tokens=16, temperature=0.0))
    return {"score_pps": len(prompts) / t_s, "gen_pps": len(gen_prompts) / t_g, "scores": scores}


def shell(cmd: str) -> str:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--score-prompts", type=int, default=6)
    ap.add_argument("--gen-prompts", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads, server and in-process alike")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(HERE / "RESULTS_http.md"))
    ap.add_argument("--load-note", default="a shared machine: the in-process engine is measured before and after the "
                    "server", help="what the page says about the machine's load during the run")
    args = ap.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    cpu = shell("lscpu | sed -n 's/^Model name: *//p'")
    prompts = banking_prompts(Path(args.data_dir))[: args.score_prompts]
    gen_prompts = [p for p, _, _ in banking_prompts(Path(args.data_dir))[: args.gen_prompts]]
    gguf = smollm2_gguf_path()

    local = load_backbone("smollm2", engine="llama", n_threads=args.threads).load()
    score_all(local, prompts[:1])  # warm-up
    rows = {"in-process (before)": measure(local, prompts, gen_prompts)}
    with local_llama_server(gguf, n_threads=args.threads) as url:
        for k in IN_FLIGHT:
            remote = load_backbone(url, max_in_flight=k)
            rows[f"HTTP, {k} in flight"] = measure(remote, prompts, gen_prompts)
            remote.close()
    rows["in-process (after)"] = measure(local, prompts, gen_prompts)  # the machine is shared: load drifts
    local.close()
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    ref = rows["in-process (before)"]["scores"]
    lines = [
        "# HTTP backbone: throughput through llama-cpp-python's server, beside the in-process engine", "",
        f"Machine: {cpu}, {shell('nproc')} cores; load average at start {' '.join(load_start)}, at the end "
        f"{' '.join(load_end)} ({args.load_note}); "
        f"Python {sys.version.split()[0]}; {time.strftime('%Y-%m-%d')}. SmolLM2-135M-Instruct (Q4_1 GGUF), "
        f"{args.threads} llama.cpp threads in the server and in process; llama-cpp-python's server on 127.0.0.1 with "
        "flash attention (as the in-process engine scores).", "",
        f"Command: `python benchmarks/models/bench_http.py --score-prompts {args.score_prompts} "
        f"--gen-prompts {args.gen_prompts} --threads {args.threads}`", "",
        f"Size: label scoring of {len(prompts)} zero-shot chat-rendered BANKING77 prompts with 3 labels each "
        f"({sum(len(c) for _, c, _ in prompts)} continuations); generation of {len(gen_prompts)} such prompts, "
        "16 new tokens each, greedy.", "",
        "| backbone | label scoring (prompts/s) | generation (prompts/s) | max abs(Δ) vs in-process (nats) |",
        "|---|---|---|---|",
    ]
    for name, r in rows.items():
        delta = float(np.max(np.abs(r["scores"] - ref)))
        lines.append(f"| {name} | {r['score_pps']:.3f} | {r['gen_pps']:.3f} | {delta:.1e} |")
    lines += ["", NOTES]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Cost of a decision (scoring every label of one prompt) through the HTTP backbone, beside the in-process
engine.

One run measures, with the same prompts and in the same run:

* label scoring: ``--score-prompts`` zero-shot BANKING77 prompts (chat-rendered, 3 labels each, as in
  ``tests/models/test_http_server.py``): requests and seconds per decision, prompts/s, and the largest |Δ|
  against the reference scores (in process for llama.cpp; the one-request-per-label path for the double);
* generation: ``--gen-prompts`` prompts, 16 new tokens each, greedy, prompts/s;

through llama-cpp-python's server (``python -m llama_cpp.server`` on 127.0.0.1, SmolLM2-135M-Instruct, the
packaged GGUF; it refuses lists of prompts, so the backbone falls back to one request per label) at
``--in-flight`` requests in flight, through :class:`ucs.testing.http_double.CompletionsDouble` (takes lists of
prompts as vLLM does; a hash for a model, so its seconds are the client's and the transport's), and in process
before and after the server runs (on a shared machine the load drifts). The first decision of a backbone
(the alignment check, the first list) is run before the clock starts and reported apart. Writes
``benchmarks/models/RESULTS_http.md`` (``--out``; the page's earlier sections are kept).

    python benchmarks/models/bench_http.py --score-prompts 4 --gen-prompts 4 --threads 2
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

from ucs.data import load_banking77  # noqa: E402
from ucs.models import load_backbone  # noqa: E402
from ucs.models.http_server import local_llama_server  # noqa: E402
from ucs.testing.http_double import CompletionsDouble  # noqa: E402
from ucs.utils.weights import smollm2_gguf_path  # noqa: E402

SECTION = "## Requests and seconds per decision (lists of prompts, fallback, in process)"

NOTES = """Reading the table:

- A decision is the scoring of every label of one prompt. "first" is the backbone's first decision (its \
warm-up
  or not, the first list of prompts, the two requests of the alignment check); the other columns are the \
steady
  state over the remaining prompts.
- A server that takes a list of prompts (vLLM; here the double) costs one request per decision: all labels in
  one echoed `/v1/completions` request (`⌈labels / batch⌉` with `#model?batch=`), no warm-up. 77 labels are
  still one request.
- llama-cpp-python's server refuses a list of two prompts (HTTP 500): the backbone sends one list once, then
  scores as before lists, the warm-up plus one request per label (1 + labels per decision), with the same
  numbers (the Δ column against the in-process engine).
- The double's seconds are the client's and the transport's (its model is a hash), not a served model's."""


def timed(fn: Callable[[], object]) -> "tuple[float, object]":
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def score_all(model, prompts) -> np.ndarray:
    return np.concatenate([model.score_continuations_detailed(p, c).logprob for p, c, _ in prompts])


def sent(model) -> int:
    return int(getattr(model, "requests_sent", 0))


def measure(model, prompts, gen_prompts: List[str]) -> Dict[str, object]:
    """The first decision apart, then the rest timed; generation after."""
    r0 = sent(model)
    first = score_all(model, prompts[:1])
    r1 = sent(model)
    t_s, rest = timed(lambda: score_all(model, prompts[1:]))
    n = len(prompts) - 1
    r2 = sent(model)  # before generation: its requests are not a decision's
    t_g, _ = timed(lambda: model.generate(gen_prompts, max_new_tokens=16, temperature=0.0))
    return {
        "first": r1 - r0,
        "per": (r2 - r1) / n,
        "sec": t_s / n,
        "score_pps": n / t_s,
        "gen_pps": len(gen_prompts) / t_g,
        "scores": np.concatenate([first, rest]),
        "path": path(model),
    }


def path(model) -> str:
    if not hasattr(model, "takes_lists"):
        return "in process"
    return "lists" if model.takes_lists else "one per label"


def shell(cmd: str) -> str:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def all_labels(prompts, data_dir: Path):
    """The same prefixes with every BANKING77 label as a continuation."""
    ds = load_banking77(data_dir)
    conts = [f" {n}" for n in ds.label_names]
    return [(p, conts, 0) for p, _, _ in prompts]


def through_double(prompts, gen_prompts, rows, data_dir: Path, k: int) -> None:
    for name, lists in (("double, lists (vLLM-like)", True), ("double, lists refused", False)):
        with CompletionsDouble(lists=lists) as d:
            for batch in (1, None):
                spec = d.url + "#double" + ("?batch=1" if batch else "")
                remote = load_backbone(spec, max_in_flight=k)
                rows[f"{name}{', batch=1' if batch else ''}"] = measure(remote, prompts, gen_prompts)
                remote.close()
    wide = all_labels(prompts, data_dir)
    with CompletionsDouble() as d:
        for batch in (1, None):
            remote = load_backbone(d.url + "#double" + ("?batch=1" if batch else ""), max_in_flight=k)
            rows[f"double, 77 labels{', batch=1' if batch else ''}"] = measure(remote, wide, gen_prompts[:1])
            remote.close()


def reference(name: str, rows) -> np.ndarray:
    """The scores a row is compared with: the double's one-request-per-label row, else in process."""
    if name.startswith("double"):
        return rows[name.replace(", batch=1", "") + ", batch=1"]["scores"]
    return rows["in-process (before)"]["scores"]


def table(rows) -> List[str]:
    lines = [
        "| backbone | path | requests, first decision | requests per decision | seconds per decision | "
        "generation (prompts/s) | max abs(Δ) vs reference (nats) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        delta = float(np.max(np.abs(r["scores"] - reference(name, rows))))
        reqs = ("—", "—") if r["path"] == "in process" else (str(r["first"]), f"{r['per']:.1f}")
        lines.append(
            f"| {name} | {r['path']} | {reqs[0]} | {reqs[1]} | {r['sec']:.3f} | {r['gen_pps']:.2f} | "
            f"{delta:.1e} |"
        )
    return lines


def write(out: Path, section: List[str]) -> None:
    """Replace this benchmark's section of the page (or add it), keeping the rest."""
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    kept = old.split("\n" + SECTION)[0].rstrip("\n")
    out.write_text((kept + "\n\n" if kept else "") + "\n".join(section) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--score-prompts", type=int, default=4, help="at least 2: the first decision is apart")
    ap.add_argument("--gen-prompts", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads, server and in-process alike")
    ap.add_argument("--in-flight", type=int, default=4, help="requests in flight")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(HERE / "RESULTS_http.md"))
    ap.add_argument(
        "--load-note",
        default="a shared machine: the in-process engine is measured before and after the server",
        help="what the page says about the machine's load during the run",
    )
    args = ap.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    cpu = shell("lscpu | sed -n 's/^Model name: *//p'")
    data = Path(args.data_dir)
    prompts = banking_prompts(data)[: max(2, args.score_prompts)]
    gen_prompts = [p for p, _, _ in banking_prompts(data)[: args.gen_prompts]]

    local = load_backbone("smollm2", engine="llama", n_threads=args.threads).load()
    score_all(local, prompts[:1])  # warm-up
    rows = {"in-process (before)": measure(local, prompts, gen_prompts)}
    with local_llama_server(smollm2_gguf_path(), n_threads=args.threads) as url:
        remote = load_backbone(url, max_in_flight=args.in_flight)
        rows[f"llama-cpp-python server, {args.in_flight} in flight"] = measure(remote, prompts, gen_prompts)
        remote.close()
    rows["in-process (after)"] = measure(local, prompts, gen_prompts)  # the machine is shared: load drifts
    local.close()
    through_double(prompts, gen_prompts, rows, data, args.in_flight)
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    section = [
        SECTION,
        "",
        f"Machine: {cpu}, {shell('nproc')} cores; load average at start {' '.join(load_start)}, at the end "
        f"{' '.join(load_end)} ({args.load_note}); Python {sys.version.split()[0]}; "
        f"{time.strftime('%Y-%m-%d')}. "
        f"SmolLM2-135M-Instruct (Q4_1 GGUF), {args.threads} llama.cpp threads in the server and in process; "
        "llama-cpp-python's server on 127.0.0.1 with flash attention.",
        "",
        f"Command: `python benchmarks/models/bench_http.py --score-prompts {len(prompts)} "
        f"--gen-prompts {args.gen_prompts} --threads {args.threads} --in-flight {args.in_flight}`",
        "",
        f"Size: label scoring of {len(prompts)} zero-shot chat-rendered BANKING77 prompts with 3 labels each "
        f"(the first decision apart, then {len(prompts) - 1} timed); the 77-label rows score the same "
        "prefixes "
        f"with every BANKING77 label; generation of {len(gen_prompts)} such prompts, 16 new tokens each, "
        "greedy.",
        "",
        *table(rows),
        "",
        NOTES,
    ]
    write(Path(args.out), section)
    print("\n".join(section))


if __name__ == "__main__":
    main()

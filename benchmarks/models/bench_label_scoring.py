"""Label scoring of BANKING77 prompts on one core: llama.cpp (the Q4_1 file, its float32 copy, branch and
bound), transformers, and the limits of the work.

Prompts are built as ``ucs compare`` builds them (``backbone_predictor``: a
:class:`~ucs.evaluation.prompts.PromptBuilder` over ``INTENT_FORMAT`` with the 77 labels, ``--k``
demonstrations drawn at random from the pool, a test query), each timed after one warm-up prompt per engine:

* llama.cpp on the shipped Q4_1 file, every label scored (``score_continuations``: prefix reuse, one tree
  batch);
* llama.cpp on its float32 copy (``weights="f32"``), every label scored;
* llama.cpp on the float32 copy, the label chosen by branch and bound (``choose_continuation``: what ``ucs
  compare`` runs);
* transformers (float32, its prefix blocks on), every label scored.

The limit of each row's work: the positions it must compute (the prompt's tokens after the run shared with the
previous prompt, plus the label trie's nodes with children — or, for branch and bound, the nodes it evaluated)
× FLOPs a position (2 × the non-embedding parameters, plus attention over the context), plus the LM head where
a distribution is needed, ÷ one core's float32 matmul rate (numpy pinned to one thread, threadpoolctl).
llama.cpp's own rates (a 64-token batch at position 0) are given beside it.

    python benchmarks/models/bench_label_scoring.py --prompts 10 --k 8 --core 0 --unpatched FOLDER \\
        --out benchmarks/models/RESULTS_label_scoring.md

``--unpatched FOLDER`` adds the same build without ucs's patches to llama.cpp (scripts/llama-patches/),
measured in the same run: FOLDER holds its libraries, e.g. ``site-packages/ucs_llama_kernels/avx512`` of
another virtual environment set up with ``UCS_LLAMA_PATCHES=off bash scripts/install.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def build_prompts(data_dir: Path, n: int, k: int) -> "tuple[List[str], List[str]]":
    from ucs.data.public import load_banking77
    from ucs.evaluation.prompts import INTENT_FORMAT, PromptBuilder

    ds = load_banking77(data_dir)
    names = ds.label_names
    builder = PromptBuilder(INTENT_FORMAT, names)
    rng = np.random.default_rng(0)
    prompts = []
    for q in range(n + 1):
        idx = rng.choice(len(ds.pool), k, replace=False)
        shown = [(ds.pool.texts[i], names[ds.pool.labels[i]]) for i in idx]
        prompts.append(builder.render(shown, ds.test.texts[q]))
    return prompts, [INTENT_FORMAT.continuation(y, chat=builder.chat) for y in names]


def timed(bb, prompts: List[str], labels: List[str], choose: bool = False) -> Dict[str, object]:
    """CPU and wall seconds of each prompt after one warm-up; ``choose``: branch and bound
    (``choose_continuation``), else every label scored. The label chosen, and the trie nodes evaluated."""
    run = (
        (lambda p: bb.choose_continuation(p, labels))
        if choose
        else (lambda p: bb.score_continuations(p, labels))
    )
    run(prompts[0])  # warm-up: loads, and caches the shared opening
    times, cpu, out, nodes = [], [], [], []
    for p in prompts[1:]:
        n0 = getattr(bb, "trie_tokens_evaluated", 0)
        t, c = time.perf_counter(), time.process_time()
        out.append(run(p))
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        nodes.append(getattr(bb, "trie_tokens_evaluated", 0) - n0)
    picked = [int(o[0]) if choose else int(np.argmax(o)) for o in out]
    return {
        "wall": float(np.median(times)),
        "s": float(np.median(cpu)),
        "all": cpu,
        "picked": picked,
        "scores": None if choose else out,
        "nodes": nodes,
    }


def numpy_flops() -> float:
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).random((512, 576), dtype=np.float32)
    w = np.random.default_rng(1).random((576, 1536), dtype=np.float32)
    best = np.inf
    with threadpool_limits(1):
        for _ in range(30):
            t = time.process_time()
            for _ in range(10):
                a @ w
            best = min(best, (time.process_time() - t) / 10)
    return 2 * 512 * 576 * 1536 / best


def model_shape(bb) -> Dict[str, int]:
    lc, model = bb._lc, bb._llm._model.model
    return {
        "layers": int(lc.llama_model_n_layer(model)),
        "d": int(lc.llama_model_n_embd(model)),
        "params": int(lc.llama_model_n_params(model)),
        "vocab": bb.vocab_size,
    }


def llama_flops(bb, shape: Dict[str, int], body: float) -> float:
    """FLOP/s of llama.cpp's own kernels: a 64-token batch at position 0 (attention negligible), best of 5."""
    toks = list(range(1000, 1064))
    ctx = bb._new_ctx(embeddings=False, n_ctx=256, n_seq=1)
    batch = bb._batch("bench", 1)
    best = np.inf
    for _ in range(5):
        ctx.kv_cache_clear()
        batch.reset()
        batch.add_sequence(toks, 0, False)
        t = time.process_time()
        ctx.decode(batch)
        best = min(best, time.process_time() - t)
    ctx.kv_cache_clear()
    return 64 * body / best


def needed_work(
    bb, prompts: List[str], labels: List[str], shape: Dict[str, int], nodes: "List[int] | None" = None
) -> Dict[str, float]:
    """Positions, logits rows and FLOPs a prompt must compute (median over the timed prompts): its tokens
    after the run shared with the previous prompt, plus the label trie's nodes with children (every label
    scored) or ``nodes`` (the nodes branch and bound evaluated on each prompt), and the LM head where a
    distribution is needed."""
    from ucs.lm.prefix_tree import build_trie
    from ucs.models.llamacpp import _shared_run

    d, L, V = shape["d"], shape["layers"], shape["vocab"]
    body = 2.0 * (shape["params"] - V * d)  # tied embeddings: the lookup is not a matmul
    c_tok = [bb.tokenize(c, add_special=False) for c in labels]
    trie = build_trie(c_tok)
    inner = int(trie.has_children().sum())
    rows, flops, new = [], [], []
    toks = [bb.tokenize(p.rstrip(" ")) for p in prompts]
    for i, (prev, cur) in enumerate(zip(toks, toks[1:])):
        P, keep = len(cur), _shared_run(prev, cur)
        ctx_new = np.arange(keep, P)  # each new position attends to everything before it
        n = inner if nodes is None else int(nodes[i])
        ctx_trie = (P + trie.depth[trie.has_children()]).sum() if nodes is None else n * (P + 2)
        attn = 4.0 * L * d * (ctx_new.sum() + ctx_trie)
        flops.append((P - keep + n) * body + attn + (n + 1) * 2.0 * V * d)
        rows.append(P - keep + n)
        new.append(P - keep)
    return {
        "flops": float(np.median(flops)),
        "positions": float(np.median(rows)),
        "new": float(np.median(new)),
        "inner": inner,
        "nodes": trie.n_nodes,
        "tokens": float(np.median([len(t) for t in toks[1:]])),
        "body": body,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--core", type=int, default=None, help="pin the process to this CPU core")
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--no-transformers", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--unpatched",
        type=Path,
        default=None,
        help="a folder of the same llama.cpp build's libraries made without ucs's patches "
        "(UCS_LLAMA_PATCHES=off): adds its branch-and-bound row, measured in this run",
    )
    ap.add_argument("--chosen-only", action="store_true", help=argparse.SUPPRESS)  # the portable build's row
    a = ap.parse_args()
    if a.core is not None:
        os.sched_setaffinity(0, {a.core})
    if a.chosen_only:
        return chosen_only(a)
    load = Path("/proc/loadavg").read_text().split()[:3]
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "unknown",
    )
    from ucs.models import load_backbone

    prompts, labels = build_prompts(a.data_dir, a.prompts, a.k)
    q41 = load_backbone("smollm2", engine="llama", n_threads=1).load()
    shape = model_shape(q41)
    rows = {"llama.cpp, Q4_1 file, every label scored": timed(q41, prompts, labels)}
    rate_q41 = llama_flops(q41, shape, 2.0 * (shape["params"] - shape["vocab"] * shape["d"]))
    q41.close()
    f32 = load_backbone("smollm2", engine="llama", n_threads=1, weights="f32").load()
    rows["llama.cpp, f32 copy, every label scored"] = timed(f32, prompts, labels)
    rows[CHOSEN] = timed(f32, prompts, labels, choose=True)
    full = needed_work(f32, prompts, labels, shape)
    bnb = needed_work(f32, prompts, labels, shape, rows[CHOSEN]["nodes"])
    rate_np, rate_ll = numpy_flops(), llama_flops(f32, shape, full["body"])
    f32.close()
    from ucs.models.llama_kernels import decide

    folder, build = decide()
    if folder is not None and (folder / "build.json").is_file():  # its CMake flags and ucs's patches
        build += f" (built with: {json.loads((folder / 'build.json').read_text())['flags'].strip()})"
    if a.unpatched is not None:  # the same build without ucs's patches, from a child process
        rows[UNPATCHED] = child_row(a, {"LLAMA_CPP_LIB_PATH": str(a.unpatched)})[0]
    if folder is not None:  # the AVX-512 build is in use: the portable build's row, from a child process
        rows[PORTABLE], rate_portable = child_row(a, {"UCS_LLAMA_KERNELS": "portable"})
        build += f"; the portable (AVX2) build's float32 copy: {rate_portable / 1e9:.0f} GFLOP/s"
    if not a.no_transformers:
        import torch

        torch.set_num_threads(1)
        hf = load_backbone("smollm2", engine="transformers", dtype="float32").load()
        rows["transformers, float32, every label scored"] = timed(hf, prompts, labels)
    page = render(a, rows, full, bnb, rate_np, rate_ll, rate_q41, cpu, load, build)
    print(page)
    if a.out:
        a.out.write_text("# Label scoring of one BANKING77 prompt on one core\n\n" + page)


def chosen_only(a: argparse.Namespace) -> None:
    """The child: branch and bound on the float copy, printed as JSON with llama.cpp's float32 rate."""

    from ucs.models import load_backbone

    prompts, labels = build_prompts(a.data_dir, a.prompts, a.k)
    f32 = load_backbone("smollm2", engine="llama", n_threads=1, weights="f32").load()
    shape = model_shape(f32)
    row = timed(f32, prompts, labels, choose=True)
    rate = llama_flops(f32, shape, 2.0 * (shape["params"] - shape["vocab"] * shape["d"]))
    print(json.dumps({"row": row, "rate": rate}))


def child_row(a: argparse.Namespace, set_env: Dict[str, str]) -> "tuple[Dict[str, object], float]":
    """:func:`chosen_only` in a child process with ``set_env``: the portable build
    (``UCS_LLAMA_KERNELS=portable``) or another folder of libraries (``LLAMA_CPP_LIB_PATH``)."""
    import subprocess

    cmd = [
        sys.executable,
        __file__,
        "--chosen-only",
        "--prompts",
        str(a.prompts),
        "--k",
        str(a.k),
        "--data-dir",
        str(a.data_dir),
    ] + (["--core", str(a.core)] if a.core is not None else [])
    env = dict(os.environ)
    env.pop("LLAMA_CPP_LIB_PATH", None)
    env.update(set_env)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    return got["row"], float(got["rate"])


#: The row of what ``ucs compare`` runs by default.
CHOSEN = "llama.cpp, f32 copy, branch and bound (ucs compare's default)"
#: The same on the portable (AVX2) build, where the AVX-512 one is in use.
PORTABLE = "llama.cpp portable (AVX2) build, f32 copy, branch and bound"
#: The same build without ucs's patches (``--unpatched``).
UNPATCHED = "llama.cpp, same build without ucs's patch, f32 copy, branch and bound"


def render(a, rows, full, bnb, rate_np, rate_ll, rate_q41, cpu, load, build) -> str:
    """The page: set-up, the table (each row against the limit of its own work), the limits."""
    ref = rows["llama.cpp, f32 copy, every label scored"]
    lines = [
        "| engine, weights, what | CPU s / prompt (median) | wall s (median) | each prompt, CPU s | trie "
        "nodes "
        "evaluated (median) | × its limit (numpy FLOP/s) | max abs(Δ) vs f32 scored, nats | same label |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        work = bnb if name in (CHOSEN, PORTABLE, UNPATCHED) else full
        delta = (
            "-"
            if r.get("scores") is None
            else f"{max(float(np.abs(x - y).max()) for x, y in zip(r['scores'], ref['scores'])):.1e}"
        )
        same = sum(int(x == y) for x, y in zip(r["picked"], ref["picked"]))
        each = ", ".join(f"{t:.2f}" for t in r["all"])
        nodes = f"{np.median(r['nodes']):.0f}" if name != "transformers, float32, every label scored" else "-"
        lines.append(
            f"| {name} | {r['s']:.2f} | {r['wall']:.2f} | {each} | {nodes} | "
            f"{r['s'] / (work['flops'] / rate_np):.2f} | {delta} | {same}/{len(r['picked'])} |"
        )
    for what, work in (("every label scored", full), ("branch and bound", bnb)):
        lines.append(
            f"| limit, {what}: {work['flops'] / 1e9:.0f} GFLOP at numpy's float32 rate "
            f"({rate_np / 1e9:.0f} GFLOP/s) | {work['flops'] / rate_np:.2f} | | | | 1.00 | | |"
        )
    pin = f" --core {a.core}" if a.core is not None else ""
    head = [
        f"- machine: {cpu}; one core (n_threads=1, torch threads "
        f"1{', pinned to core %d' % a.core if pin else ''});"
        f" load average at start {' '.join(load)}, at the end "
        f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])};"
        f" Python {sys.version.split()[0]}",
        f"- command: `python benchmarks/models/bench_label_scoring.py --prompts {a.prompts} --k {a.k}{pin}"
        + (
            " --unpatched FOLDER`, FOLDER holding the same build's libraries made with UCS_LLAMA_PATCHES=off"
            if a.unpatched is not None
            else "`"
        ),
        f"- size: {a.prompts} BANKING77 prompts after one warm-up each, {a.k} demonstrations, all 77 labels; "
        f"prompts {full['tokens']:.0f} SmolLM2 tokens (median), label trie {full['nodes']} nodes "
        f"({full['inner']} with children)",
        f"- work, every label scored: {full['new']:.0f} new prompt tokens (after the run shared with the "
        "previous "
        f"prompt) + {full['inner']} trie nodes with children = {full['positions']:.0f} positions × "
        f"{full['body'] / 1e6:.0f} MFLOP (2 × non-embedding parameters) + attention + the LM head at "
        f"{full['inner'] + 1} rows = {full['flops'] / 1e9:.0f} GFLOP",
        "- work, branch and bound: the same prompt tokens + the trie nodes it evaluated = "
        f"{bnb['positions']:.0f} "
        f"positions (median) = {bnb['flops'] / 1e9:.0f} GFLOP",
        f"- kernel rates on one core: numpy float32 matmul {rate_np / 1e9:.0f} GFLOP/s; llama.cpp's float32 "
        "copy "
        f"{rate_ll / 1e9:.0f} GFLOP/s, its Q4_1 file {rate_q41 / 1e9:.0f} GFLOP/s (a 64-token batch at "
        "position 0)",
        f"- llama.cpp build (`python -m ucs.models.llama_kernels`): {build}",
        "- times: CPU seconds of this process (`time.process_time`, one thread), which other jobs sharing "
        "the core do not inflate (the wall seconds beside them do)",
    ]
    return "\n".join(head + ["", *lines]) + "\n"


if __name__ == "__main__":
    main()

"""What a portable llama.cpp build costs against a native one, on a CPU where both run.

Each build (a llama-cpp-python wheel) is installed into its own folder and measured in its own child process
(``PYTHONPATH`` puts that folder first), in alternating rounds so that both see the same machine load:
embedding throughput of ``--n-texts`` BANKING77 utterances with SmolLM2-135M (texts/s) and scoring of all 77
labels for ``--queries`` 10-shot prompts (s/query). The page also compares what the builds compute: the
largest absolute difference between their embeddings and whether they predict the same label for every query.

    python benchmarks/models/bench_llama_builds.py --wheel portable=DIR_OR_WHL --wheel native=DIR_OR_WHL

Wheels come from ``scripts/install.sh`` (``~/.cache/ucs/wheels``); ``UCS_LLAMA_BUILD=native bash
scripts/install.sh`` builds the native one. Writes ``benchmarks/models/RESULTS_llama_builds.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_models import load_banking77, prompts  # noqa: E402


def worker(n_texts: int, n_queries: int, threads: int, out: str) -> None:
    """Runs in the child: measure the llama_cpp found first on sys.path."""
    import llama_cpp

    from ucs.models import load_backbone

    pool, train, test, labels = load_banking77(n_texts)
    texts = [r["text"] for r in pool]
    m = load_backbone("smollm2", engine="llama", n_threads=threads, max_length=64, context_length=2048).load()
    m.embed(texts[:16])  # warm up
    t = time.perf_counter()
    vectors = m.embed(texts)
    embed_s = time.perf_counter() - t
    ps, gold = prompts(train, test, labels, n_queries)
    conts = [" " + lab for lab in labels]
    m.score_continuations(ps[0], conts[:3])
    times, predicted = [], []
    for p in ps:
        t = time.perf_counter()
        s = m.score_continuations(p, conts)
        times.append(time.perf_counter() - t)
        predicted.append(labels[int(np.argmax(s))])
    np.save(out + ".npy", vectors)
    info = llama_cpp.llama_print_system_info().decode()
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(
            {
                "texts_per_s": len(texts) / embed_s,
                "s_per_query": float(np.mean(times)),
                "predicted": predicted,
                "gold": gold,
                "system_info": info,
                "module": llama_cpp.__file__,
            },
            fh,
        )


def install(wheel: str, target: Path) -> None:
    src = Path(wheel)
    whl = next(src.glob("*.whl")) if src.is_dir() else src
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(whl)],
        check=True,
    )


def measure(name: str, target: Path, args, tmp: Path, round_: int) -> Dict:
    out = tmp / f"{name}-{round_}.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(target), str(HERE.parents[1] / "src")]),
        UCS_LLAMA_PROBE="0",
    )
    subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            str(out),
            "--n-texts",
            str(args.n_texts),
            "--queries",
            str(args.queries),
            "--threads",
            str(args.threads),
        ],
        env=env,
        check=True,
    )
    res = json.loads(out.read_text())
    res["vectors"] = np.load(str(out) + ".npy")
    if not res["module"].startswith(str(target)):
        raise RuntimeError(f"{name}: measured {res['module']}, not the build installed in {target}")
    return res


def render(rows: Dict[str, List[Dict]], args, cmd: str) -> str:
    from ucs.utils.cpu import machine_signature

    names = list(rows)
    med = {
        n: {k: statistics.median(r[k] for r in rows[n]) for k in ("texts_per_s", "s_per_query")}
        for n in names
    }
    a, b = names[0], names[1]
    va, vb = rows[a][0]["vectors"].astype(np.float64), rows[b][0]["vectors"].astype(np.float64)
    diff = float(np.abs(va - vb).max() / np.abs(vb).max())
    cos = (va * vb).sum(1) / np.maximum(np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1), 1e-12)
    same = sum(x == y for x, y in zip(rows[a][0]["predicted"], rows[b][0]["predicted"]))
    lines = [
        "# llama.cpp builds: portable against native",
        "",
        f"Machine: {machine_signature()}, {os.cpu_count()} cores; Python {sys.version.split()[0]}; "
        f"{time.strftime('%Y-%m-%d')}. SmolLM2-135M-Instruct (Q4_1 GGUF), {args.threads} threads, "
        f"{args.n_texts} BANKING77 utterances embedded and {args.queries} ten-shot prompts scored over all "
        "77 labels, "
        f"{args.rounds} alternating rounds per build (medians).",
        "",
        f"Command: `{cmd}`",
        "",
        "Builds of llama-cpp-python 0.3.36 (`-DLLAVA_BUILD=OFF` in both): *portable* is what `bash "
        "scripts/install.sh` "
        "builds (`-DGGML_NATIVE=OFF` with SSE4.2, AVX, AVX2, FMA, F16C, BMI2: every x86-64 CPU since 2013); "
        "*native* is "
        "`UCS_LLAMA_BUILD=native` (`-DGGML_NATIVE=ON`, pip's default: this CPU's every instruction, AVX-512 "
        "here). A "
        "native build is the one that crashed on an Intel machine with AVX-512-FP16 and AMX; the portable "
        "flags "
        "are the set that ran there.",
        "",
        "| build | embed (texts/s) | 77-label scoring (s/query) | llama.cpp system info |",
        "|---|---|---|---|",
    ]
    for n in names:
        info = rows[n][0]["system_info"].split("CPU : ")[-1].strip().rstrip("|").strip().replace(" | ", ", ")
        lines.append(f"| {n} | {med[n]['texts_per_s']:.1f} | {med[n]['s_per_query']:.2f} | `{info}` |")
    lines += [
        "",
        f"- {a} / {b}: embedding {med[a]['texts_per_s'] / med[b]['texts_per_s']:.2f}× the throughput, "
        f"scoring {med[a]['s_per_query'] / med[b]['s_per_query']:.2f}× the time per query.",
        f"- What they compute: embeddings differ by at most {diff:.1e} of the largest coordinate (cosine "
        f"between a text's two embeddings ≥ {cos.min():.4f}, mean {cos.mean():.5f}: the native build's "
        "AVX-512/VNNI kernels round differently); the same predicted label on "
        f"{same} of {len(rows[a][0]['predicted'])} queries.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", action="append", default=[], help="NAME=PATH (a .whl or a folder holding one)")
    ap.add_argument("--n-texts", type=int, default=300)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "RESULTS_llama_builds.md"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.n_texts, args.queries, args.threads, args.worker)
    if len(args.wheel) != 2:
        ap.error("give two builds: --wheel portable=PATH --wheel native=PATH")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        targets = {}
        for spec in args.wheel:
            name, _, path = spec.partition("=")
            targets[name] = tmp / name
            install(path, targets[name])
        rows: Dict[str, List[Dict]] = {n: [] for n in targets}
        for r in range(args.rounds):
            for name, target in targets.items():
                rows[name].append(measure(name, target, args, tmp, r))
                print(name, r, {k: rows[name][-1][k] for k in ("texts_per_s", "s_per_query")}, flush=True)
    cmd = (
        "python benchmarks/models/bench_llama_builds.py "
        + " ".join(f"--wheel {s.partition('=')[0]}=…" for s in args.wheel)
        + f" --n-texts {args.n_texts} --queries {args.queries} --rounds {args.rounds}"
    )
    Path(args.out).write_text(render(rows, args, cmd), encoding="utf-8")
    print(Path(args.out).read_text())


if __name__ == "__main__":
    main()

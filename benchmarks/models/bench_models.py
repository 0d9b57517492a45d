"""Benchmark the model layer on real BANKING77 utterances.

Measures, per backend: embedding throughput (texts/s), the 1-nearest-neighbour same-label rate of
the embeddings (a pooling sanity check), label scoring time for a 10-shot prompt over all 77
labels (s/query), and greedy generation time (s/query). Results go to a JSON file (one entry per
measurement, so sections can be run separately) and are rendered as markdown.

Usage::

    PYTHONPATH=src python benchmarks/models/bench_models.py --sections all \
        --json benchmarks/models/results.json --out benchmarks/models/RESULTS.md
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "banking77"
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "banking77"


def load_banking77(n: int, seed: int = 0):
    with open(DATA / "train.csv", newline="", encoding="utf-8") as fh:
        train = list(csv.DictReader(fh))
    with open(DATA / "test.csv", newline="", encoding="utf-8") as fh:
        test = list(csv.DictReader(fh))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(train), n, replace=False)
    pool = [train[i] for i in idx]
    labels = sorted({r["category"] for r in train})
    return pool, train, test, labels


def nn_same_label(x: np.ndarray, y: list) -> float:
    z = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    s = z @ z.T
    np.fill_diagonal(s, -np.inf)
    nn = s.argmax(1)
    y = np.asarray(y)
    return float((y[nn] == y).mean())


def prompts(train, test, labels, n_queries: int, shots: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    demo = [train[i] for i in rng.choice(len(train), shots, replace=False)]
    head = "".join(f"Query: {r['text']}\nLabel: {r['category']}\n\n" for r in demo)
    qs = [test[i] for i in rng.choice(len(test), n_queries, replace=False)]
    return [head + f"Query: {q['text']}\nLabel:" for q in qs], [q["category"] for q in qs]


THREADS = {"n": None}


def record(results: list, **kw):
    kw.setdefault("threads", THREADS["n"])
    kw.setdefault("command", THREADS.get("command"))
    kw["load_avg_1m"] = round(os.getloadavg()[0], 2)
    results.append(kw)
    print(json.dumps(kw), flush=True)


def bench_embed(results, name, make, texts, y, repeats=1):
    from ucs.embedding import Embedder  # noqa: F401

    e = make()
    e.embed(texts[:8])  # load + warm up
    best = None
    for _ in range(repeats):
        t = time.perf_counter()
        x = e.embed(texts)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    record(
        results,
        section="embed",
        backend=name,
        n=len(texts),
        seconds=round(best, 2),
        texts_per_s=round(len(texts) / best, 1),
        nn_same_label=round(nn_same_label(x, y), 3),
        dim=int(x.shape[1]),
    )
    return e


def raw_llama_embed(results, path, texts, y, threads):
    import llama_cpp

    ll = llama_cpp.Llama(
        str(path),
        embedding=True,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    ll.embed(texts[:8])
    t = time.perf_counter()
    x = np.array([ll.embed(s) for s in texts], dtype=np.float32)
    dt = time.perf_counter() - t
    record(
        results,
        section="embed",
        backend="raw llama.cpp loop (Llama.embed per text)",
        n=len(texts),
        seconds=round(dt, 2),
        texts_per_s=round(len(texts) / dt, 1),
        nn_same_label=round(nn_same_label(x, y), 3),
        dim=int(x.shape[1]),
    )
    ll.close()


def naive_llama_scoring(m, prefix, conts):
    """Prefix once, then each label evaluated separately over the cached prefix (the baseline)."""
    return np.array([m.score_continuations(prefix, [c])[0] for c in conts])


def bench_score(results, name, m, ps, gold, labels, naive=False):
    conts = [" " + l for l in labels]
    m.score_continuations(ps[0], conts[:3])  # warm up
    times, hits = [], 0
    for p, g in zip(ps, gold):
        t = time.perf_counter()
        s = naive_llama_scoring(m, p, conts) if naive else m.score_continuations(p, conts)
        times.append(time.perf_counter() - t)
        hits += labels[int(np.argmax(s))] == g
    record(
        results,
        section="score",
        backend=name,
        queries=len(ps),
        s_per_query=round(float(np.mean(times)), 2),
        accuracy=f"{hits}/{len(ps)}",
        prompt_tokens=int(np.mean([m.count_tokens(p) for p in ps])),
    )


def bench_generate(results, name, m, ps):
    m.generate(ps[:1], max_new_tokens=4)
    t = time.perf_counter()
    out = m.generate(ps, max_new_tokens=16, stop=["\n"])
    dt = (time.perf_counter() - t) / len(ps)
    record(
        results,
        section="generate",
        backend=name,
        queries=len(ps),
        s_per_query=round(dt, 2),
        example=out[0][:40],
    )


def _find(results: list, section: str, prefix: str):
    for r in reversed(results):  # the newest measurement
        if r["section"] == section and r["backend"].startswith(prefix):
            return r
    return None


def _findings(results: list) -> list:
    """Ratios computed from the rows (what the targets of the model layer are checked against)."""
    out = []
    raw = _find(results, "embed", "raw llama.cpp")
    ours = _find(results, "embed", "SmolLM2 llama.cpp (ucs")
    hf = _find(results, "embed", "SmolLM2 transformers fp32 (ucs")
    if raw and ours:
        out.append(
            "- Embedding: ucs's packed llama.cpp path runs at "
            f"{ours['texts_per_s'] / raw['texts_per_s']:.0%} "
            f"of the raw per-text engine loop ({ours['texts_per_s']} vs {raw['texts_per_s']} texts/s; target "
            "≥ 90 %)."
        )
    if hf and ours:
        out.append(
            f"- The transformers engine embeds {hf['texts_per_s'] / ours['texts_per_s']:.1f}× faster than "
            "llama.cpp "
            f"here ({hf['texts_per_s']} vs {ours['texts_per_s']} texts/s); 1-NN same-label "
            f"{hf['nn_same_label']} vs {ours['nn_same_label']} (same model, fp32 vs Q4_1 arithmetic)."
        )
    naive = _find(results, "score", "SmolLM2 llama.cpp, naive")
    trie = _find(results, "score", "SmolLM2 llama.cpp, ucs")
    hfs = _find(results, "score", "SmolLM2 transformers fp32, ucs")
    if naive and trie:
        out.append(
            "- Label scoring (77 labels): the label-token trie is "
            f"{naive['s_per_query'] / trie['s_per_query']:.1f}× "
            f"faster than prefix-once/label-at-a-time on llama.cpp ({trie['s_per_query']} vs "
            f"{naive['s_per_query']} s/query; target ≤ 2 s)."
        )
    if hfs:
        out.append(
            f"- Label scoring on the transformers engine: {hfs['s_per_query']} s/query (prefix + trie in one "
            "masked "
            "pass)."
        )
    pairs = dict.fromkeys(
        r["backend"].rsplit(": ", 1)[0] for r in results if r["backend"].startswith("dtype pair")
    )
    for pair in (
        pairs
    ):  # one pair per CPU kind ("dtype pair" alone: the first machine, whose flags the rows do not record)
        where = pair[len("dtype pair") :].strip(" []") or "the first machine, with AMX and AVX-512-BF16"
        for sec, unit, better in (
            ("embed", "texts_per_s", max),
            ("score", "s_per_query", min),
            ("generate", "s_per_query", min),
        ):
            f32 = _find(results, sec, f"{pair}: SmolLM2 transformers fp32")
            b16 = _find(results, sec, f"{pair}: SmolLM2 transformers bf16")
            if f32 and b16:
                ratio = b16[unit] / f32[unit] if better is max else f32[unit] / b16[unit]
                speed = f"{ratio:.1f}× faster" if ratio >= 1 else f"{1 / ratio:.1f}× slower"
                out.append(
                    f"- bfloat16 vs float32 on the transformers engine ({where}), {sec}: {speed} "
                    f"({b16[unit]} vs {f32[unit]} {unit.replace('_', ' ')}; the pair runs back to back under "
                    "the same load, so read the ratio, not the absolute numbers)."
                )
    gl = _find(results, "generate", "SmolLM2 llama.cpp")
    gh = _find(results, "generate", "SmolLM2 transformers")
    if gl and gh:
        out.append(
            f"- Greedy generation: llama.cpp {gl['s_per_query']} s/query, transformers {gh['s_per_query']} "
            "s/query."
        )
    return (["## Findings", ""] + out + [""]) if out else []


def render(results: list, cmd: str) -> str:
    lines = [
        "# Model-layer benchmarks",
        "",
        "Real BANKING77 utterances from `../shared/data/banking77` on a **2-core CPU machine** (no GPU); the",
        "1-minute load average at each measurement is listed (2.0 = both cores busy; the benchmark itself",
        "uses both). llama.cpp rows use `llama threads` threads; torch uses its default (2).",
        "",
        "Commands (rows keep the command that measured them):",
        "",
    ]
    lines += [f"- `{c}`" for c in dict.fromkeys([r.get("command", cmd) for r in results] or [cmd])]
    lines += ["", f"Python {platform.python_version()}, {platform.machine()}.", ""]
    lines += _findings(results)
    emb = [r for r in results if r["section"] == "embed"]
    if emb:
        lines += [
            "## Embedding (pool of sampled train utterances)",
            "",
            "| backend | texts | texts/s | 1-NN same label | dim | llama threads | load |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['backend']} | {r['n']} | {r['texts_per_s']} | {r['nn_same_label']} | {r['dim']} | "
            f"{r.get('threads', 1)} | {r['load_avg_1m']} |"
            for r in emb
        ]
        lines.append("")
    sc = [r for r in results if r["section"] == "score"]
    if sc:
        lines += [
            "## Label scoring: 10-shot prompt, all 77 labels, log-likelihood argmax",
            "",
            "| backend | queries | s/query | prompt tokens | correct | llama threads | load |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['backend']} | {r['queries']} | {r['s_per_query']} | {r['prompt_tokens']} | "
            f"{r['accuracy']} | "
            f"{r.get('threads', 1)} | {r['load_avg_1m']} |"
            for r in sc
        ]
        lines.append("")
    ge = [r for r in results if r["section"] == "generate"]
    if ge:
        lines += [
            "## Greedy generation: same prompts, ≤ 16 new tokens, stop at newline",
            "",
            "| backend | queries | s/query | first output | load |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['backend']} | {r['queries']} | {r['s_per_query']} | `{r['example']!s}` | "
            f"{r['load_avg_1m']} |".replace("\n", " ")
            for r in ge
        ]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-texts", type=int, default=500)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--sections",
        default="all",
        help="comma list of: embed-llama, embed-hf, embed-st, score-llama, score-hf, gen, gemma, dtype, all",
    )
    ap.add_argument("--json", default="benchmarks/models/results.json")
    ap.add_argument("--out", default="benchmarks/models/RESULTS.md")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from ucs.embedding import load_retrieval_embedder
    from ucs.models import load_backbone
    from ucs.utils.weights import smollm2_gguf_path

    jpath = Path(args.json)
    results = json.loads(jpath.read_text()) if jpath.exists() else []
    cmd = "PYTHONPATH=src python benchmarks/models/bench_models.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if not args.render_only:
        secs = set(args.sections.split(","))
        allsec = "all" in secs
        pool, train, test, labels = load_banking77(args.n_texts)
        texts, y = [r["text"] for r in pool], [r["category"] for r in pool]
        ps, gold = prompts(train, test, labels, args.queries)
        t = args.threads
        THREADS["n"] = t
        THREADS["command"] = cmd
        if allsec or "embed-llama" in secs:
            raw_llama_embed(results, smollm2_gguf_path(), texts, y, t)
            bench_embed(
                results,
                "SmolLM2 llama.cpp (ucs, packed batches)",
                lambda: load_backbone("smollm2", engine="llama", n_threads=t),
                texts,
                y,
            )
        if allsec or "embed-hf" in secs:
            bench_embed(
                results,
                "SmolLM2 transformers fp32 (ucs, length-sorted batches of 64)",
                lambda: load_backbone("smollm2", engine="transformers"),
                texts,
                y,
            )
            bench_embed(
                results,
                "SmolLM2 transformers, layer mid (15), mean",
                lambda: load_backbone("smollm2", engine="transformers", layer="mid"),
                texts,
                y,
            )
        if allsec or "embed-st" in secs:
            bench_embed(
                results,
                "all-MiniLM-L6-v2 (sentence-transformers)",
                lambda: load_retrieval_embedder("all-minilm-l6-v2"),
                texts,
                y,
            )
            bench_embed(
                results,
                "all-mpnet-base-v2 (sentence-transformers)",
                lambda: load_retrieval_embedder("all-mpnet-base-v2"),
                texts,
                y,
            )
        if allsec or "score-llama" in secs or "gen" in secs:
            m = load_backbone("smollm2", engine="llama", n_threads=t)
            if allsec or "score-llama" in secs:
                bench_score(
                    results,
                    "SmolLM2 llama.cpp, naive (prefix once, one label at a time)",
                    m,
                    ps,
                    gold,
                    labels,
                    naive=True,
                )
                bench_score(
                    results, "SmolLM2 llama.cpp, ucs (label-token trie, one batch)", m, ps, gold, labels
                )
            if allsec or "gen" in secs:
                bench_generate(results, "SmolLM2 llama.cpp", m, ps)
            m.close()
        if allsec or "score-hf" in secs or "gen" in secs:
            m = load_backbone("smollm2", engine="transformers")
            if allsec or "score-hf" in secs:
                bench_score(
                    results,
                    "SmolLM2 transformers fp32, ucs (prefix + trie, one masked pass)",
                    m,
                    ps,
                    gold,
                    labels,
                )
            if allsec or "gen" in secs:
                bench_generate(results, "SmolLM2 transformers fp32", m, ps)
        if allsec or "dtype" in secs:
            # fp32 and bf16 back to back under the same conditions (bf16 uses AMX / AVX-512-BF16 where
            # present; the row names the CPU's kernel flags, which decide whether bf16 is native or emulated)
            from ucs.utils.cpu import cpu_details

            cpu = " ".join(cpu_details().get("kernel_flags", [])) or "unknown CPU"
            for dt, tag in (("float32", "fp32"), ("bfloat16", "bf16")):
                name = f"dtype pair [{cpu}]: SmolLM2 transformers {tag}"
                e = bench_embed(
                    results, name, lambda: load_backbone("smollm2", engine="transformers", dtype=dt), texts, y
                )
                bench_score(results, name, e, ps, gold, labels)
                bench_generate(results, name, e, ps)
        if allsec or "gemma" in secs:
            g = load_backbone("gemma3-270m", engine="llama", n_threads=t)
            bench_embed(results, "Gemma-3-270M llama.cpp (ucs)", lambda: g, texts, y)
            bench_score(results, "Gemma-3-270M llama.cpp, ucs (trie)", g, ps, gold, labels)
            bench_generate(results, "Gemma-3-270M llama.cpp", g, ps)
            g.close()
        jpath.parent.mkdir(parents=True, exist_ok=True)
        jpath.write_text(json.dumps(results, indent=1))
    Path(args.out).write_text(render(results, cmd) + "\n")


if __name__ == "__main__":
    main()

"""Label scoring of real ICL prompts with and without the transformers engine's prefix blocks, side by side.

For each backbone: ``--prompts`` BANKING77 prompts as the evaluation renders them (instruction with the 77
labels, ``--demos`` demonstrations drawn at random from the pool, a test query), every label scored in
likelihood mode, first with ``prefix_cache_tokens=0`` (one pass over prompt and label trie) and then with the
default cache; after one warm-up prompt each (which fills the cache with the shared instruction). Reports
seconds per prompt, the ratio, the largest |Δ| in nats and how many prompts pick the same label. Writes a
markdown table.

    python benchmarks/models/bench_prefix_blocks.py --prompts 8 \
        --out benchmarks/models/RESULTS_prefix_blocks.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def build_prompts(data_dir: Path, n: int, demos: int) -> "tuple[List[str], List[str]]":
    from ucs.data.public import load_banking77
    from ucs.evaluation.prompts import INTENT_FORMAT

    ds = load_banking77(data_dir)
    names = ds.label_names
    rng = np.random.default_rng(0)
    prompts = []
    for q in range(n + 1):
        idx = rng.choice(len(ds.pool), demos, replace=False)
        shown = [(ds.pool.texts[i], names[ds.pool.labels[i]]) for i in idx]
        prompts.append(INTENT_FORMAT.render(shown, ds.test.texts[q], names))
    return prompts, [INTENT_FORMAT.continuation(lab) for lab in names]


def measure(name: str, tokens: int, prompts: List[str], labels: List[str]) -> Dict[str, object]:
    from ucs.models import load_backbone

    bb = load_backbone(name, engine="transformers", dtype="float32", prefix_cache_tokens=tokens).load()
    bb.score_continuations_detailed(prompts[0], labels)  # warm-up (and the shared instruction's blocks)
    t = time.perf_counter()
    scores = [bb.score_continuations_detailed(p, labels).logprob for p in prompts[1:]]
    return {
        "s_per_prompt": (time.perf_counter() - t) / (len(prompts) - 1),
        "scores": scores,
        "tokens": len(bb.tokenize(prompts[1])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backbones", nargs="+", default=["smollm2", "gemma3-270m"])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--demos", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    prompts, labels = build_prompts(a.data_dir, a.prompts, a.demos)
    load = Path("/proc/loadavg").read_text().split()[:3]
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "unknown",
    )
    lines = [
        "| backbone | prompt tokens | single pass s/prompt | prefix blocks s/prompt | speed-up | max abs(Δ) "
        "nats "
        "| same label |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in a.backbones:
        off, on = measure(name, 0, prompts, labels), measure(name, 8192, prompts, labels)
        delta = max(float(np.abs(x - y).max()) for x, y in zip(off["scores"], on["scores"]))
        same = sum(int(np.argmax(x) == np.argmax(y)) for x, y in zip(off["scores"], on["scores"]))
        lines.append(
            f"| {name} | {on['tokens']} | {off['s_per_prompt']:.2f} | {on['s_per_prompt']:.2f} | "
            f"{off['s_per_prompt'] / on['s_per_prompt']:.2f}× | {delta:.1e} | {same}/{len(prompts) - 1} |"
        )
        print(lines[-1], flush=True)
    head = [
        f"- machine: {cpu}; torch threads {a.threads}; 1-minute load at start {' '.join(load)}; Python "
        f"{sys.version.split()[0]}",
        f"- command: `python benchmarks/models/bench_prefix_blocks.py --prompts {a.prompts} --demos "
        f"{a.demos} "
        f"--threads {a.threads}`",
        f"- size: {a.prompts} BANKING77 ICL prompts after one warm-up, {a.demos} demonstrations each, all "
        f"{len(labels)} labels scored (float32, transformers engine)",
        "",
    ]
    text = "\n".join(head + lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

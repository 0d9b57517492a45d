"""``ucs compare`` on BANKING77's ``train.csv`` with its defaults: minutes on this machine, and whether early
stopping recommends what the full grid recommends.

For each seed (the held-out draw), the command a user would type runs from a fresh cache folder and is timed
(wall seconds, the machine's load before and after). Then a copy of its folder is completed with
``--no-early-stop`` (every cell on every validation query; the answers early stopping already has are
replayed, not asked again: the folder's key leaves out the race's settings) and the two recommendations are
compared. Each finished seed is written to ``--json`` at once, so a rerun continues with the next seed.

    python benchmarks/compare/bench_speed.py --seeds 0,1,2 --work runs/bench_speed \\
        --json benchmarks/compare/RESULTS_speed.json --markdown benchmarks/compare/RESULTS_speed.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[2]


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _cpu() -> str:
    return next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "unknown",
    )


def _command(data: Path, out: Path, seed: int, extra: List[str]) -> List[str]:
    return [
        "ucs",
        "compare",
        str(data),
        "--text-column",
        "text",
        "--label-column",
        "category",
        "--out",
        str(out),
        "--seed",
        str(seed),
        "--yes",
        *extra,
    ]


def _run(cmd: List[str], env: Dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _summary(folder: Path) -> Dict[str, Any]:
    meta = json.loads((folder / "compare.json").read_text(encoding="utf-8"))
    race = meta["race"]
    return {
        "recommended": meta["recommended"]["cell"]
        if isinstance(meta["recommended"], dict)
        else meta["recommended"],
        "validated": meta["validated"]["cell"] if isinstance(meta["validated"], dict) else meta["validated"],
        "asked": race["asked"],
        "full": race["full"],
        "rounds": race["rounds"],
        "stopped": race["stopped"],
        "left": race["left"],
        "why": meta["why"],
        "test_prompts": sum(1 for r in (meta.get("test_rows") or [])),
    }


def one_seed(data: Path, work: Path, seed: int) -> Dict[str, Any]:
    """Time the default command from a fresh cache, then complete a copy without early stopping."""
    early, full, cache = work / f"seed{seed}-early", work / f"seed{seed}-full", work / f"seed{seed}-cache"
    for p in (early, full, cache):
        shutil.rmtree(p, ignore_errors=True)
    env = {**os.environ, "UCS_CACHE_DIR": str(cache)}
    before = _load()
    wall = _run(_command(data, early, seed, []), env)
    after = _load()
    shutil.copytree(early, full, ignore=shutil.ignore_patterns("index", ".lock"))
    _run(_command(data, full, seed, ["--no-early-stop"]), env)
    return {
        "seed": seed,
        "wall_s": wall,
        "load_before": before,
        "load_after": after,
        "early": _summary(early),
        "full": _summary(full),
    }


def render(rows: List[Dict[str, Any]], info: Dict[str, Any]) -> str:
    agree = sum(r["early"]["recommended"] == r["full"]["recommended"] for r in rows)
    lines = [
        "# `ucs compare` on BANKING77 with its defaults: minutes, and early stopping against the full grid",
        "",
        f"- machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}; load average before and "
        "after "
        "each timed run in the table (1, 5, 15 min)",
        "- command (timed, from an empty cache folder, so the pool's embeddings and the model's float copy "
        "are "
        "made inside the time): `ucs compare ../shared/data/banking77/train.csv --text-column text "
        "--label-column category --out runs/c --seed S --yes` — its defaults: 5 selectors (topk, random, "
        "mmr, "
        "labelaware, bsr) at k = 8, order vote_last, and the reference topk:8:selected (6 cells), 200 "
        "held-out "
        "queries (100 validate in rounds of 20, 100 test), SmolLM2 on llama.cpp (float32 copy, "
        "branch-and-bound "
        "label choice), 2 worker processes",
        "- full grid: a copy of the same folder completed with `--no-early-stop` (every cell on all 100 "
        "validation queries; answers already made are replayed)",
        f"- run: `python benchmarks/compare/bench_speed.py --seeds {info['seeds']}`",
        "- llama.cpp build (`python -m ucs.models.llama_kernels`): "
        f"{info.get('kernels', 'the portable build')}",
        "",
        "| seed | minutes (wall) | load before → after | prompts asked / full grid | rounds | stopped | "
        "recommended (early stopping) | recommended (full grid) | same |",
        "|---:|---:|---|---:|---:|---|---|---|---|",
    ]
    for r in rows:
        e, f = r["early"], r["full"]
        lines.append(
            f"| {r['seed']} | {r['wall_s'] / 60:.1f} | {r['load_before']} → {r['load_after']} | "
            f"{e['asked']} / {f['asked']} | {e['rounds']} | {e['stopped']} | {e['recommended']} | "
            f"{f['recommended']} | {'yes' if e['recommended'] == f['recommended'] else 'no'} |"
        )
    fast = sum(r["wall_s"] <= 600 for r in rows)
    lines += [
        "",
        f"Early stopping recommended what the full grid recommends on {agree} of {len(rows)} seeds. "
        f"The target (≤ 10 minutes wall on 2 cores of a quiet machine) was met on {fast} of {len(rows)} "
        "runs; "
        "the run's own two workers make a load average of about 2, and one clearly above 2 before or after a "
        "run "
        "means other jobs shared its cores.",
        "The prompts asked count the validation race only; each run also answers the test queries (100 for "
        "the reference, and 100 for the validated cell when it is another one).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "banking77" / "train.csv")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "bench_speed")
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("RESULTS_speed.json"))
    ap.add_argument("--markdown", type=Path, default=Path(__file__).with_name("RESULTS_speed.md"))
    ap.add_argument("--render", action="store_true", help="rewrite the page from --json and stop")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    done = json.loads(a.json.read_text()) if a.json.is_file() else {"rows": []}
    if a.render:
        a.markdown.write_text(render(done["rows"], {**done["info"], "seeds": a.seeds}))
        return
    from ucs.models.llama_kernels import decide

    info = {
        "cpu": _cpu(),
        "cores": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "seeds": a.seeds,
        "kernels": decide()[1],
    }
    for seed in seeds:
        if any(r["seed"] == seed for r in done["rows"]):
            continue
        done["rows"].append(one_seed(a.data, a.work, seed))
        done["info"] = info
        a.json.write_text(json.dumps(done, indent=1) + "\n")
        a.markdown.write_text(render(done["rows"], info))
        print(render(done["rows"], info))


if __name__ == "__main__":
    main()

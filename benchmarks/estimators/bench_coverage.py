"""Benchmark: Φ evaluation and greedy gains, ucs vs a straightforward recomputation.

The straightforward reference recomputes the paper estimator from scratch on every call —
spectrum with a Python Counter, binomial tail with ``scipy.stats.binom`` — the way the UCS
authors' code evaluates Φ(S ∪ {i}) for each DPP candidate.

Run:  PYTHONPATH=src python benchmarks/estimators/bench_coverage.py [--out benchmarks/estimators/RESULTS.md]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter

import numpy as np
from scipy.stats import binom

from ucs.estimators import UnseenCoverage


def reference_phi(cluster_ids_of_subset, t=5.0, m=20, alpha=1.0) -> float:
    """Φ recomputed from scratch (spectrum + scipy binomial tail on every call)."""
    counts = Counter(cluster_ids_of_subset)
    spec = Counter(counts.values())
    q = alpha / (t + alpha)
    u = 0.0
    for s in range(1, m + 1):
        fs = spec.get(s, 0)
        if fs:
            u += -((-t) ** s) * binom.sf(s - 1, m, q) * fs
    u = max(0.0, u) if np.isfinite(u) else 0.0
    return len(counts) + u


def timeit(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--pool", type=int, default=15000)
    ap.add_argument("--clusters", type=int, default=2000)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    ids = rng.zipf(1.6, size=args.pool) % args.clusters
    rows = []
    for name in ("paper", "binomial", "chao1"):
        cov = UnseenCoverage(name).fit(ids)
        for size in (5, 10, 20):
            subset = rng.choice(args.pool, size=size, replace=False)
            cand = rng.choice(np.setdiff1d(np.arange(args.pool), subset), size=50, replace=False)
            state = cov.new_state()
            for i in subset:
                state.add(i)
            t_phi = timeit(lambda: cov.phi(subset), 2000)
            t_gain = timeit(lambda: state.gains(cand), 2000)
            sub_ids = ids[subset].tolist()
            t_ref_phi = timeit(lambda: reference_phi(sub_ids), 200) if name == "paper" else float("nan")
            t_ref_gain = (
                timeit(lambda: [reference_phi(sub_ids + [ids[j]]) - reference_phi(sub_ids) for j in cand], 5)
                if name == "paper"
                else float("nan")
            )
            if name == "paper":  # the two implementations agree
                ref = np.array([reference_phi(sub_ids + [ids[j]]) - reference_phi(sub_ids) for j in cand])
                assert np.allclose(ref, state.gains(cand), rtol=1e-9, atol=1e-6)
            rows.append((name, size, t_phi, t_gain, t_ref_phi, t_ref_gain))

    lines = [
        "# Coverage estimator benchmark",
        "",
        "Command: `PYTHONPATH=src python benchmarks/estimators/bench_coverage.py --out "
        "benchmarks/estimators/RESULTS.md`",
        "",
        f"Machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
        "2 CPU cores (shared). Pool of "
        f"{args.pool} items in Zipf-sized clusters; best of 5 timing rounds.",
        "",
        "*reference* recomputes the paper estimator from scratch on every call (Counter spectrum + "
        "`scipy.stats.binom.sf`), the way the authors' DPP+UCS evaluates each candidate. *ucs Φ* recomputes "
        "Φ from the subset's indices; *ucs gains(50)* is one vectorised call of `CoverageState.gains` over "
        "50 "
        "candidates (exactly equal to recomputation).",
        "",
        "| estimator | |S| | ucs Φ (µs) | ucs gains(50) (µs) | gains(50) / one Φ | reference Φ (µs) | "
        "reference 50 gains (µs) | speed-up on 50 gains |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, size, t_phi, t_gain, t_rp, t_rg in rows:
        ref_cols = (
            (f"{t_rp * 1e6:.1f} | {t_rg * 1e6:.0f} | {t_rg / t_gain:.0f}×")
            if name == "paper"
            else "– | – | –"
        )
        lines.append(
            f"| {name} | {size} | {t_phi * 1e6:.1f} | {t_gain * 1e6:.1f} | {t_gain / t_phi:.2f} | {ref_cols} "
            "|"
        )
    paper10 = [r for r in rows if r[0] == "paper" and r[1] == 10][0]
    lines += [
        "",
        f"Target (issue): the vectorised gain over 50 candidates costs less than one recomputed Φ. "
        f"At |S| = 10 (paper estimator) gains(50) costs {paper10[3] * 1e6:.1f} µs = "
        f"{paper10[3] / paper10[4]:.3f}× one reference Φ ({paper10[4] * 1e6:.1f} µs) and "
        f"{paper10[3] / paper10[2]:.2f}× one ucs Φ ({paper10[2] * 1e6:.1f} µs).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from ucs.utils.io import atomic_write_text

        atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()

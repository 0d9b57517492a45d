"""Render the benchmark JSON files into markdown tables (pasted into RESULTS.md).

Usage::

    PYTHONPATH=src python benchmarks/clustering/make_results.py .cache/bench/clustering/bench_15k.json ...
"""

from __future__ import annotations

import json
import sys

STAGES = ["pca", "dictionary_fit", "dictionary_transform", "knn", "dbscan"]


def comparison(r: dict) -> str:
    out = [f"### {r['input']} ({' × '.join(map(str, r['shape']))}, {r['dtype']})", ""]
    out.append("| run | total s | " + " | ".join(STAGES) + " | clusters | dict steps |")
    out.append("|---|---:|" + "---:|" * len(STAGES) + "---:|---:|")
    for key in ("sklearn_seed0", "sklearn_seed1", "fast_seed0", "fast_seed1"):
        x = r[key]
        st = " | ".join(f"{x['stages_s'].get(s, 0.0):.2f}" for s in STAGES)
        out.append(
            f"| {key.replace('_', ' ')} | {x['total_s']:.2f} | {st} | {x['n_clusters']} | {x['dict_steps']} |"
        )
    out.append(f"| fast seed0 (repeat) | {r['fast_seed0_repeat_total_s']:.2f} |" + " |" * (len(STAGES) + 2))
    out += ["", f"Speed-up (median sklearn / median fast): **{r['speedup_median']:.1f}×**", ""]
    out += ["| agreement | ARI |", "|---|---:|"]
    for k, v in r["ari"].items():
        out.append(f"| {k.replace('_', ' ')} | {v:.3f} |")
    if "ari_vs_gold" in r:
        out.append(
            "| vs gold / planted labels | "
            + ", ".join(f"{k} {v:.3f}" for k, v in r["ari_vs_gold"].items())
            + " |"
        )
    out += [
        "",
        "| q | re-cut ms (median of 5) | fresh DBSCAN s | ARI re-cut vs fresh DBSCAN | clusters |",
        "|---:|---:|---:|---:|---:|",
    ]
    for q, x in r["recut"].items():
        out.append(
            f"| {q} | {x['recut_ms_median']:.1f} | {x['fresh_dbscan_s']:.2f} | "
            f"{x['ari_vs_fresh_dbscan']:.3f} | {x['n_clusters']} |"
        )
    out.append(f"\nPeak RSS of the benchmark process: {r['peak_rss_gib_process']:.2f} GiB.")
    return "\n".join(out)


def large(r: dict) -> str:
    out = [f"### {r['input']}", "", "| stage | seconds |", "|---|---:|"]
    for s, v in r["stages_s"].items():
        out.append(f"| {s} | {v:.1f} |")
    out.append(f"| **total fit** | **{r['total_s']:.1f}** |")
    out += [
        "",
        f"- clusters: {r['n_clusters']}, eps: {r['eps']:.4g}, dictionary steps: {r['dict_steps']}, exact "
        f"kNN: {r['knn_exact']}",
        f"- peak RSS: {r['peak_rss_gib']:.2f} GiB (after generating the input: "
        f"{r['peak_rss_gib_after_generation']:.2f} GiB)",
        f"- HNSW recall@{20} against exact search (2,000 sampled rows): {r['hnsw_recall_at_k']:.4f}",
        "- eps-pair recall (exact eps-neighbours of 2,000 sampled rows that share a cluster): "
        f"{r['eps_pair_recall']:.4f} "
        f"over {r['eps_pairs_sampled']} pairs",
        f"- dense rows completed exactly: {r['dense_rows_completed']}",
        "- re-cuts: "
        + ", ".join(
            f"q={x['q']}: {x['first_recut_s']:.2f} s ({x['n_clusters']} clusters)" for x in r["recut"]
        ),
        f"- ARI vs planted clusters: {r['ari_vs_planted']:.3f}",
    ]
    return "\n".join(out)


def main() -> None:
    for path in sys.argv[1:]:
        r = json.load(open(path))
        print(large(r) if "stages_s" in r and "sklearn_seed0" not in r else comparison(r))
        if "spectra" in r:
            for q, sp in r["spectra"].items():
                print(f"\n#### default clusterer, q = {q}\n\n{sp['markdown']}")
        print()


if __name__ == "__main__":
    main()

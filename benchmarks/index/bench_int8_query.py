"""Would an int8 query encoder make `ucs serve` faster without changing what it selects?

The served index embeds every query with all-MiniLM-L6-v2 through ONNX Runtime in float32
(``ucs.embedding.onnx_query``), and that forward pass bounds the 8-client latency
(``benchmarks/index/RESULTS_serve.md``). A call has a fixed cost of about 2 ms, and the transformer's float32
weights (about 42 MB) do not fit this machine's L3 cache, so ONNX Runtime's dynamic int8 quantisation (weights
int8 per channel, activations quantised per call) is the obvious lever. This script measures both sides of it
in one run:

- milliseconds per call for 1 query and for 8 queries, float32 and int8 alternated, median of ``--reps``;
- how far the int8 vectors move: cosine to the float32 ONNX vector of the same query (min and mean);
- what that does to a selection: the top-k pool examples by cosine (TopK, what the load test serves) over
  the first 10,000 BANKING77 training utterances, embedded by sentence-transformers (as the index stores
  them), for ``--queries`` BANKING77 test utterances: mean overlap, identical sets, identical order.

Usage (benchmarks/index/RESULTS_int8_query.md was produced with this)::

    PYTHONPATH=src python benchmarks/index/bench_int8_query.py --data-dir ../shared/data \
        --markdown benchmarks/index/RESULTS_int8_query.md
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from onnxruntime.quantization import QuantType, quantize_dynamic
from sentence_transformers import SentenceTransformer

from ucs.data.public import load_banking77
from ucs.embedding.onnx_query import OnnxQueryEncoder, onnx_encoder
from ucs.utils.cpu import cpu_model
from ucs.utils.weights import all_minilm_l6_v2_dir


def _ms(call: Callable[[], object]) -> float:
    """Wall milliseconds of one ``call()``."""
    t = time.perf_counter()
    call()
    return (time.perf_counter() - t) * 1e3


def timings(encoders: dict, queries: Sequence[str], reps: int) -> dict:
    """Median ms per call of each encoder, for 1 and 8 queries, the encoders alternated call group by call
    group so that the machine's phases fall on both."""
    got: dict = {(name, n): [] for name in encoders for n in (1, 8)}
    for r in range(reps):
        for name, enc in encoders.items():
            one = queries[r % len(queries)]
            eight = [queries[(8 * r + j) % len(queries)] for j in range(8)]
            got[(name, 1)].append(_ms(lambda: enc.encode([one])))
            got[(name, 8)].append(_ms(lambda: enc.encode(eight)))
    return {key: statistics.median(v) for key, v in got.items()}


def agreement(pool: np.ndarray, a: np.ndarray, b: np.ndarray, k: int) -> dict:
    """TopK of query vectors ``a`` and ``b`` (n, d) over ``pool`` (N, d), all ℓ2-normalised."""
    ta = np.argsort(-(a @ pool.T), axis=1, kind="stable")[:, :k]
    tb = np.argsort(-(b @ pool.T), axis=1, kind="stable")[:, :k]
    overlap = [len(set(x) & set(y)) / k for x, y in zip(ta, tb)]
    cos = np.sum(a * b, axis=1)
    return {
        "cos_min": float(cos.min()),
        "cos_mean": float(cos.mean()),
        "overlap": float(np.mean(overlap)),
        "same_set": int(sum(o == 1.0 for o in overlap)),
        "same_order": int(sum(bool(np.array_equal(x, y)) for x, y in zip(ta, tb))),
    }


def main(argv: Sequence[str] = ()) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--pool", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args(list(argv) or None)

    ds = load_banking77(args.data_dir)
    pool_texts, queries = list(ds.pool.texts[: args.pool]), list(ds.test.texts[: args.queries])
    st = SentenceTransformer(str(all_minilm_l6_v2_dir()), device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        f32 = onnx_encoder(st, "bench-int8-query", tmp, threads=1, torch_encode=st.encode)
        if isinstance(f32, str):
            sys.exit(f"no ONNX encoder: {f32}")
        int8_path = Path(tmp) / "model.int8.onnx"
        quantize_dynamic(str(f32.path), str(int8_path), weight_type=QuantType.QInt8, per_channel=True)
        int8 = OnnxQueryEncoder(int8_path, f32.tokenizer, f32.pooling, f32.normalize, f32.max_length, 1)
        sizes = {"float32": f32.path.stat().st_size, "int8": int8_path.stat().st_size}
        ms = timings({"float32": f32, "int8": int8}, queries, args.reps)
        qa = np.concatenate([f32.encode([q]) for q in queries])
        qb = np.concatenate([int8.encode([q]) for q in queries])
    pool = np.asarray(st.encode(pool_texts, batch_size=64, normalize_embeddings=True), dtype=np.float32)
    agree = agreement(pool, qa, qb, args.k)
    page = render(args, ms, sizes, agree)
    print(page)
    if args.markdown:
        args.markdown.write_text(page, encoding="utf-8")


def render(args: argparse.Namespace, ms: dict, sizes: dict, agree: dict) -> str:
    rows = [
        f"| {name} | {sizes[name] / 1e6:.0f} | {ms[(name, 1)]:.2f} | {ms[(name, 8)]:.2f} |"
        for name in ("float32", "int8")
    ]
    n = args.queries
    return "\n".join(
        [
            "# An int8 query encoder for `ucs serve`: faster, but it changes the selections",
            "",
            f"- machine: {cpu_model() or '?'}, one ONNX Runtime thread; Python {platform.python_version()}",
            "- command: `PYTHONPATH=src python benchmarks/index/bench_int8_query.py "
            "--data-dir ../shared/data --markdown benchmarks/index/RESULTS_int8_query.md`",
            "- size: all-MiniLM-L6-v2 exported as `ucs serve` does; int8 = ONNX Runtime's "
            "`quantize_dynamic` "
            f"(QInt8 weights, per channel); {args.reps} calls of each kind, float32 and int8 alternated; "
            f"{n} BANKING77 test utterances as queries, TopK k = {args.k} over the first {args.pool:,} "
            "training utterances (embedded by sentence-transformers, as the index stores them)",
            "",
            "| query encoder | file (MB) | 1 query, ms (median) | 8 queries, ms (median) |",
            "|---|---:|---:|---:|",
            *rows,
            "",
            "| int8 against float32 | value |",
            "|---|---:|",
            "| cosine of a query's two vectors, least / mean | "
            f"{agree['cos_min']:.4f} / {agree['cos_mean']:.5f} |",
            f"| top-{args.k} overlap, mean | {agree['overlap']:.3f} |",
            f"| queries with the same top-{args.k} set | {agree['same_set']} of {n} |",
            f"| queries with the same top-{args.k} in the same order | {agree['same_order']} of {n} |",
            "",
            f"Reading: int8 is {ms[('float32', 1)] / ms[('int8', 1)]:.1f}× faster for one query and "
            f"{ms[('float32', 8)] / ms[('int8', 8)]:.1f}× for eight, but the served selection would change "
            f"for {n - agree['same_set']} of {n} queries (the set) and {n - agree['same_order']} "
            "(the order). "
            "`ucs serve` answers what `SelectorIndex.select` answers in process, so it keeps the float32 "
            "encoder; an int8 option would need its own identity and its own evaluation.",
            "",
        ]
    )


if __name__ == "__main__":
    main(sys.argv[1:])

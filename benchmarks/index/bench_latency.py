"""Query latency as an application feels it: LangChain ``select_examples`` end to end while another process
keeps one core busy, the first call after ``SelectorIndex.load`` with and without warmup, and
``SelectorIndex.select`` alone (embedding given) against OpenICL's DPP.

Usage (benchmarks/index/RESULTS_latency.md was produced with this)::

    PYTHONPATH=src python benchmarks/index/bench_latency.py --data-dir ../shared/data \
        --markdown benchmarks/index/RESULTS_latency.md

Parts
- ``langchain``: 2,000 BANKING77 training utterances (seeded sample) as examples, all-MiniLM-L6-v2, k = 8;
  BANKING77 test utterances as queries; each query runs every selector once in a fresh random order while a
  ``python -c 'while True: pass'`` child (started here, stopped at the end) keeps one of the 2 cores busy.
  Selectors: ``UCSExampleSelector`` (method ``topk``, the default, and ``dpp+ucs``) and LangChain's
  ``SemanticSimilarityExampleSelector`` over ``InMemoryVectorStore`` (the anchor) with the same model behind
  LangChain's ``Embeddings`` interface (queries embedded with the same thread setting, so the difference is
  the selection). A second, short group repeats ucs TopK with torch's default threads (one per core).
- ``first_call``: a fresh embedder, ``SelectorIndex.load`` of the saved TopK index with ``warmup=True``
  (default) and ``warmup=False``, then the first ``select_examples``.
- ``select``: ``SelectorIndex.select(query_embeddings=q, k=8)`` for TopK, DPP and DPP+UCS on the 15,000
  CLINC150 in-scope training utterances (15,000 × 384, MiniLM) against the OpenICL 0.1.8 DPP re-implementation
  of ``bench_index.py`` (50 candidates, k = 8), same query embeddings, rotated; 1 BLAS / OpenMP thread. TopK
  and DPP again with ``candidate_search="hnsw"`` (faiss HNSW, M = 32, efSearch 128), and how often their
  selections equal the exact ones.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_index import OpenICLDPP, machine  # noqa: E402  (the existing OpenICL re-implementation)


def stats(times: List[float]) -> Dict[str, float]:
    t = np.asarray(times) * 1e3
    return {"median_ms": float(np.median(t)), "p95_ms": float(np.percentile(t, 95)), "n": int(t.size)}


def rotate(paths: Dict[str, Callable[[int], Any]], n: int, warm: int = 10) -> Dict[str, Dict[str, float]]:
    """Every query through every path once, in a fresh seeded random order; median and p95 per path."""
    for i in range(warm):
        for f in paths.values():
            f(i)
    rng = np.random.default_rng(0)
    times: Dict[str, List[float]] = {k: [] for k in paths}
    for i in range(n):
        for name in rng.permutation(list(paths)).tolist():
            t = time.perf_counter()
            paths[name](warm + i)
            times[name].append(time.perf_counter() - t)
    return {k: stats(v) for k, v in times.items()}


def solo(paths: Dict[str, Callable[[int], Any]], n: int, warm: int = 10) -> Dict[str, Dict[str, float]]:
    """Each path alone over ``n`` queries (after ``warm``), one path after the other — what an application
    that serves only that path sees (the rotation's other paths no longer evict its caches); median and
    p95."""
    out = {}
    for name, f in paths.items():
        for i in range(warm):
            f(i)
        times = []
        for i in range(n):
            t = time.perf_counter()
            f(warm + i)
            times.append(time.perf_counter() - t)
        out[name] = stats(times)
    return out


def busy_core() -> subprocess.Popen:
    """A child process that keeps one core busy until terminated."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def langchain_embeddings(emb: Any) -> Any:
    """The ucs MiniLM embedder behind LangChain's ``Embeddings`` interface (for the anchor)."""
    from langchain_core.embeddings import Embeddings

    class MiniLMEmbeddings(Embeddings):
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return emb.embed(texts).tolist()

        def embed_query(self, text: str) -> List[float]:
            return emb.embed_queries([text])[0].tolist()

    return MiniLMEmbeddings()


def part_langchain(args: argparse.Namespace, out: Dict[str, Any]) -> None:
    from langchain_core.example_selectors import SemanticSimilarityExampleSelector
    from langchain_core.vectorstores import InMemoryVectorStore

    from ucs.data.public import load_banking77
    from ucs.embedding.sbert import load_retrieval_embedder
    from ucs.index import SelectorIndex
    from ucs.integrations.langchain import UCSExampleSelector

    ds = load_banking77(args.data_dir)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(ds.pool), 2000, replace=False)
    names = ds.label_names
    examples = [{"text": ds.pool.texts[i], "label": names[int(ds.pool.labels[i])]} for i in pick.tolist()]
    queries = [ds.test.texts[i] for i in rng.choice(len(ds.test), 1000, replace=False).tolist()]
    emb = load_retrieval_embedder("all-minilm-l6-v2").load()
    emb_torch = load_retrieval_embedder("all-minilm-l6-v2", query_backend="torch").load()
    kw = dict(input_keys=["text"], cache_dir=args.cache_dir)
    ucs_topk = UCSExampleSelector.from_examples(examples, emb, k=8, method="topk", **kw)
    ucs_topk_torch = UCSExampleSelector.from_examples(examples, emb_torch, k=8, method="topk", **kw)
    ucs_dpp = UCSExampleSelector.from_examples(examples, emb, k=8, method="dpp+ucs", **kw)
    anchor = SemanticSimilarityExampleSelector.from_examples(
        examples, langchain_embeddings(emb_torch), InMemoryVectorStore, k=8, input_keys=["text"]
    )
    paths = {
        "ucs_topk": lambda i: ucs_topk.select_examples({"text": queries[i]}),
        "ucs_dpp_ucs": lambda i: ucs_dpp.select_examples({"text": queries[i]}),
        "langchain_semantic": lambda i: anchor.select_examples({"text": queries[i]}),
        "embed_only": lambda i: emb.embed_queries([queries[i]]),
        "ucs_topk_torch_queries": lambda i: ucs_topk_torch.select_examples({"text": queries[i]}),
        "embed_only_torch": lambda i: emb_torch.embed_queries([queries[i]]),
    }
    emb.embed_queries([queries[0]])
    out["query_backend"] = {"default": emb.query_backend_, "why_not_onnx": emb.query_backend_reason_}
    busy = busy_core() if args.busy else None
    try:
        time.sleep(1.0)
        out["loadavg_langchain_start"] = list(os.getloadavg())
        out["langchain"] = rotate(paths, args.queries)
        out["langchain_solo"] = solo(paths, args.queries)
        default_threads = load_retrieval_embedder(
            "all-minilm-l6-v2", query_threads=len(os.sched_getaffinity(0))
        )
        default_threads.load()
        ucs_default = UCSExampleSelector.from_examples(examples, default_threads, k=8, method="topk", **kw)
        out["langchain_default_threads"] = rotate(
            {"ucs_topk_torch_default_threads": lambda i: ucs_default.select_examples({"text": queries[i]})},
            args.default_thread_queries,
            warm=3,
        )
        out["loadavg_langchain_end"] = list(os.getloadavg())

        first: Dict[str, List[float]] = {"warmup": [], "no_warmup": []}
        load_s: Dict[str, List[float]] = {"warmup": [], "no_warmup": []}
        with tempfile.TemporaryDirectory() as tmp:
            ucs_topk.index.save(Path(tmp) / "ix")
            for rep in range(args.first_call_reps):
                for mode in ("warmup", "no_warmup"):
                    fresh = load_retrieval_embedder("all-minilm-l6-v2")
                    t = time.perf_counter()
                    ix = SelectorIndex.load(Path(tmp) / "ix", embedder=fresh, warmup=(mode == "warmup"))
                    load_s[mode].append(time.perf_counter() - t)
                    sel = UCSExampleSelector(ix, k=8, input_keys=["text"])
                    t = time.perf_counter()
                    sel.select_examples({"text": queries[rep]})
                    first[mode].append(time.perf_counter() - t)
        out["first_call"] = {m: stats(v) for m, v in first.items()}
        out["load_call"] = {m: stats(v) for m, v in load_s.items()}
    finally:
        if busy is not None:
            busy.terminate()
            busy.wait()
    out["busy_pid"] = None if busy is None else busy.pid


def part_select(args: argparse.Namespace, out: Dict[str, Any]) -> None:
    import faiss
    from threadpoolctl import threadpool_limits

    from ucs.data.public import load_clinc150
    from ucs.embedding.sbert import load_retrieval_embedder
    from ucs.index import SelectorIndex

    faiss.omp_set_num_threads(1)
    ds = load_clinc150(args.data_dir)
    names = ds.label_names
    examples = [{"text": t, "intent": names[int(y)]} for t, y in zip(ds.pool.texts, ds.pool.labels)]
    rng = np.random.default_rng(0)
    qtexts = [ds.test.texts[i] for i in rng.choice(len(ds.test), args.queries, replace=False).tolist()]
    emb = load_retrieval_embedder("all-minilm-l6-v2")
    kw = dict(input_keys=["text"], output_key="intent", cache_dir=args.cache_dir, random_state=0)
    ix = {}
    for m, search in [
        ("topk", "exact"),
        ("dpp", "exact"),
        ("dpp+ucs", "exact"),
        ("topk", "hnsw"),
        ("dpp", "hnsw"),
    ]:
        name = m if search == "exact" else f"{m}@hnsw"
        saved = Path(args.cache_dir) / "latency_indexes" / name.replace("+", "_").replace("@", "_")
        if (saved / "index.json").exists():
            ix[name] = SelectorIndex.load(saved, embedder=emb, warmup=False)
        else:
            ix[name] = SelectorIndex(emb, m, candidate_search=search, **kw).fit(examples)
            ix[name].save(saved)
    Q = np.ascontiguousarray(emb.embed(qtexts), dtype=np.float32)
    openicl = OpenICLDPP(ix["dpp"].embeddings_, candidate_num=50, ice_num=8)
    with threadpool_limits(limits=1):
        out["loadavg_select_start"] = list(os.getloadavg())
        paths = {
            "openicl_dpp": lambda i: openicl(Q[i % len(Q)]),
            "ucs_topk": lambda i: ix["topk"].select(query_embeddings=Q[i % len(Q)], k=8),
            "ucs_dpp": lambda i: ix["dpp"].select(query_embeddings=Q[i % len(Q)], k=8),
            "ucs_dpp_ucs": lambda i: ix["dpp+ucs"].select(query_embeddings=Q[i % len(Q)], k=8),
            "ucs_topk_hnsw": lambda i: ix["topk@hnsw"].select(query_embeddings=Q[i % len(Q)], k=8),
            "ucs_dpp_hnsw": lambda i: ix["dpp@hnsw"].select(query_embeddings=Q[i % len(Q)], k=8),
        }
        out["select"] = rotate(paths, args.queries - 10)  # each call after the other paths evicted its caches
        out["select_solo"] = solo(
            paths, args.queries - 10
        )  # each path alone: an index that serves one selector
        out["loadavg_select_end"] = list(os.getloadavg())
        out["hnsw_agreement"] = {m: _agreement(ix[m], ix[f"{m}@hnsw"], Q) for m in ("topk", "dpp")}
        profiles = {}
        for m in ("topk", "dpp"):
            pr = cProfile.Profile()
            pr.enable()
            for i in range(200):
                ix[m].select(query_embeddings=Q[i % len(Q)], k=8)
            pr.disable()
            buf = io.StringIO()
            pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(8)
            profiles[m] = _portable_paths(buf.getvalue())
        out["profiles"] = profiles
    out["select_pool"] = list(ix["dpp"].embeddings_.shape)


def _agreement(exact: Any, approx: Any, Q: np.ndarray) -> Dict[str, float]:
    """How often the approximate (HNSW) index chooses what the exact one does, over the rows of ``Q``: the
    mean share of the k chosen demonstrations in common, and the share of queries with the identical ordered
    selection."""
    common, same = [], []
    for q in Q:
        a = list(exact.select(query_embeddings=q, k=8).indices)
        b = list(approx.select(query_embeddings=q, k=8).indices)
        common.append(len(set(a) & set(b)) / len(a))
        same.append(a == b)
    return {"mean_common": float(np.mean(common)), "identical": float(np.mean(same)), "queries": int(len(Q))}


def _portable_paths(text: str) -> str:
    """A profile's file names without this machine's folders: the repository's relative to its root, installed
    packages' from ``site-packages/``."""
    root = str(Path(__file__).resolve().parents[2]) + "/"
    return re.sub(r"\S*/site-packages/", "site-packages/", text.replace(root, ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--default-thread-queries", type=int, default=30)
    ap.add_argument("--first-call-reps", type=int, default=3)
    ap.add_argument("--cache-dir", default=".cache/bench/index")
    ap.add_argument("--out", default="benchmarks/index/results_latency.json")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--parts", nargs="+", default=["langchain", "select"])
    ap.add_argument(
        "--no-busy",
        dest="busy",
        action="store_false",
        help="start no busy child: another process already keeps one core busy (say which on the page)",
    )
    args = ap.parse_args()
    out: Dict[str, Any] = {
        "command": " ".join(["python"] + sys.argv),
        "machine": machine(),
        "proc_loadavg_start": Path("/proc/loadavg").read_text().strip(),
    }
    if "langchain" in args.parts:
        part_langchain(args, out)
    if "select" in args.parts:
        part_select(args, out)
    out["proc_loadavg_end"] = Path("/proc/loadavg").read_text().strip()
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "profiles"}, indent=1))
    for k, v in out.get("profiles", {}).items():
        print(k, v)


if __name__ == "__main__":
    main()

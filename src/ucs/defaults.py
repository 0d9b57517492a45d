"""The library's default settings, each defined once.

The classes that own a setting take its default from here (:class:`ucs.clustering.LatentClusterer`,
:class:`ucs.clustering.JointLatentClusterer`, :class:`ucs.selectors.UCSPrior`, the sharded clustering of
:mod:`ucs.distributed`), and so do :class:`ucs.pipeline.PipelineConfig`'s fields; command-line options
default to "unset" and let the class or the configuration fill them. This module imports nothing from ucs (nor
scikit-learn), so any floor of the package may read it without loading scikit-learn.

Two clusterings and two estimators have names here, because the classes and the pipeline default to different
ones: :data:`PAPER_CLUSTERING_METHOD` and :data:`PAPER_ESTIMATOR` are the classes' own defaults (a bare
``LatentClusterer()`` or ``UCSPrior(ids)`` is the paper's), :data:`DEFAULT_COVERAGE` is what the project's
configuration uses (``PipelineConfig()``, the ``default`` preset, :class:`ucs.SelectorIndex`).

The paper's own table values (Table 8) are data, kept in :data:`ucs.pipeline.presets.COMMON`; they happen
to equal several of these defaults.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "PAPER_CLUSTERING_METHOD",
    "DEFAULT_CLUSTERING_METHOD",
    "PCA_DIM",
    "N_ATOMS",
    "CODING",
    "RIDGE_ALPHA",
    "OMP_N_NONZERO",
    "DICT_BATCH_SIZE",
    "DICT_MAX_ITER",
    "DBSCAN_K",
    "DBSCAN_Q",
    "MIN_SAMPLES",
    "HDBSCAN_MIN_CLUSTER_SIZE",
    "METHOD",
    "FIXED_METHOD",
    "COMPARE_SELECTORS",
    "COMPARE_WEIGHTS",
    "ORDER",
    "APPLICATION_ORDER",
    "application_order",
    "MMR_LAMBDA",
    "MMR_FETCH_K",
    "LABEL_MODE",
    "LABEL_CAP",
    "TOPK_FLOOR",
    "PAPER_ESTIMATOR",
    "DEFAULT_ESTIMATOR",
    "LAM",
    "T",
    "BIN_SIZE",
    "ALPHA",
    "DESIGN",
    "CORPUS_PRIOR",
    "RELEVANCE",
    "DEFAULT_COVERAGE",
    "LAYER",
    "POOLING",
    "MAX_LENGTH",
    "GIANT_FRACTION",
    "BACKEND",
    "TEXT_SHARD_SIZE",
    "ROW_SHARD_SIZE",
    "FIT_SAMPLE_SIZE",
    "KNN",
    "default_cache_dir",
]

# ---------------------------------------------------------------- latent clustering (SPEC §2)
#: The paper's clustering: sparse dictionary codes, then DBSCAN with a quantile radius. The default of
#: :class:`~ucs.clustering.LatentClusterer` itself and of the ``paper`` preset; the configuration clusters
#: with :data:`DEFAULT_CLUSTERING_METHOD` instead.
PAPER_CLUSTERING_METHOD = "dict_dbscan"
#: PCA dimension before the dictionary (``None`` skips PCA).
PCA_DIM = 128
#: Dictionary atoms.
N_ATOMS = 64
#: Sparse coding of the dictionary step: ``ridge`` or ``omp``.
CODING = "ridge"
#: Ridge penalty of the ``ridge`` coding.
RIDGE_ALPHA = 10.0
#: Non-zero coefficients of the ``omp`` coding.
OMP_N_NONZERO = 4
#: Mini-batch size of the dictionary learner.
DICT_BATCH_SIZE = 512
#: Passes of the dictionary learner.
DICT_MAX_ITER = 50
#: k of the k-th-neighbour distances whose quantile is DBSCAN's radius.
DBSCAN_K = 20
#: Quantile q of those distances used as DBSCAN's ``eps``.
DBSCAN_Q = 0.01
#: DBSCAN ``min_samples`` (1: every point is a core point, no noise).
MIN_SAMPLES = 1
#: HDBSCAN's smallest cluster (``dict_hdbscan``).
HDBSCAN_MIN_CLUSTER_SIZE = 5

# ---------------------------------------------------------------- what an application gets
#: The selector of :class:`ucs.SelectorIndex`, LangChain's ``UCSExampleSelector``, DSPy's per-call
#: ``UCSFewShot`` and ``ucs select`` when the caller names none: TopK (cosine nearest neighbours). The
#: committed evidence ranks it first (docs/results: float32 main table, TopK 85.5 / 79.5 / 77.5 % on BANKING77
#: / CLINC150 / HWU64 in likelihood mode, ahead of or level with every other selector; no UCS form with a
#: sound estimator beats its base). UCS forms stay one word away ("dpp+ucs", "topk+ucs", ...).
METHOD = "topk"
#: The query-independent selector of one fixed prompt (DSPy's ``mode="fixed"``): VoteK, which VoteK+UCS does
#: not beat (paper-mode main table at 200 queries: −0.2 on BANKING77, −4.7* on CLINC150).
FIXED_METHOD = "votek"
#: What ``ucs compare`` / :func:`ucs.compare` run when the caller names no selectors: TopK (the reference of
#: every Δ), Random (the floor) and the relevance-keeping candidates of the beat-TopK work.
COMPARE_SELECTORS = ("topk", "random", "mmr", "labelaware", "bsr")
#: The llama.cpp weights ``ucs compare`` answers with: a float32 copy of the GGUF file (the same weights,
#: through llama.cpp's float kernels: 1.5× faster label scoring than SmolLM2's Q4_1 file on an AVX2 core,
#: ``benchmarks/models/RESULTS_label_scoring.md``); evaluations keep ``"file"``, the file as given.
COMPARE_WEIGHTS = "f32"
#: Order of a prompt's demonstrations: as the selector chose them (``selected``), or by similarity to the
#: query (``similar_first`` / ``similar_last``, most similar next to the query), or grouped by label with the
#: label most frequent among them last (``vote_last``).
ORDER = "selected"
#: The order an application gets when it names none — ``SelectorIndex.select``, ``UCSExampleSelector``,
#: ``UCSFewShot`` and ``ucs prompts``: ``vote_last`` where the examples carry labels (an output key), else
#: :data:`ORDER` (see :func:`application_order`). Chosen on validation splits of the pools, no test query read
#: (over TopK's own order: BANKING77 +7.0*, HWU64 +6.0*, CLINC150 +0.0; docs/results/float32/
#: validation_beyond_topk_order.md), and measured on 500 test queries (SmolLM2-135M: BANKING77 +2.6 [+0.6,
#: +4.8]*, HWU64 +4.6 [+2.2, +6.8]*, CLINC150 +0.6; Gemma-3-270M: +1.2, +6.6 [+4.2, +9.0]*, +2.4 [+0.8,
#: +4.2]*; never below TopK; docs/results/beyond_topk.md). Evaluations and the
#: :class:`~ucs.selectors.base.Selector` API keep :data:`ORDER`, so every committed result keeps its meaning.
APPLICATION_ORDER = "vote_last"
#: How a served query is embedded (``SentenceTransformerEmbedder.embed_queries``): ``auto`` runs the model's
#: transformer through ONNX Runtime when the ``onnx`` extra is installed and its vectors agree with torch's
#: (cosine ≥ 0.999 on probe texts), else torch; ``torch`` / ``onnx`` force one. Pools are always embedded by
#: torch.
QUERY_BACKEND = "auto"
QUERY_BACKENDS = ("auto", "torch", "onnx")
#: Worker threads of ``ucs serve`` (:class:`ucs.index.batching.SelectionBatcher`), at most the cores
#: available: two batches of selections run side by side, each with one thread
#: (benchmarks/index/RESULTS_serve.md).
SERVE_WORKERS = 2
#: ``sys.setswitchinterval`` of ``ucs serve``: how long a thread holding the GIL keeps it while another waits
#: (Python's default 5 ms; the workers, the event loop and the additions' writer share it).
SERVE_SWITCH_INTERVAL_S = 0.0005

# ---------------------------------------------------------------- relevance-keeping selectors
#: MMR's ``λ`` and candidates fetched (LangChain's ``max_marginal_relevance_search`` defaults).
MMR_LAMBDA = 0.5
MMR_FETCH_K = 20
#: Label-aware similarity: ``cap`` (at most :data:`LABEL_CAP` demonstrations per label) or ``round_robin``.
LABEL_MODE = "cap"
LABEL_CAP = 2
#: TopK+UCS's relevance floor: the ``m`` nearest demonstrations kept before coverage chooses the rest.
TOPK_FLOOR = 0

# ---------------------------------------------------------------- the UCS prior (SPEC §3–4)
#: The paper's unseen estimator (smoothed Good–Toulmin): the default of :class:`~ucs.selectors.UCSPrior`
#: itself and of the ``paper`` preset; the configuration uses :data:`DEFAULT_ESTIMATOR` instead.
PAPER_ESTIMATOR = "paper"
#: Weight λ of the coverage term.
LAM = 0.1
#: Extrapolation horizon t of the unseen estimator (the estimators in :mod:`ucs.estimators` take the same
#: value as their own default: that floor imports nothing from ucs).
T = 5.0
#: Truncation M (bin size) and offset α of the paper's estimator (the same caveat as :data:`T`).
BIN_SIZE = 20
ALPHA = 1.0
#: Subset-level score design (paper Table 6).
DESIGN = "full"
#: Corpus-level rarity prior of VoteK+UCS.
CORPUS_PRIOR = "good_turing"
#: How query-dependent selectors weigh coverage (``none``: every cluster the same, the paper).
RELEVANCE = "none"


# ---------------------------------------------------------------- the project's coverage setting (SPEC §8)
#: The clustering of the project's configuration (``PipelineConfig()``, the ``default`` and ``cpu`` presets):
#: spherical k-means with ⌈√N⌉ clusters.
DEFAULT_CLUSTERING_METHOD = "kmeans"
#: The unseen estimator of the project's configuration: the OSW binomial estimator.
DEFAULT_ESTIMATOR = "binomial"
#: What ``PipelineConfig()`` (the ``default`` preset), the ``cpu`` preset and :class:`ucs.SelectorIndex` use
#: instead of the paper's clustering and estimator above (which the classes keep as their own defaults, so the
#: ``paper`` preset is the paper): spherical k-means with ⌈√N⌉ clusters in the retrieval embedder's space and
#: the OSW binomial estimator. Chosen without test queries: docs/results/validation_banking77.md and
#: docs/results/coverage_health.md.
DEFAULT_COVERAGE = {
    "clusterer": {"method": DEFAULT_CLUSTERING_METHOD},
    "cluster_space": "retrieval",
    "prior": {"estimator": DEFAULT_ESTIMATOR, "relevance": RELEVANCE},
}

#: A cluster holding more than this fraction of the pool triggers a warning wherever health is shown.
GIANT_FRACTION = 0.25
#: Linear-algebra backend of the clustering stages: ``fast`` (the project's kernels) or ``sklearn``.
BACKEND = "fast"

# ---------------------------------------------------------------- scale (ucs.distributed)
#: Pool texts per embedding shard.
TEXT_SHARD_SIZE = 10_000
#: Embedding rows per shard of the sharded clustering.
ROW_SHARD_SIZE = 100_000
#: Rows the PCA and dictionary of the sharded clustering are fitted on.
FIT_SAMPLE_SIZE = 100_000
#: k-NN search of the sharded clustering: ``exact``, or ``hnsw`` / ``ivf`` (faiss, approximate).
KNN = "exact"

# ---------------------------------------------------------------- backbone embeddings (SPEC §1)
#: Hidden layer pooled into a text's embedding.
LAYER = "last"
#: How token states are pooled: ``mean`` (masked mean), ``last`` or ``first``.
POOLING = "mean"
#: Tokens a backbone embeds per text when its caller does not say. The pipeline passes the paper's 256
#: (:attr:`ucs.pipeline.PipelineConfig.embed_max_length`).
MAX_LENGTH = 512


def application_order(has_labels: bool) -> str:
    """The order of :data:`APPLICATION_ORDER` where the examples have labels, else :data:`ORDER` (grouping by
    label needs labels)."""
    return APPLICATION_ORDER if has_labels else ORDER


# ---------------------------------------------------------------- folders
def default_cache_dir() -> Path:
    """``$UCS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/ucs`` (``~/.cache/ucs``)."""
    env = os.environ.get("UCS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ucs"

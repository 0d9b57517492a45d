"""The UCS pipeline: dataset → embeddings → latent clusters → retrieval → selectors → ICL evaluation.

Each stage is a method that returns a plain array or a small object and remembers its result, so a run can
be inspected stage by stage (``pipe.pool_embeddings()``, ``pipe.cluster_ids(seed)``, ``pipe.selection(...)``)
and every expensive stage is also cached on disk:

========================  ===================================================
================================= stage                     cache
key ========================  ===================================================
================================= pool / query embeddings   ``<cache_dir>/embeddings``
(:class:`EmbeddingCache`)  model identity + texts hash latent clusters (per run)
``<cache_dir>/clusters/<key>/labels_q<q>.npy``        embeddings hash + clusterer
                                                                               settings + run seed
selections                ``<out_dir>/selections/*.npy`` (the runner) and       method, seed, queries
                          ``<out_dir>/pipeline/selections/*.json`` (diagnostics)
MDL subset scores         ``<store_dir>/scores`` (:class:`CachedScorer`)        model
identity + prefix + labels ICL records               ``<out_dir>/records.jsonl`` (the runner; resumable)
(method, seed, query) ICL answers               ``<store_dir>/answers`` (:class:`AnswerStore`)        model,
mode, labels + prompt ========================  ===================================================
=================================

Every path above is :class:`~ucs.pipeline.layout.ArtifactLayout`'s (``pipe.layout``); the selectors come from
:func:`ucs.selectors.factory.make_selector` and the evaluation from :func:`ucs.evaluation.evaluate`, so the
class itself only orchestrates the stages and remembers their results.

The heavy stages can run on an executor (``Pipeline(cfg, executor="ray")``, see :mod:`ucs.distributed`):
the pool is embedded shard by shard by backbone replicas (:func:`~ucs.distributed.embed_pool`), clustered
with per-shard codes and k-NN (:func:`~ucs.distributed.cluster_pool`) and query-dependent selectors select
query batches on workers (:func:`~ucs.distributed.select_queries`). The ICL evaluation itself stays on the
driver. With exact k-NN and a pool no larger than ``fit_sample_size`` the cluster ids, and therefore the
selections, are identical to the in-process path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ucs import defaults as D
from ucs.clustering import JointLatentClusterer, LatentClusterer, cluster_health
from ucs.clustering.estimator import EPS_METHODS
from ucs.clustering.partition import LLOYD_REVISION
from ucs.data import load_dataset
from ucs.distributed import cluster_pool, embed_pool, get_executor, select_queries
from ucs.distributed.executor import EXECUTORS, Executor, LocalExecutor
from ucs.distributed.partition import DISTRIBUTED_PARTITIONS, kmeans_pool
from ucs.distributed.sharding import check_shard_size
from ucs.embedding.base import l2_normalize
from ucs.embedding.cache import EmbeddingCache
from ucs.estimators import UnseenCoverage
from ucs.evaluation import evaluate
from ucs.evaluation.records import read_records
from ucs.evaluation.summary import label_agreement
from ucs.evaluation.run_folder import RunFolder
from ucs.lm.cache import CachedScorer
from ucs.pipeline.backbones import load_backbone_for, load_retrieval_for
from ucs.pipeline.config import PipelineConfig
from ucs.pipeline.coverage_log import CoverageLog
from ucs.pipeline.diagnostics import coverage_markdown, coverage_stats, label_agreement_markdown
from ucs.pipeline.layout import ArtifactLayout
from ucs.pipeline.run_files import append_timings, write_run_files
from ucs.selectors import MethodSpec, UCSPrior
from ucs.selectors.base import LAST_ORDERS
from ucs.selectors.factory import make_selector
from ucs.utils.integrity import load_checked_npy, save_checked_npy
from ucs.utils.io import atomic_write_json, atomic_write_text, hash_array
from ucs.utils.progress import progress_enabled, stage

__all__ = ["Pipeline", "PipelineResult"]


class PipelineResult:
    """What :meth:`Pipeline.run` returns: the evaluation result plus the coverage diagnostics."""

    def __init__(
        self,
        evaluation: Any,
        coverage: Dict[str, Dict[str, Dict[str, float]]],
        out_dir: Path,
        health: Optional[Dict[str, Any]] = None,
        label_agreement: Optional[Dict[str, Dict[str, Any]]] = None,
    ) -> None:
        self.evaluation = evaluation
        self.coverage = coverage
        self.out_dir = out_dir
        self.health = health or {}  # run seed → ClusterHealth of the run's clustering
        # method → share of demonstrations carrying the query's label (ucs.evaluation.summary.label_agreement)
        self.label_agreement = label_agreement or {}

    @property
    def summary(self) -> dict:
        return self.evaluation.summary

    def accuracy(self, method: str) -> Optional[float]:
        """Mean accuracy (fraction) of ``method`` over runs, or ``None`` when absent."""
        m = self.evaluation.summary["methods"].get(method)
        return None if m is None else m.get("mean")

    def to_markdown(self) -> str:
        text = self.evaluation.to_markdown() + "\n" + coverage_markdown(self.coverage)
        return text + ("\n" + label_agreement_markdown(self.label_agreement) if self.label_agreement else "")


class Pipeline:
    """The whole UCS job for one dataset and backbone.

    Parameters
    ----------
    config : PipelineConfig
    dataset : ucs.data.Dataset, optional
        Default: ``load_dataset(config.dataset, config.data_dir)``.
    backbone : Embedder and LanguageModel, optional
        The ICL model (embeds the pool for clustering, answers prompts, scores MDL). Default:
        :func:`ucs.pipeline.backbones.load_backbone_for`.
    retrieval : Embedder, optional
        Retrieval embedder; default from ``config.retrieval_embedder`` (``backbone`` reuses the backbone's
        pool embeddings, ℓ2-normalised, without another model pass).
    cache_dir : path, optional
        Root of the embedding and cluster caches (default ``$UCS_CACHE_DIR`` or ``~/.cache/ucs``).
    out_dir : path, optional
        Where :meth:`run` writes results; also receives per-selection diagnostics.
    progress : bool
        Show the progress of the long stages (embedding, clustering, MDL scoring, evaluation) on stderr
        (:mod:`ucs.utils.progress`).
    executor : {None, "local", "ray"} or ucs.distributed.Executor, optional
        Where the heavy stages run. ``None``, ``"local"`` or a plain ``LocalExecutor``: in this process (the
        one-machine estimators, :class:`~ucs.clustering.LatentClusterer` with its re-cut). ``"ray"`` or a
        :class:`~ucs.distributed.RayExecutor`: embedding, clustering and query-dependent selection on the
        cluster. Workers build their own backbone replica from the configuration (or receive a pickled copy
        of an injected ``backbone``, which must then be picklable).
    shard_size : int, default=10000
        Pool texts per embedding shard (executor path only; also the unit of the shard cache).
    fit_sample_size : int, default=100000
        Rows the clustering representation is fitted on (executor path only); pools no larger than this
        give exactly the in-process cluster ids with exact k-NN.
    knn : {"exact", "hnsw", "ivf"}, default="exact"
        Neighbour search of the executor's clustering (approximate methods need faiss).
    select_batch_size : int, optional
        Queries per selection task (executor path); default: the queries split evenly over the workers.
    pool_embeddings : ndarray of shape (N, d), optional
        Backbone embeddings of the pool computed elsewhere (e.g. rows of a larger pool's cached matrix, as
        :func:`ucs.experiments.tune` does for a pool with a validation split held out); used instead of
        embedding the pool. The cluster cache is keyed by their content, as for computed ones.
    retrieval_embeddings : ndarray of shape (N, d_r), optional
        Retrieval embeddings of the pool computed elsewhere (ℓ2-normalised here).
    reuse_answers : bool, default=True
        Share model answers with every evaluation under the same ``cache_dir`` (``<cache_dir>/answers``, an
        :class:`~ucs.evaluation.answers.AnswerStore`): in the deterministic modes a prompt that another run,
        method or experiment already sent to the same model is answered from the store (in sampled modes, a
        prompt drawn with the same sample seed). Likewise MDL's
        candidate-subset scores (``<cache_dir>/scores``, :meth:`mdl_scorer`): MDL+UCS and every later run
        with the same subsets read MDL's instead of scoring them again. ``False`` (the runtime experiment)
        makes every method pay for all of its model calls.
    store_dir : path, optional
        Root of the answer and score stores (default: ``cache_dir``). The stores are small (≈ 200 bytes per
        answer) and content-addressed, so a folder of them can be committed beside the results it produced and
        lets a later session — another machine, an empty cache — resume a long evaluation without asking the
        model again for any prompt it already answered.

    Notes
    -----
    Nothing is computed in ``__init__``. The pool is embedded once per backbone (cached across runs and
    processes); clustering is fitted once per run seed (and re-cut, not refitted, for other ``q``);
    selectors are fitted once per (method, seed) on the pool and select for all queries in one batched
    call.
    """

    def __init__(
        self,
        config: PipelineConfig,
        *,
        dataset: Any = None,
        backbone: Any = None,
        retrieval: Any = None,
        cache_dir: "str | os.PathLike[str] | None" = None,
        out_dir: "str | os.PathLike[str] | None" = None,
        progress: bool = True,
        executor: Any = None,
        shard_size: int = D.TEXT_SHARD_SIZE,
        fit_sample_size: int = D.FIT_SAMPLE_SIZE,
        knn: str = D.KNN,
        select_batch_size: Optional[int] = None,
        pool_embeddings: Optional[np.ndarray] = None,
        retrieval_embeddings: Optional[np.ndarray] = None,
        reuse_answers: bool = True,
        store_dir: "str | os.PathLike[str] | None" = None,
    ) -> None:
        if not isinstance(config, PipelineConfig):
            raise ValueError(f"config must be a PipelineConfig; got {type(config).__name__}")

        if not (executor is None or isinstance(executor, Executor) or executor in EXECUTORS):
            raise ValueError(
                f"executor must be None, one of {EXECUTORS} or an Executor instance; got {executor!r}"
            )
        check_shard_size(shard_size)
        check_shard_size(fit_sample_size, "fit_sample_size")
        if knn not in ("exact", "hnsw", "ivf"):
            raise ValueError(f"knn must be 'exact', 'hnsw' or 'ivf'; got {knn!r}")
        if select_batch_size is not None and (
            not isinstance(select_batch_size, int) or select_batch_size < 2
        ):
            raise ValueError(f"select_batch_size must be an integer >= 2 or None; got {select_batch_size!r}")
        self.executor = executor
        self.distributed = not (executor is None or executor == "local" or type(executor) is LocalExecutor)
        self.shard_size = shard_size
        self.fit_sample_size = fit_sample_size
        self.knn = knn
        self.select_batch_size = select_batch_size
        self.reuse_answers = bool(reuse_answers)
        self._backbone_injected = backbone is not None
        self.config = config
        self._dataset = dataset
        self._backbone = backbone
        self._retrieval = retrieval
        self.layout = ArtifactLayout(cache_dir, store_dir, out_dir)
        self.progress = progress
        self.embedding_cache = EmbeddingCache(self.layout.embeddings_dir)
        self.timings: Dict[str, float] = {}
        self._memo: Dict[Any, Any] = {}
        self.coverage_log = CoverageLog(self.coverage, self._pool_size)
        for name, arr in (("pool_emb", pool_embeddings), ("ret_pool", retrieval_embeddings)):
            if arr is not None:
                arr = np.asarray(arr)
                if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.floating):
                    raise ValueError(
                        f"{'pool_embeddings' if name == 'pool_emb' else 'retrieval_embeddings'} must be "
                        f"a 2-D float array (one row per pool item); got shape {arr.shape}, dtype {arr.dtype}"
                    )
                if self.distributed:
                    raise ValueError(
                        "injected embeddings are not supported on an executor; use executor=None"
                    )
                self._memo[name] = arr if name == "pool_emb" else l2_normalize(arr)
        self._injected = {k for k in ("pool_emb", "ret_pool") if k in self._memo}

    # ------------------------------------------------------------------ helpers
    @property
    def cache_dir(self) -> Path:
        return self.layout.cache_dir

    @property
    def store_dir(self) -> Path:
        return self.layout.store_dir

    @property
    def out_dir(self) -> Optional[Path]:
        return self.layout.out_dir

    def _timed(self, name: str, t0: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0

    def _executor(self) -> Any:
        """The resolved executor of the distributed path (a Ray connection is made on first use)."""
        if "executor" not in self._memo:
            self._memo["executor"] = get_executor(self.executor)
        return self._memo["executor"]

    def close(self) -> None:
        """Release the executor this pipeline started (a private local Ray cluster); idempotent."""
        ex = self._memo.pop("executor", None)
        if ex is not None and ex is not self.executor:
            ex.close()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _backbone_factory(self) -> Callable[[], Any]:
        """A picklable zero-argument callable that builds a backbone replica on a worker."""
        import functools

        if self._backbone_injected:
            return functools.partial(_same, self._backbone)

        return functools.partial(load_backbone_for, self.config)

    # ------------------------------------------------------------------ stage 0: data and models
    @property
    def dataset(self) -> Any:
        if self._dataset is None:
            test = {"test": self.config.test_file} if self.config.test_file else {}
            self._dataset = load_dataset(self.config.dataset, self.config.data_dir, **test)
        return self._dataset

    @property
    def backbone(self) -> Any:
        if self._backbone is None:
            self._backbone = load_backbone_for(self.config)
        return self._backbone

    @property
    def retrieval(self) -> Any:
        """The retrieval embedder (``None`` when the backbone's own embeddings are used)."""
        if self._retrieval is None and self.config.retrieval_embedder != "backbone":
            self._retrieval = load_retrieval_for(self.config, self.backbone)
        return self._retrieval

    def _pool_size(self) -> int:
        return len(self.dataset.pool)

    def pool_labels_text(self) -> List[str]:
        ds = self.dataset
        return [ds.label_names[int(y)] for y in ds.pool.labels]

    # ------------------------------------------------------------------ stage 1: embeddings
    def pool_embeddings(self) -> np.ndarray:
        """Backbone embeddings of the pool inputs (never the labels), shape (N, d), float32; cached."""
        if "pool_emb" in self._injected and "pool_checked" not in self._memo:
            self._check_rows(self._memo["pool_emb"], "pool_embeddings")
            self._memo["pool_checked"] = True
        if "pool_emb" not in self._memo:
            t0 = time.perf_counter()
            if self.distributed:
                shards = embed_pool(
                    self._backbone_factory(),
                    list(self.dataset.pool.texts),
                    self._executor(),
                    self.shard_size,
                    self.layout.embeddings_dir,
                    identity=dict(self.backbone.identity),
                )
                self._memo["pool_shards"] = shards
                self._memo["pool_emb"] = shards.load()
            else:
                with progress_enabled(self.progress):
                    self._memo["pool_emb"] = self.embedding_cache.embed(
                        self.backbone, list(self.dataset.pool.texts)
                    )
            self._timed("pool_embedding", t0)
        return self._memo["pool_emb"]

    def _check_rows(self, arr: np.ndarray, name: str) -> None:
        n = len(self.dataset.pool)
        if arr.shape[0] != n:
            raise ValueError(f"{name} has {arr.shape[0]} rows but the pool has {n} items")

    def joint_embeddings(self) -> List[np.ndarray]:
        """Pool embeddings of each of ``config.joint_backbones`` (cached like the backbone's own), in
        order."""
        if "joint_emb" not in self._memo:
            t0 = time.perf_counter()
            out = []
            for name in self.config.joint_backbones:
                model = load_backbone_for(self.config.replace(backbone=name, engine=None, joint_backbones=()))
                out.append(self.embedding_cache.embed(model, list(self.dataset.pool.texts)))
            self._memo["joint_emb"] = out
            self._timed("joint_pool_embedding", t0)
        return self._memo["joint_emb"]

    def retrieval_pool(self) -> np.ndarray:
        """Retrieval embeddings of the pool, ℓ2-normalised, shape (N, d_r)."""
        if "ret_pool" in self._injected and "ret_checked" not in self._memo:
            self._check_rows(self._memo["ret_pool"], "retrieval_embeddings")
            self._memo["ret_checked"] = True
        if "ret_pool" not in self._memo:
            if self.config.retrieval_embedder == "backbone":
                self._memo["ret_pool"] = l2_normalize(self.pool_embeddings())
            else:
                t0 = time.perf_counter()
                with progress_enabled(self.progress):
                    emb = self.embedding_cache.embed(self.retrieval, list(self.dataset.pool.texts))
                self._memo["ret_pool"] = l2_normalize(emb)
                self._timed("retrieval_pool_embedding", t0)
        return self._memo["ret_pool"]

    def retrieval_queries(self, query_texts: Sequence[str]) -> np.ndarray:
        """Retrieval embeddings of queries, ℓ2-normalised, shape (Q, d_r); cached by the texts' hash."""
        t0 = time.perf_counter()
        model = self.backbone if self.config.retrieval_embedder == "backbone" else self.retrieval
        with progress_enabled(self.progress):
            emb = l2_normalize(self.embedding_cache.embed(model, list(query_texts)))
        self._timed("query_embedding", t0)
        return emb

    # ------------------------------------------------------------------ stage 2: clusters
    def clusterer_params(self, seed: int) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.clustering.LatentClusterer` for run ``seed``."""
        return self.config.clusterer_params(seed)

    def cluster_embeddings(self) -> np.ndarray:
        """The matrix the latent clusters are computed on: the backbone's pool embeddings (the paper) or,
        with ``cluster_space="retrieval"``, the retrieval embeddings (ℓ2-normalised), shape (N, d)."""
        if self.config.cluster_space == "retrieval":
            return self.retrieval_pool()
        return self.pool_embeddings()

    def _cluster_dir(self, seed: int) -> Path:
        if "emb_hash" not in self._memo:
            self._memo["emb_hash"] = hash_array(self.cluster_embeddings())
        spec: Dict[str, Any] = {"emb": self._memo["emb_hash"], "params": self.clusterer_params(seed)}
        if spec["params"].get("kmeans_impl") == "lloyd":  # never a clustering by an earlier revision of it
            spec["lloyd_revision"] = LLOYD_REVISION
        if self.config.joint_backbones:
            spec["joint"] = {
                "emb": [hash_array(E) for E in self.joint_embeddings()],
                "joint_iter": self.config.joint_iter,
            }
        n = len(self.dataset.pool)
        if self.distributed and (n > self.fit_sample_size or self.knn != "exact"):
            # only then can the executor's ids differ from the in-process ones
            spec["sharded"] = {"fit_sample_size": self.fit_sample_size, "knn": self.knn}
        return self.layout.cluster_dir(spec)

    def clusterer(self, seed: int, q: Optional[float] = None) -> Any:
        """The clustering of the pool for run ``seed``: a fitted :class:`~ucs.clustering.LatentClusterer`
        in-process, a :class:`~ucs.distributed.PoolClustering` on an executor (one per ``q`` there: the
        executor path has no re-cut, so another ``q`` is a new sharded run with the same seed)."""
        if not self.distributed:
            q = None
        q0 = float(self.config.clusterer["dbscan_q"])
        qv = q0 if q is None else float(q)
        memo = ("clusterer", int(seed)) if q is None or qv == q0 else ("clusterer", int(seed), qv)
        if memo not in self._memo:
            t0 = time.perf_counter()
            if self.distributed and self.config.joint_backbones:
                raise ValueError(
                    "joint_backbones (a joint dictionary) runs in-process only; use executor=None"
                )

            eps_method = self.config.clusterer["method"] in EPS_METHODS
            if self.config.joint_backbones:
                Es = [self.cluster_embeddings(), *self.joint_embeddings()]
                est = JointLatentClusterer(
                    **self.clusterer_params(seed), joint_iter=self.config.joint_iter
                ).fit(Es)
            elif self.distributed and eps_method and self.config.cluster_space == "backbone":
                self.pool_embeddings()
                est = cluster_pool(
                    self._memo["pool_shards"],
                    {**self.clusterer_params(seed), "dbscan_q": qv},
                    self._executor(),
                    fit_sample_size=self.fit_sample_size,
                    knn=self.knn,
                )
            elif self.distributed and self.config.clusterer["method"] in DISTRIBUTED_PARTITIONS:
                est = kmeans_pool(
                    self.cluster_embeddings(),
                    self.clusterer_params(seed),
                    self._executor(),
                    shard_size=self.shard_size,
                )
            else:
                # in-process; also the executor path's for methods without a sharded form (same labels)
                est = LatentClusterer(**self.clusterer_params(seed)).fit(self.cluster_embeddings())
            self._timed("clustering_fit", t0)
            self._memo[memo] = est
            d = self._cluster_dir(seed)
            save_checked_npy(self.layout.cluster_labels(d, qv), np.asarray(est.labels_, dtype=np.int64))
            atomic_write_json(
                self.layout.cluster_meta(d),
                {
                    "params": self.clusterer_params(seed),
                    "eps": getattr(est, "eps_", None),
                    "n_clusters": int(est.n_clusters_),
                    "timings": getattr(est, "timings_", {}),
                    "chosen_method": getattr(est, "chosen_method_", self.config.clusterer["method"]),
                    "auto_choice": None
                    if getattr(est, "auto_choice_", None) is None
                    else est.auto_choice_.to_dict(),
                },
            )
        return self._memo[memo]

    def cluster_meta(self, seed: int) -> Dict[str, Any]:
        """What the cluster cache recorded about run ``seed``'s clustering (parameters, eps, the method
        ``auto`` chose); fits the clustering first when it is not cached."""
        path = self.layout.cluster_meta(self._cluster_dir(seed))
        if not path.is_file():
            self.clusterer(seed)
        return json.loads(path.read_text(encoding="utf-8"))

    def cluster_ids(self, seed: int, q: Optional[float] = None) -> np.ndarray:
        """Cluster id of every pool item for run ``seed`` at quantile ``q`` (default ``clusterer.dbscan_q``).

        Loaded from the cluster cache when present; otherwise the run's clusterer is fitted once and other
        quantiles are re-cut from it (``LatentClusterer.recut``, no refit).
        """
        q0 = float(self.config.clusterer["dbscan_q"])
        q = q0 if q is None else float(q)
        memo = ("ids", int(seed), q)
        if memo in self._memo:
            return self._memo[memo]
        path = self.layout.cluster_labels(self._cluster_dir(seed), q)
        n = len(self.dataset.pool)
        ids = load_checked_npy(
            path, f"cached cluster labels (seed {seed}, q {q})", shape=(n,), min_value=0, max_value=n - 1
        )
        if ids is not None:
            ids = ids.astype(np.int64)
        else:
            method = self.config.clusterer["method"]
            with (
                progress_enabled(self.progress),
                stage(  # the pool is embedded by now (_cluster_dir hashed it)
                    f"clustering {len(self.dataset.pool)} pool items (seed {seed}, {method}"
                    + (f", q {q:g})" if method in EPS_METHODS else ")"),
                    kind="cluster",
                ),
            ):
                est = self.clusterer(seed, q)
            if q == q0 or self.distributed or getattr(est, "kth_distances_", 1) is None:
                ids = np.asarray(est.labels_, dtype=np.int64)
            else:
                t0 = time.perf_counter()
                ids = np.asarray(est.recut(q), dtype=np.int64)
                self._timed("clustering_recut", t0)
            save_checked_npy(path, ids)
        if ids.shape != (len(self.dataset.pool),):
            raise ValueError(
                f"cached cluster ids at {path} have shape {ids.shape}; expected ({len(self.dataset.pool)},)"
            )
        self._memo[memo] = ids
        return ids

    # ------------------------------------------------------------------ stage 3: selectors
    def prior(self, method: "MethodSpec | str", seed: int) -> Any:
        """The :class:`~ucs.selectors.UCSPrior` of a ``+ucs`` method for run ``seed``."""
        spec = _stage_spec(method)
        return UCSPrior.build(
            self.cluster_ids(seed, self.config.dbscan_q_for(spec)), self.config.prior_params(spec)
        )

    def mdl_scorer(self) -> Any:
        """The LM that scores MDL's candidate subsets (the backbone unless ``config.mdl_scorer`` names
        another).

        With ``reuse_answers`` it is wrapped in a :class:`~ucs.lm.cache.CachedScorer` over
        ``<cache_dir>/scores``: MDL+UCS scores exactly the candidate subsets MDL scored for the same run seed,
        and other experiments with the same configuration score them again, so each (prefix, labels) is sent
        to the model once.
        """
        memo = ("mdl_scorer",)
        if memo in self._memo:
            return self._memo[memo]
        if self.config.mdl_scorer in ("backbone", self.config.backbone):
            scorer = self.backbone
        else:
            scorer = load_backbone_for(self.config.replace(backbone=self.config.mdl_scorer))
        if self.reuse_answers:
            identity = getattr(scorer, "identity", None)
            store = self.layout.scores_dir if isinstance(identity, dict) else None
            scorer = CachedScorer(scorer, store=store)
        self._memo[memo] = scorer
        return scorer

    def build_selector(self, method: "MethodSpec | str", seed: int) -> Any:
        """An unfitted selector for ``method`` (``dpp``, ``dpp+ucs``, ...) seeded with the run ``seed``,
        built by :func:`ucs.selectors.factory.make_selector` from the configuration's selector settings."""
        spec = _stage_spec(method)
        params = self.config.selector_params(spec.base)
        if spec.needs_scorer:
            params.update(scorer=self.mdl_scorer(), label_set=list(self.dataset.label_names))
        if (
            spec.needs_token_embedder
        ):  # Set-BSR: token embeddings of the retrieval embedder (or the backbone's)
            params.update(token_embedder=self.retrieval if self.retrieval is not None else self.backbone)
        return make_selector(
            spec, prior=self.prior(spec, seed) if spec.ucs else None, random_state=int(seed), **params
        )

    def selection(self, method: "MethodSpec | str", seed: int, query_texts: Sequence[str]) -> Any:
        """The :class:`~ucs.selectors.Selection` of ``method`` for run ``seed`` on ``query_texts``
        (memoised)."""
        spec = _stage_spec(method)
        method = spec.name  # the key of the memo, the timings and the coverage log
        qkey = hashlib.sha256("\x00".join(query_texts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        memo = ("selection", method, int(seed), qkey)
        if memo in self._memo:
            return self._memo[memo]
        ids = self.cluster_ids(seed, self.config.dbscan_q_for(spec))
        pool = self.retrieval_pool()
        selector = self.build_selector(spec, seed)
        t0 = time.perf_counter()
        selector.fit(
            pool, labels=self.pool_labels_text(), texts=list(self.dataset.pool.texts), cluster_ids=ids
        )
        queries = self.retrieval_queries(query_texts) if selector.query_dependent else None
        on_driver = selector.needs_scorer or selector.needs_token_embedder
        if self.distributed and queries is not None and not on_driver:
            # MDL scores with the driver's backbone, Set-BSR embeds tokens with its embedder: neither is
            # shipped to workers

            ex = self._executor()
            bs = self.select_batch_size or max(2, -(-len(query_texts) // max(1, ex.num_workers)))
            sel = select_queries(
                selector,
                queries,
                ex,
                bs,
                budget=self.config.budget,
                query_texts=list(query_texts),
                exclude_query_texts=True,
                order=self.config.order,
            )
        else:
            with (
                progress_enabled(self.progress and selector.needs_scorer),
                stage(  # MDL scores query by query
                    f"MDL scoring {method} (seed {seed})", len(query_texts), kind="mdl"
                ),
            ):
                # a test query is never offered a pool item with its own text (leaky splits are also warned
                # about)
                sel = selector.select(
                    queries,
                    self.config.budget,
                    query_texts=list(query_texts),
                    exclude_query_texts=True,
                    order=self.config.order,
                )
        self._timed(f"select:{method}", t0)
        self._memo[memo] = sel
        self.coverage_log.record(self.layout, method, seed, sel, len(query_texts))
        return sel

    def select(self, method: "MethodSpec | str", seed: int, query_texts: Sequence[str]) -> np.ndarray:
        """The runner's selection function: pool indices, (Q, B) or (1, B) for query-independent methods."""
        return np.asarray(self.selection(method, seed, query_texts).indices, dtype=np.int64)

    # ------------------------------------------------------------------ diagnostics
    def coverage(self, method: "MethodSpec | str", seed: int, indices: np.ndarray) -> Dict[str, np.ndarray]:
        """Per-prompt coverage exposure of ``indices`` on run ``seed``'s clusters (at ``method``'s ``q``),
        with Φ under the configured estimator (for base selectors too, so both forms are comparable)."""
        ids = self.cluster_ids(seed, self.config.dbscan_q_for(_stage_spec(method)))
        prior = self.config.prior
        cov = UnseenCoverage(
            prior["estimator"], design=prior["design"], **self.config.estimator_params()
        ).fit(ids)
        return coverage_stats(ids, np.asarray(indices), cov)

    def coverage_table(
        self, methods: Sequence[str], n_queries: int
    ) -> Dict[str, Dict[str, Dict[str, float]]]:
        """``table[method][seed]`` of mean coverage stats
        (:class:`~ucs.pipeline.coverage_log.CoverageLog`)."""
        return self.coverage_log.table(self.layout, methods, self.config.run_seeds, n_queries)

    # ------------------------------------------------------------------ stage 4: evaluation
    def run(
        self,
        out_dir: "str | os.PathLike[str] | None" = None,
        methods: "Optional[Sequence[MethodSpec | str]]" = None,
        *,
        limit: Optional[int] = None,
    ) -> PipelineResult:
        """Evaluate ``methods`` (default ``config.selector["method"]``) with the resumable runner.

        Writes the runner's files (``records.jsonl``, ``manifest.json`` with this configuration,
        ``results.{json,md}``) and ``coverage.{json,md}`` and ``pipeline/config.json`` to ``out_dir``, and the
        files a report reads without the pipeline (:mod:`ucs.pipeline.run_files`: pool and query texts,
        cluster ids, a 2-D projection, and one line of stage timings per call in ``pipeline/timings.jsonl``).
        Calling it again with the same configuration continues where it stopped.
        """
        if out_dir is not None:
            self.layout = ArtifactLayout(self.cache_dir, self.store_dir, out_dir)
        if self.out_dir is None:
            raise ValueError("out_dir is required: pass run(out_dir=...) or Pipeline(..., out_dir=...)")
        specs = self.config.method_specs if not methods else tuple(MethodSpec.parse(m) for m in methods)
        methods = tuple(s.name for s in specs)
        by_name = {s.name: s for s in specs}  # the runner keys records by name; the stages take specs
        out = self.out_dir
        folder = RunFolder(out)
        self.config.to_json(folder.config)
        t0 = time.perf_counter()
        result = evaluate(
            self.dataset,
            self.backbone,
            list(methods),
            lambda m, seed, texts: self.select(by_name.get(m, m), seed, texts),
            out,
            mode=self.config.mode,
            protocol=self.config.protocol(),
            limit=limit,
            batch_size=self.config.icl_batch_size,
            config={"pipeline": self.config.key_dict()},
            progress=self.progress,
            answer_store=self.layout.answers_dir if self.reuse_answers else None,
            drop_from="start" if self.config.order in LAST_ORDERS else "end",
        )
        self._timed("evaluate", t0)
        n_q = int(result.summary.get("n_queries_requested", 0))
        cov = self.coverage_table(result.summary["methods"].keys(), n_q)
        health = {str(s): self.cluster_health(s) for s in self.config.run_seeds}
        done = set(result.summary["methods"])
        agree = label_agreement(
            [r for r in read_records(result.records_path) if r["method"] in done and r["query"] < n_q],
            self.dataset.pool.labels,
            run_seeds=self.config.run_seeds,
        )
        atomic_write_json(
            folder.coverage,
            {
                "n_queries": n_q,
                "coverage": cov,
                "cluster_health": {k: h.to_dict() for k, h in health.items()},
                "label_agreement": agree,
            },
        )
        atomic_write_text(
            folder.coverage_markdown,
            health_markdown(health)
            + "\n"
            + coverage_markdown(cov)
            + ("\n" + label_agreement_markdown(agree) if agree else ""),
        )

        t0 = time.perf_counter()
        test = self.config.protocol().apply(self.dataset).test
        write_run_files(
            self,
            out,
            list(result.summary["methods"]),
            list(test.texts[:n_q]),
            [self.dataset.label_names[int(y)] for y in test.labels[:n_q]],
        )
        self._timed("run_files", t0)
        append_timings(out, self.timings)
        return PipelineResult(result, cov, out, health, agree)

    def cluster_health(self, seed: int) -> Any:
        """:class:`~ucs.clustering.ClusterHealth` of run ``seed``'s clustering against the pool's labels."""
        ds = self.dataset
        return cluster_health(self.cluster_ids(seed), [ds.label_names[int(y)] for y in ds.pool.labels])


def _stage_spec(method: "MethodSpec | str") -> MethodSpec:
    """The ``method`` of a public stage method (:meth:`Pipeline.prior`, ``build_selector``, ``selection``,
    ``select``, ``coverage``) as a :class:`~ucs.selectors.MethodSpec`. The package passes specs, returned as
    they are; a name is parsed here: an interactive call's, or one the coverage log keys its statistics by
    (a resumed run folder's manifest lists the methods of earlier calls by name)."""
    return method if isinstance(method, MethodSpec) else MethodSpec.parse(method)


def health_markdown(health: Dict[str, Any]) -> str:
    """Cluster health of each run seed as a short markdown section (with the giant-cluster warning)."""
    lines = ["Cluster health of each run's clustering (SPEC §8):", ""]
    for seed, h in health.items():
        lines.append(f"- seed {seed}: {h.line()}")
        if h.warning():
            lines.append(f"  - **warning:** {h.warning()}")
    return "\n".join(lines) + "\n"


def _same(obj: Any) -> Any:
    """``functools.partial(_same, obj)`` is a picklable factory returning ``obj`` (an injected backbone)."""
    return obj

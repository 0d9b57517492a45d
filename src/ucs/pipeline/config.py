"""The pipeline configuration: one dataclass that names every choice of a run and round-trips to JSON.

Field names follow the hyper-parameter presets of :mod:`ucs.pipeline.presets` (paper Tables 8–10), so a
preset becomes a configuration with :meth:`PipelineConfig.from_preset`; everything else (dataset, backbone,
selectors, estimator, prediction mode) has its own field. The configuration is written into the run
manifest (:func:`ucs.evaluation.evaluate`'s ``config=``) and a resume with different settings is refused.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from ucs import defaults as D
from ucs.clustering.estimator import METHODS as CLUSTERINGS
from ucs.clustering.estimator import RAW_METHODS
from ucs.clustering.partition import KMEANS_IMPL, LLOYD_REVISION
from ucs.data import TestProtocol
from ucs.data.table import TABLE_SUFFIXES
from ucs.estimators import resolve_estimator_name
from ucs.evaluation.predict import MODES
from ucs.models.http_spec import public_spec
from ucs.pipeline.presets import get_preset
from ucs.selectors.base import ORDERS
from ucs.selectors.labelaware import MODES as LABEL_MODES
from ucs.selectors.factory import BASE_SELECTORS, METHODS, NO_UCS_FORM, canonical_method, parse_method
from ucs.selectors.prior import CORPUS_PRIORS, RELEVANCE, SCORE_DESIGNS
from ucs.utils.io import atomic_write_text

__all__ = [
    "BASE_SELECTORS",
    "METHODS",
    "MODE_ALIASES",
    "NO_UCS_FORM",
    "PipelineConfig",
    "canonical_method",
    "parse_method",
    "parse_methods",
]

#: CLI spellings of the prediction modes of :mod:`ucs.evaluation.predict`.
MODE_ALIASES = {"generate": "greedy", "generate-strict": "greedy-strict"}
#: Retrieval embedder meaning "the backbone's own embeddings, ℓ2-normalised" (SPEC §1).
BACKBONE_RETRIEVAL = "backbone"
#: What the latent clusters are computed on: the backbone's embeddings (the paper) or the retrieval embedder's.
CLUSTER_SPACES = ("backbone", "retrieval")
#: Clusterings that run k-means (``auto`` chooses among candidates that include it).
KMEANS_FAMILY = ("kmeans", "dict_kmeans", "auto")
#: Settings added after results were first published: left out of the results' key while at these values.
LATE_DEFAULTS = {"n_clusters": None, "hdbscan_min_cluster_size": D.HDBSCAN_MIN_CLUSTER_SIZE,
                  "cluster_space": "backbone", "relevance": D.RELEVANCE, "mmr_lambda": D.MMR_LAMBDA,
                  "mmr_fetch_k": D.MMR_FETCH_K, "label_mode": D.LABEL_MODE, "label_cap": D.LABEL_CAP,
                  "topk_floor": D.TOPK_FLOOR, "order": D.ORDER}


def parse_methods(spec: "str | Any") -> Tuple[str, ...]:
    """Comma-separated (or sequence of) method names → canonical, distinct names in the given order."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list = []
    for it in items:
        if isinstance(it, str) and not it.strip():
            continue
        m = canonical_method(it)
        if m not in out:
            out.append(m)
    if not out:
        raise ValueError(f"selectors must name at least one method from {', '.join(METHODS)}; got {spec!r}")
    return tuple(out)


#: Selector parameter → configuration field, per base selector (the stages' own names on the left).
_SELECTOR_FIELDS: Dict[str, Dict[str, str]] = {
    "topk": {"candidate_num": "candidate_num", "floor": "topk_floor"},
    "mmr": {"lambda_mult": "mmr_lambda", "fetch_k": "mmr_fetch_k"},
    "labelaware": {"mode": "label_mode", "max_per_label": "label_cap", "candidate_num": "candidate_num"},
    "dpp": {"candidate_num": "candidate_num", "scale_factor": "dpp_scale_factor"},
    "votek": {"k": "votek_k"},
    "mdl": {"candidate_num": "candidate_num", "select_time": "mdl_select_time"},
}
#: :class:`~ucs.clustering.LatentClusterer` parameter → configuration field (in the cache key's order).
_CLUSTERER_FIELDS: Dict[str, str] = {
    "method": "clustering", "pca_dim": "pca_dim", "n_atoms": "dict_n_atoms", "coding": "dict_coding",
    "ridge_alpha": "dict_ridge_alpha", "omp_n_nonzero": "dict_omp_nonzeros", "dict_batch_size": "dict_batch_size",
    "dict_max_iter": "dict_max_iter", "dbscan_k": "dbscan_k", "dbscan_q": "dbscan_q",
    "min_samples": "min_samples", "standardize": "standardize",
}


def _translate(params: Mapping[str, Any], table: Mapping[str, str], stage: str) -> Dict[str, Any]:
    """Class parameter names → configuration fields through ``table``; an unknown name is refused."""
    unknown = sorted(set(params) - set(table))
    if unknown:
        raise ValueError(f"stage {stage!r} has no parameter {unknown[0]!r}; it takes {', '.join(sorted(table))}")
    return {table[k]: v for k, v in params.items()}


def _check_int(value: Any, name: str, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}{' or None' if allow_none else ''}; got {value!r}")


def _check_float(value: Any, name: str, low: float = 0.0, strict: bool = False, high: Optional[float] = None) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise ValueError(f"{name} must be a number; got {value!r}")
    if value < low or (strict and value == low) or (high is not None and value >= high):
        rng = f"{'>' if strict else '>='} {low}" + (f" and < {high}" if high is not None else "")
        raise ValueError(f"{name} must be {rng}; got {value!r}")


def _public_models(d: Mapping[str, Any], keep_options: bool) -> Dict[str, Any]:
    """The model-spec fields of a configuration dict as they may be written down (see :meth:`public_dict`)."""
    out: Dict[str, Any] = {k: public_spec(d[k], keep_options) for k in ("backbone", "mdl_scorer") if k in d}
    if "joint_backbones" in d:
        out["joint_backbones"] = [public_spec(b, keep_options) for b in d["joint_backbones"]]
    return out


@dataclass(frozen=True)
class PipelineConfig:
    """Every setting of a UCS run: data, backbone, clustering, retrieval, selectors, prior, evaluation.

    Parameters
    ----------
    dataset : str
        Registry name (``banking77``, ``clinc150``, ``hwu64``, ``bbeh_*``, ``sample``) or a table path.
    data_dir : str, optional
        Folder of the original public files (default ``$UCS_DATA_DIR``, else ``./data``). Not part of the
        resume key: the data files' hashes are.
    test_file : str, optional
        With a table ``dataset``: the file of the test split (``dataset`` is then the pool). Not part of the
        resume key: the files' hashes are.
    backbone : str
        The ICL model: ``smollm2`` (default), ``gemma3``, a GGUF file, a hub id or model directory (through
        :func:`ucs.models.load_backbone`), or ``dummy`` (hash-based doubles, for tests and dry runs).
    engine : str, optional
        ``llama`` or ``transformers``; ``None`` lets the model layer choose.
    layer, pooling, embed_normalize, embed_max_length
        Pool-embedding settings of the backbone (SPEC §1: last layer, masked mean, no ℓ2, 256 tokens).
    device : str, optional
        Torch device of the transformers engine (``cuda``); ``n_gpu_layers`` offloads llama.cpp layers.
    dtype : str, optional
        Weight/activation dtype of the transformers engine: ``float32``, ``bfloat16``, ``float16`` or
        ``auto``; ``None`` (default) is float32 on CPU and the checkpoint's dtype on GPU. ``bfloat16`` is
        about 3x faster on CPUs with AMX/AVX-512-BF16 (docs/models.md has the measurement and its effect on
        accuracy) and slower on CPUs without them. Part of the results' key when set.
    retrieval_embedder : str
        Similarity used inside TopK / DPP / MDL / VoteK: ``backbone`` (the backbone's embeddings,
        ℓ2-normalised), ``all-minilm-l6-v2``, ``all-mpnet-base-v2`` (the paper's), or a
        sentence-transformers directory / hub id.
    selectors : tuple of str
        Methods to evaluate (see :data:`METHODS`).
    budget, candidate_num, dpp_scale_factor, votek_k, mdl_select_time, mdl_scorer
        Selector settings (paper Table 8). ``mdl_scorer="backbone"`` scores MDL with the ICL model.
    mmr_lambda, mmr_fetch_k, label_mode, label_cap, topk_floor
        Settings of the relevance-keeping selectors: MMR's ``λ`` and candidates, label-aware similarity's mode
        (``cap`` / ``round_robin``) and cap per label, and the relevance floor of TopK(+UCS) (the ``m`` nearest
        kept before coverage chooses the rest). Defaults in :mod:`ucs.defaults`.
    order : str
        Demonstration order in every prompt of a query-dependent selector: ``selected`` (as chosen),
        ``similar_first`` or ``similar_last`` (by cosine similarity to the query), or ``vote_last`` (grouped by
        label, the label most frequent among the demonstrations last; ``ucs.selectors.base.vote_last_order``).
    clustering, pca_dim, dict_n_atoms, dict_coding, dict_ridge_alpha, dict_omp_nonzeros, dict_tau,
    dict_max_iter, dict_batch_size, dbscan_k, dbscan_q, min_samples, standardize, n_clusters,
    hdbscan_min_cluster_size
        :class:`ucs.clustering.LatentClusterer` settings (``clustering`` is its ``method``: the paper's
        ``dict_dbscan``, ``dbscan``, ``dict_argmax``, or ``dict_kmeans``, ``kmeans``, ``dict_hdbscan``,
        ``auto``). ``dict_tau`` is recorded for parity with the paper's table; the clusterer has no such
        parameter.
    cluster_space : str
        Which embeddings are clustered: ``backbone`` (the paper: the ICL model's own) or ``retrieval`` (the
        retrieval embedder's, ℓ2-normalised).
    estimator, lam, t, bin_size, alpha, integer, design, corpus_prior, relevance
        The UCS prior: unseen estimator, weight ``λ``, expansion ``t``, truncation ``M``, offset ``α``,
        integer floor, score design, corpus-level prior of VoteK+UCS, and whether query-dependent selectors
        weigh coverage by the query's own candidates (``relevance``, :class:`ucs.selectors.UCSPrior`).
    joint_backbones : tuple of str
        Extra backbones whose pool embeddings join this backbone's in a joint dictionary
        (:class:`ucs.clustering.JointLatentClusterer`, paper §5.1); empty (default) = single-source clusters.
        The ICL model stays ``backbone``. ``joint_iter`` is the number of alternation rounds.
    lam_by_selector, dbscan_q_by_selector : dict
        Per-base-selector overrides of ``lam`` / ``dbscan_q`` (paper Tables 9–10 tune them per selector),
        e.g. ``{"votek": 5.0}``. A selector-specific ``q`` re-cuts the run's clustering; nothing is refitted.
    mode : str
        Prediction mode: ``paper``, ``greedy`` (alias ``generate``), ``greedy-strict``, ``likelihood``.
    test_size, test_seed, n_runs, seed
        Evaluation protocol: ``test_size`` queries drawn once with ``test_seed``; ``n_runs`` runs with seeds
        ``seed, seed + 1, ...`` (each run re-fits the clustering and re-seeds the selectors).
    icl_batch_size : int
        Prompts per generation call (part of the sampling seeds).
    preset : str, optional
        Name of the preset the settings came from (recorded only).
    """

    dataset: str = "sample"
    data_dir: Optional[str] = None
    test_file: Optional[str] = None
    backbone: str = "smollm2"
    engine: Optional[str] = None
    layer: Any = D.LAYER
    pooling: str = D.POOLING
    embed_normalize: bool = False
    embed_max_length: int = 256
    context_length: Optional[int] = None
    device: Optional[str] = None
    dtype: Optional[str] = None
    n_gpu_layers: int = 0
    retrieval_embedder: str = BACKBONE_RETRIEVAL
    selectors: Tuple[str, ...] = ("random", "topk", "dpp", "dpp+ucs", "votek", "votek+ucs")
    budget: int = 10
    candidate_num: int = 50
    dpp_scale_factor: float = 0.1
    votek_k: int = 3
    mdl_select_time: int = 5
    mdl_scorer: str = "backbone"
    mmr_lambda: float = D.MMR_LAMBDA
    mmr_fetch_k: int = D.MMR_FETCH_K
    label_mode: str = D.LABEL_MODE
    label_cap: int = D.LABEL_CAP
    topk_floor: int = D.TOPK_FLOOR
    order: str = D.ORDER
    clustering: str = D.CLUSTERING_METHOD
    pca_dim: Optional[int] = D.PCA_DIM
    dict_n_atoms: int = D.N_ATOMS
    dict_coding: str = D.CODING
    dict_ridge_alpha: float = D.RIDGE_ALPHA
    dict_omp_nonzeros: int = D.OMP_N_NONZERO
    dict_tau: float = 1e-3
    dict_max_iter: int = D.DICT_MAX_ITER
    dict_batch_size: int = D.DICT_BATCH_SIZE
    dbscan_k: int = D.DBSCAN_K
    dbscan_q: float = D.DBSCAN_Q
    min_samples: int = D.MIN_SAMPLES
    standardize: bool = False
    n_clusters: Optional[int] = None
    hdbscan_min_cluster_size: int = D.HDBSCAN_MIN_CLUSTER_SIZE
    cluster_space: str = "backbone"
    estimator: str = D.ESTIMATOR
    lam: float = D.LAM
    t: float = D.T
    bin_size: int = D.BIN_SIZE
    alpha: float = D.ALPHA
    integer: bool = False
    design: str = D.DESIGN
    corpus_prior: str = D.CORPUS_PRIOR
    relevance: str = D.RELEVANCE
    joint_backbones: Tuple[str, ...] = ()
    joint_iter: int = 5
    lam_by_selector: Dict[str, float] = field(default_factory=dict)
    dbscan_q_by_selector: Dict[str, float] = field(default_factory=dict)
    mode: str = "paper"
    test_size: Optional[int] = None
    test_seed: int = 42
    n_runs: int = 3
    seed: int = 42
    icl_batch_size: int = 16
    preset: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "selectors", parse_methods(self.selectors))
        object.__setattr__(self, "mode", MODE_ALIASES.get(self.mode, self.mode))
        jb = self.joint_backbones
        object.__setattr__(self, "joint_backbones", (jb,) if isinstance(jb, str) else tuple(jb or ()))
        for name in ("lam_by_selector", "dbscan_q_by_selector"):
            raw = dict(getattr(self, name) or {})
            clean = {}
            for k, v in raw.items():
                base, _ = parse_method(k)
                clean[base] = float(v)
            object.__setattr__(self, name, clean)
        self.validate()

    # ---------------------------------------------------------------- checks
    def validate(self) -> "PipelineConfig":
        """Raise ``ValueError`` naming the first invalid setting."""
        if not isinstance(self.dataset, str) or not self.dataset:
            raise ValueError(f"dataset must be a dataset name or table path; got {self.dataset!r}")
        if self.test_file is not None:
            if not str(self.dataset).lower().endswith(TABLE_SUFFIXES):
                raise ValueError(f"test_file needs dataset to be a table file ({', '.join(TABLE_SUFFIXES)}) holding "
                                 f"the pool; got dataset {self.dataset!r}")
        if not isinstance(self.backbone, str) or not self.backbone:
            raise ValueError(f"backbone must name a model (e.g. 'smollm2'); got {self.backbone!r}")
        if self.engine not in (None, "llama", "transformers"):
            raise ValueError(f"engine must be 'llama', 'transformers' or None; got {self.engine!r}")
        if self.dtype not in (None, "float32", "bfloat16", "float16", "auto"):
            raise ValueError(f"dtype must be 'float32', 'bfloat16', 'float16', 'auto' or None; got {self.dtype!r}")
        if self.dtype is not None and self.engine == "llama":
            raise ValueError("dtype applies to the transformers engine only; drop dtype or set engine='transformers' "
                             "(llama.cpp runs the GGUF file's own quantisation)")
        if self.pooling not in ("mean", "last", "first"):
            raise ValueError(f"pooling must be 'mean', 'last' or 'first'; got {self.pooling!r}")
        if not (self.layer in ("last", "mid") or (isinstance(self.layer, int) and not isinstance(self.layer, bool))):
            raise ValueError(f"layer must be 'last', 'mid' or an integer; got {self.layer!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES) + sorted(MODE_ALIASES)}; got {self.mode!r}")
        for name, low in (("embed_max_length", 1), ("budget", 0), ("candidate_num", 1), ("votek_k", 1),
                          ("mdl_select_time", 1), ("dict_n_atoms", 1), ("dict_omp_nonzeros", 1),
                          ("dict_max_iter", 1), ("dict_batch_size", 1), ("dbscan_k", 1), ("min_samples", 1),
                          ("bin_size", 1), ("test_seed", 0), ("n_runs", 1), ("seed", 0), ("icl_batch_size", 1),
                          ("n_gpu_layers", -1), ("joint_iter", 1)):
            _check_int(getattr(self, name), name, low)
        for name in ("pca_dim", "test_size", "context_length"):
            _check_int(getattr(self, name), name, 1, allow_none=True)
        _check_float(self.dpp_scale_factor, "dpp_scale_factor", strict=True)
        _check_float(self.mmr_lambda, "mmr_lambda")
        if self.mmr_lambda > 1:
            raise ValueError(f"mmr_lambda must be in [0, 1]; got {self.mmr_lambda!r}")
        for name in ("mmr_fetch_k", "label_cap"):
            _check_int(getattr(self, name), name, 1)
        _check_int(self.topk_floor, "topk_floor", 0)
        if self.label_mode not in LABEL_MODES:
            raise ValueError(f"label_mode must be one of {', '.join(LABEL_MODES)}; got {self.label_mode!r}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {self.order!r}")
        _check_float(self.dict_ridge_alpha, "dict_ridge_alpha", strict=True)
        _check_float(self.lam, "lam")
        _check_float(self.t, "t", strict=True)
        _check_float(self.alpha, "alpha", strict=True)
        _check_float(self.dbscan_q, "dbscan_q", strict=True, high=1.0)
        for k, v in self.lam_by_selector.items():
            _check_float(v, f"lam_by_selector[{k!r}]")
        for k, v in self.dbscan_q_by_selector.items():
            _check_float(v, f"dbscan_q_by_selector[{k!r}]", strict=True, high=1.0)
        if any(not isinstance(b, str) or not b for b in self.joint_backbones):
            raise ValueError(f"joint_backbones must be backbone names (e.g. ['gemma3']); got {self.joint_backbones!r}")
        if self.joint_backbones and self.clustering == "dbscan":
            raise ValueError("joint_backbones needs a dictionary: set clustering to 'dict_dbscan' or 'dict_argmax'")

        if self.clustering not in CLUSTERINGS:
            raise ValueError(f"clustering must be one of {', '.join(CLUSTERINGS)}; got {self.clustering!r}")
        if self.joint_backbones and self.clustering in RAW_METHODS:
            raise ValueError(f"joint_backbones needs a dictionary: clustering={self.clustering!r} has none")
        if self.cluster_space not in CLUSTER_SPACES:
            raise ValueError(f"cluster_space must be one of {', '.join(CLUSTER_SPACES)}; got {self.cluster_space!r}")
        if self.relevance not in RELEVANCE:
            raise ValueError(f"relevance must be one of {', '.join(RELEVANCE)}; got {self.relevance!r}")
        _check_int(self.n_clusters, "n_clusters", 1, allow_none=True)
        _check_int(self.hdbscan_min_cluster_size, "hdbscan_min_cluster_size", 2)
        if self.dict_coding not in ("ridge", "omp"):
            raise ValueError(f"dict_coding must be 'ridge' or 'omp'; got {self.dict_coding!r}")
        if self.design not in SCORE_DESIGNS:
            raise ValueError(f"design must be one of {', '.join(SCORE_DESIGNS)}; got {self.design!r}")
        if self.corpus_prior not in CORPUS_PRIORS:
            raise ValueError(f"corpus_prior must be one of {', '.join(CORPUS_PRIORS)}; got {self.corpus_prior!r}")

        resolve_estimator_name(self.estimator)
        return self

    # ------------------------------------------------------------- derived
    @property
    def run_seeds(self) -> Tuple[int, ...]:
        """``seed, seed + 1, ..., seed + n_runs - 1`` (the paper: 42, 43, 44)."""
        return tuple(self.seed + i for i in range(self.n_runs))

    def lam_for(self, method: str) -> float:
        """``λ`` of ``method`` (a per-selector override, else ``lam``)."""
        base, _ = parse_method(method)
        return float(self.lam_by_selector.get(base, self.lam))

    def dbscan_q_for(self, method: str) -> float:
        """Clustering quantile ``q`` of ``method`` (a per-selector override, else ``dbscan_q``).

        A base selector gets the ``q`` of its UCS form, so both are diagnosed on the same clusters."""
        base, _ = parse_method(method)
        return float(self.dbscan_q_by_selector.get(base, self.dbscan_q))

    def selector_params(self, base: str) -> Dict[str, Any]:
        """Constructor parameters of base selector ``base`` under the class's own names (``scale_factor`` for
        ``dpp_scale_factor``, ``k`` for ``votek_k`` ...), for :func:`ucs.selectors.factory.make_selector`."""
        return {param: getattr(self, name) for param, name in _SELECTOR_FIELDS.get(base, {}).items()}

    def clusterer_params(self, seed: int) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.clustering.LatentClusterer` for run ``seed``, under its names."""
        params: Dict[str, Any] = {param: getattr(self, name) for param, name in _CLUSTERER_FIELDS.items()}
        params["random_state"] = int(seed)
        # added later: only when set, so the cache keys of earlier clusterings stay put
        if self.n_clusters is not None:
            params["n_clusters"] = self.n_clusters
        if self.hdbscan_min_cluster_size != D.HDBSCAN_MIN_CLUSTER_SIZE:
            params["hdbscan_min_cluster_size"] = self.hdbscan_min_cluster_size
        if self.clustering in KMEANS_FAMILY:  # the float32 Lloyd k-means: never a clustering cached by the old one
            params["kmeans_impl"] = KMEANS_IMPL
        return params

    def prior_params(self, method: Optional[str] = None) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.selectors.UCSPrior` (all but the cluster ids), under its names;
        ``method`` applies a per-selector λ."""
        return {"estimator": self.estimator, "lam": self.lam if method is None else self.lam_for(method),
                "design": self.design, "corpus_prior": self.corpus_prior, "relevance": self.relevance,
                **self.estimator_params()}

    def stages(self) -> Dict[str, Any]:
        """The settings of each stage under the library classes' own names: ``clusterer`` (LatentClusterer,
        for run ``seed``), ``prior`` (UCSPrior) and ``selectors`` (each base selector's parameters).
        :meth:`from_stages` reads this form back."""
        return {"clusterer": self.clusterer_params(self.seed), "prior": self.prior_params(),
                "selectors": {b: self.selector_params(b) for b in _SELECTOR_FIELDS}}

    @classmethod
    def from_stages(cls, stages: Mapping[str, Any], **fields_: Any) -> "PipelineConfig":
        """A configuration from per-stage settings under the classes' names (the form of :meth:`stages`) and
        other fields by their configuration names; an unknown stage or parameter is refused by name."""
        d: Dict[str, Any] = dict(fields_)
        for stage, params in stages.items():
            if stage == "clusterer":
                table = {**_CLUSTERER_FIELDS, "n_clusters": "n_clusters",
                         "hdbscan_min_cluster_size": "hdbscan_min_cluster_size", "random_state": "seed"}
                if params.get("kmeans_impl", KMEANS_IMPL) != KMEANS_IMPL:
                    raise ValueError(f"clusterer: kmeans_impl={params['kmeans_impl']!r} is not the pipeline's; "
                                     f"a PipelineConfig runs {KMEANS_IMPL!r} (use LatentClusterer directly for another)")
                params = {k: v for k, v in params.items() if k != "kmeans_impl"}
                d.update(_translate(params, table, "clusterer"))
            elif stage == "prior":
                table = {"estimator": "estimator", "lam": "lam", "design": "design", "corpus_prior": "corpus_prior",
                         "relevance": "relevance", "t": "t", "bin_size": "bin_size", "alpha": "alpha",
                         "integer": "integer"}
                d.update(_translate(params, table, "prior"))
            elif stage == "selectors":
                for base, sp in params.items():
                    if base not in _SELECTOR_FIELDS:
                        raise ValueError(f"stages['selectors'] has no selector {base!r}; "
                                         f"choose from {', '.join(_SELECTOR_FIELDS)}")
                    d.update(_translate(sp, _SELECTOR_FIELDS[base], f"selectors.{base}"))
            else:
                raise ValueError(f"unknown stage {stage!r}; stages are clusterer, prior and selectors")
        return cls.from_dict(d)

    def estimator_params(self) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.estimators.UnseenCoverage` for the chosen estimator."""
        params: Dict[str, Any] = {"t": float(self.t)}
        if resolve_estimator_name(self.estimator) == "paper":
            params.update(bin_size=int(self.bin_size), alpha=float(self.alpha), integer=bool(self.integer))
        return params

    def protocol(self):
        """The :class:`ucs.data.TestProtocol` of this configuration."""
        return TestProtocol(test_size=self.test_size, test_seed=self.test_seed, run_seeds=self.run_seeds)

    # ------------------------------------------------------------- JSON
    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON types (tuples become lists); :meth:`from_dict` inverts it."""
        d = dataclasses.asdict(self)
        d["selectors"] = list(self.selectors)
        d["joint_backbones"] = list(self.joint_backbones)
        return d

    def public_dict(self) -> Dict[str, Any]:
        """:meth:`to_dict` as it may be written to a file: the model specs (``backbone``, ``mdl_scorer``,
        ``joint_backbones``) with credentials masked (:func:`ucs.models.http_spec.public_spec`). A
        configuration read back from it has no password in its URLs: the key comes from the environment
        (``OPENAI_API_KEY``)."""
        d = self.to_dict()
        d.update(_public_models(d, keep_options=True))
        return d

    def to_json(self, path: "str | Path | None" = None) -> str:
        """The configuration as JSON (written atomically to ``path`` when given); credentials masked
        (:meth:`public_dict`)."""
        text = json.dumps(self.public_dict(), indent=2, sort_keys=True) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PipelineConfig":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown configuration key(s) {unknown}; valid keys: {sorted(names)}")
        d = dict(data)
        if "selectors" in d:
            d["selectors"] = tuple(d["selectors"]) if not isinstance(d["selectors"], str) else d["selectors"]
        if "joint_backbones" in d and not isinstance(d["joint_backbones"], str):
            d["joint_backbones"] = tuple(d["joint_backbones"] or ())
        return cls(**d)

    @classmethod
    def from_json(cls, text_or_path: "str | Path") -> "PipelineConfig":
        p = Path(text_or_path) if not str(text_or_path).lstrip().startswith("{") else None
        text = p.read_text(encoding="utf-8") if p is not None else str(text_or_path)
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> "PipelineConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "PipelineConfig":
        """Settings of a named preset (``paper``, ``default``, ``cpu``), then ``overrides``.

        Preset keys that are not configuration fields are ignored (``icl_batch_size`` etc. map one to one).
        """
        preset = get_preset(name)
        names = {f.name for f in fields(cls)}
        settings = {k: v for k, v in preset.settings.items() if k in names}
        settings["preset"] = name
        settings.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(settings)

    def key_dict(self) -> Dict[str, Any]:
        """The settings that change results: what the resume check compares (no paths, no method list)."""
        d = self.to_dict()
        for k in ("data_dir", "test_file", "selectors", "preset", "device", "n_gpu_layers"):
            d.pop(k, None)
        if self.dtype is None:  # runs made before the setting existed keep their key
            d.pop("dtype", None)
        for k, v in LATE_DEFAULTS.items():  # runs made before these settings existed keep their key
            if d.get(k) == v:
                d.pop(k, None)
        if not self.joint_backbones:  # single-source runs keep the key they had before joint clustering existed
            d.pop("joint_backbones", None)
            d.pop("joint_iter", None)
        if self.clustering in KMEANS_FAMILY and KMEANS_IMPL == "lloyd" and LLOYD_REVISION >= 3:
            # a run folder never mixes selections made on two revisions' clusters (revisions ≤ 2 keep their key)
            d["lloyd_revision"] = LLOYD_REVISION
        d.update(_public_models(d, keep_options=False))  # no credentials, no client options (timeouts)
        return d

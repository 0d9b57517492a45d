"""The pipeline configuration: one dataclass that names every choice of a run and round-trips to JSON.

The settings of the three library classes a run builds nest under each class's own parameter names:

* ``selector``: ``method`` (the methods evaluated, e.g. ``["dpp", "dpp+ucs"]``) and ``params``, each base
  selector's constructor parameters by its short name (``params["mmr"]["lambda_mult"]``,
  ``params["votek"]["k"]``; :mod:`ucs.selectors`);
* ``prior``: :class:`ucs.selectors.UCSPrior`'s parameters and its estimator's (``lam``, ``estimator``, ``t``
  ...);
* ``clusterer``: :class:`ucs.clustering.LatentClusterer`'s (``method``, ``n_atoms``, ``dbscan_q`` ...).

Everything else (dataset, backbone, budget, prediction mode, protocol) is a field of its own. A path names any
setting: ``selector.params.mmr.lambda_mult``, ``clusterer.dbscan_q``, ``budget`` (``ucs evaluate --set``).

``PipelineConfig()`` is the ``default`` preset; :meth:`PipelineConfig.resolve` layers a preset of
:mod:`ucs.pipeline.presets` (``paper``, ``default``, ``cpu``) or a configuration file, then overrides. The
configuration is written into the run manifest (:func:`ucs.evaluation.evaluate`'s ``config=``) through
:meth:`PipelineConfig.key_dict`, and a resume with different settings is refused.

Configurations in the flat form of earlier releases (``mmr_lambda``, ``votek_k``, ``dict_n_atoms``,
``dbscan_q`` ... as top-level keys; :data:`FLAT_NAMES`) still load, each old name with a one-line
:class:`DeprecatedSettingWarning`, and give the runs they gave: a flat configuration's missing settings mean
what they meant then. The results' key keeps the flat names, so run folders and committed results keep their
keys.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import numbers
import warnings
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ucs import defaults as D
from ucs.clustering.estimator import RAW_METHODS, LatentClusterer
from ucs.clustering.partition import KMEANS_IMPL, LLOYD_REVISION
from ucs.data import TestProtocol
from ucs.data.table import TABLE_SUFFIXES
from ucs.estimators import resolve_estimator_name
from ucs.evaluation.predict import MODES
from ucs.models.http_spec import public_spec
from ucs.pipeline.presets import get_preset
from ucs.selectors.base import ORDERS
from ucs.selectors.factory import (
    BASE_SELECTORS,
    METHODS,
    NO_UCS_FORM,
    canonical_method,
    parse_method,
    selector_class,
)
from ucs.selectors.method import MethodSpec
from ucs.selectors.prior import UCSPrior, check_lam
from ucs.utils.io import atomic_write_text

__all__ = [
    "BASE_SELECTORS",
    "DeprecatedSettingWarning",
    "FLAT_NAMES",
    "METHODS",
    "MODE_ALIASES",
    "NO_UCS_FORM",
    "PipelineConfig",
    "SECTIONS",
    "canonical_method",
    "check_setting_names",
    "parse_method",
    "parse_method_specs",
    "parse_methods",
]

#: CLI spellings of the prediction modes of :mod:`ucs.evaluation.predict`.
MODE_ALIASES = {"generate": "greedy", "generate-strict": "greedy-strict"}
#: Retrieval embedder meaning "the backbone's own embeddings, ℓ2-normalised" (SPEC §1).
BACKBONE_RETRIEVAL = "backbone"
#: What the latent clusters are computed on: the backbone's embeddings (the paper) or the retrieval
#: embedder's.
CLUSTER_SPACES = ("backbone", "retrieval")
#: Clusterings that run k-means (``auto`` chooses among candidates that include it).
KMEANS_FAMILY = ("kmeans", "dict_kmeans", "auto")
#: The settings nested under a library class's parameter names.
SECTIONS = ("selector", "prior", "clusterer")

#: The flat names of earlier releases → the nested paths each one sets. They still load (with a
#: :class:`DeprecatedSettingWarning`), and they stay the names of the results' key
#: (:meth:`PipelineConfig.key_dict`), so that every run folder and committed result keeps its key.
#: ``candidate_num`` set the four selectors that took it then (Set-BSR kept its own default, all candidates).
FLAT_NAMES: Dict[str, Tuple[str, ...]] = {
    "selectors": ("selector.method",),
    "candidate_num": tuple(
        f"selector.params.{b}.candidate_num" for b in ("topk", "labelaware", "dpp", "mdl")
    ),
    "topk_floor": ("selector.params.topk.floor",),
    "mmr_lambda": ("selector.params.mmr.lambda_mult",),
    "mmr_fetch_k": ("selector.params.mmr.fetch_k",),
    "label_mode": ("selector.params.labelaware.mode",),
    "label_cap": ("selector.params.labelaware.max_per_label",),
    "dpp_scale_factor": ("selector.params.dpp.scale_factor",),
    "votek_k": ("selector.params.votek.k",),
    "mdl_select_time": ("selector.params.mdl.select_time",),
    "clustering": ("clusterer.method",),
    "pca_dim": ("clusterer.pca_dim",),
    "dict_n_atoms": ("clusterer.n_atoms",),
    "dict_coding": ("clusterer.coding",),
    "dict_ridge_alpha": ("clusterer.ridge_alpha",),
    "dict_omp_nonzeros": ("clusterer.omp_n_nonzero",),
    "dict_batch_size": ("clusterer.dict_batch_size",),
    "dict_max_iter": ("clusterer.dict_max_iter",),
    "dbscan_k": ("clusterer.dbscan_k",),
    "dbscan_q": ("clusterer.dbscan_q",),
    "min_samples": ("clusterer.min_samples",),
    "standardize": ("clusterer.standardize",),
    "n_clusters": ("clusterer.n_clusters",),
    "hdbscan_min_cluster_size": ("clusterer.hdbscan_min_cluster_size",),
    **{
        name: (f"prior.{name}",)
        for name in (
            "estimator",
            "lam",
            "t",
            "bin_size",
            "alpha",
            "integer",
            "design",
            "corpus_prior",
            "relevance",
        )
    },
}
#: Settings added after results were first published: left out of the results' key while at these values
#: (the key's flat names).
LATE_DEFAULTS = {
    "n_clusters": None,
    "hdbscan_min_cluster_size": D.HDBSCAN_MIN_CLUSTER_SIZE,
    "cluster_space": "backbone",
    "relevance": D.RELEVANCE,
    "mmr_lambda": D.MMR_LAMBDA,
    "mmr_fetch_k": D.MMR_FETCH_K,
    "label_mode": D.LABEL_MODE,
    "label_cap": D.LABEL_CAP,
    "topk_floor": D.TOPK_FLOOR,
    "order": D.ORDER,
}
#: What a flat configuration's missing settings meant (the defaults of earlier releases): the paper's
#: clustering and estimator on the backbone's embeddings, retrieval by the backbone, every test query.
_FLAT_FORM_BASE = {
    "retrieval_embedder": BACKBONE_RETRIEVAL,
    "test_size": None,
    "cluster_space": "backbone",
    "clusterer.method": D.PAPER_CLUSTERING_METHOD,
    "prior.estimator": D.PAPER_ESTIMATOR,
    "preset": None,
}
#: The clusterer settings every cached clustering is keyed by (passed to the class even at its defaults).
_CLUSTERER_KEYED = (
    "method",
    "pca_dim",
    "n_atoms",
    "coding",
    "ridge_alpha",
    "omp_n_nonzero",
    "dict_batch_size",
    "dict_max_iter",
    "dbscan_k",
    "dbscan_q",
    "min_samples",
    "standardize",
)
#: Parameters a pipeline supplies itself: never configuration.
_SUPPLIED = {"prior", "random_state", "scorer", "label_set", "token_embedder", "cluster_ids", "kmeans_impl"}
#: The unseen estimator's parameters the prior passes on (:class:`ucs.estimators.UnseenCoverage`).
_ESTIMATOR_PARAMS = ("t", "bin_size", "alpha", "integer")


class DeprecatedSettingWarning(FutureWarning):
    """A setting written in a form of an earlier release (a flat name such as ``mmr_lambda``): it still loads;
    the message names the nested path to write instead. Shown to users by default (a
    :class:`FutureWarning`)."""


def _method_spec(name: "str | MethodSpec") -> MethodSpec:
    """A method name given to a configuration as its :class:`~ucs.selectors.MethodSpec` (a spec passes as it
    is): the configuration's one parse, of ``selector.method``, of the keys of ``lam_by_selector`` /
    ``dbscan_q_by_selector``, and of a caller's name given to :meth:`PipelineConfig.lam_for`."""
    return MethodSpec.parse(name)


def parse_method_specs(spec: "str | Any") -> Tuple[MethodSpec, ...]:
    """Comma-separated (or sequence of) method names or specs → distinct specs in the given order."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list = []
    for it in items:
        if isinstance(it, str) and not it.strip():
            continue
        m = _method_spec(it)
        if m not in out:
            out.append(m)
    if not out:
        raise ValueError(f"selectors must name at least one method from {', '.join(METHODS)}; got {spec!r}")
    return tuple(out)


def parse_methods(spec: "str | Any") -> Tuple[str, ...]:
    """Comma-separated (or sequence of) method names → canonical, distinct names in the given order."""
    return tuple(m.name for m in parse_method_specs(spec))


# ---------------------------------------------------------------- the sections' names and defaults
def _signature(cls: type) -> Dict[str, Any]:
    """``{parameter: default}`` of ``cls``'s constructor (``inspect.Parameter.empty`` where there is none)."""
    return {
        n: p.default
        for n, p in inspect.signature(cls).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


@lru_cache(maxsize=None)
def _section_params(section: str, base: Optional[str] = None) -> Dict[str, Any]:
    """The parameters a section (``clusterer``, ``prior``, or base selector ``base``'s params) accepts, with
    the owning class's defaults: the constructor's, less what a pipeline supplies (seeds, the prior,
    models)."""
    if section == "clusterer":
        sig = _signature(LatentClusterer)
    elif section == "prior":
        sig = {**_signature(UCSPrior), "t": D.T, "bin_size": D.BIN_SIZE, "alpha": D.ALPHA, "integer": False}
    else:
        sig = _signature(selector_class(base))
    return {k: v for k, v in sig.items() if k not in _SUPPLIED}


def _default_selector() -> Dict[str, Any]:
    return {
        "method": ("random", "topk", "dpp", "dpp+ucs", "votek", "votek+ucs"),
        "params": {
            "topk": {"candidate_num": 50, "floor": D.TOPK_FLOOR},
            "mmr": {"lambda_mult": D.MMR_LAMBDA, "fetch_k": D.MMR_FETCH_K},
            "labelaware": {"mode": D.LABEL_MODE, "max_per_label": D.LABEL_CAP, "candidate_num": 50},
            "dpp": {"candidate_num": 50, "scale_factor": 0.1},
            "votek": {"k": 3},
            "mdl": {"candidate_num": 50, "select_time": 5},
        },
    }


def _default_clusterer() -> Dict[str, Any]:
    return {
        "method": D.DEFAULT_CLUSTERING_METHOD,
        "pca_dim": D.PCA_DIM,
        "n_atoms": D.N_ATOMS,
        "coding": D.CODING,
        "ridge_alpha": D.RIDGE_ALPHA,
        "omp_n_nonzero": D.OMP_N_NONZERO,
        "dict_batch_size": D.DICT_BATCH_SIZE,
        "dict_max_iter": D.DICT_MAX_ITER,
        "dbscan_k": D.DBSCAN_K,
        "dbscan_q": D.DBSCAN_Q,
        "min_samples": D.MIN_SAMPLES,
        "standardize": False,
        "n_clusters": None,
        "hdbscan_min_cluster_size": D.HDBSCAN_MIN_CLUSTER_SIZE,
    }


def _default_prior() -> Dict[str, Any]:
    return {
        "estimator": D.DEFAULT_ESTIMATOR,
        "lam": D.LAM,
        "t": D.T,
        "bin_size": D.BIN_SIZE,
        "alpha": D.ALPHA,
        "integer": False,
        "design": D.DESIGN,
        "corpus_prior": D.CORPUS_PRIOR,
        "relevance": D.RELEVANCE,
    }


def _unknown(where: str, name: Any, valid: "List[str] | Tuple[str, ...]") -> ValueError:
    return ValueError(f"{where} has no setting {name!r}; valid keys: {', '.join(sorted(valid))}")


def _mapping(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a mapping of settings (a JSON object); got {value!r}")
    return dict(value)


def _merged_section(section: str, given: Any, base: Mapping[str, Any]) -> Dict[str, Any]:
    """``given`` (a whole or partial section) merged over ``base``; an unknown key is refused by its path."""
    out = copy.deepcopy(dict(base))
    if section == "selector":
        given = _mapping(given, "selector")
        for k in given:
            if k not in ("method", "params"):
                raise _unknown("selector", k, ("method", "params"))
        if "method" in given:
            out["method"] = given["method"]
        params = _mapping(given.get("params", {}), "selector.params")
        for b, p in params.items():
            if b not in BASE_SELECTORS:
                raise _unknown("selector.params", b, BASE_SELECTORS)
            p = _mapping(p, f"selector.params.{b}")
            valid = _section_params("selector", b)
            for k in p:
                if k not in valid:
                    raise _unknown(f"selector.params.{b}", k, list(valid))
            out.setdefault("params", {}).setdefault(b, {}).update(copy.deepcopy(p))
        return out
    given = _mapping(given, section)
    valid = _section_params(section)
    for k in given:
        if k not in valid:
            raise _unknown(section, k, list(valid))
    out.update(copy.deepcopy(given))
    return out


def _split(path: str) -> List[str]:
    parts = path.split(".")
    if not all(parts):
        raise ValueError(
            f"setting {path!r} is not a path such as 'selector.params.mmr.lambda_mult' or 'budget'"
        )
    return parts


def _nest(path: str, value: Any) -> Dict[str, Any]:
    """``"selector.params.mmr.lambda_mult", 0.8`` →
    ``{"selector": {"params": {"mmr": {"lambda_mult": 0.8}}}}``."""
    parts = _split(path)
    out: Any = value
    for part in reversed(parts):
        out = {part: out}
    return out


def _get(tree: Mapping[str, Any], path: str) -> Any:
    out: Any = tree
    for part in _split(path):
        out = out[part]
    return out


def _leaves(tree: Mapping[str, Any], prefix: str) -> Iterator[Tuple[str, Any]]:
    """``(path, value)`` of every setting under ``tree`` (a section), depth first."""
    for k, v in tree.items():
        path = f"{prefix}.{k}"
        if isinstance(v, Mapping):
            yield from _leaves(v, path)
        else:
            yield path, v


def _class_default(path: str) -> Any:
    """The owning class's default of the setting at ``path`` (``inspect.Parameter.empty`` if it has none)."""
    parts = _split(path)
    if parts[0] == "selector":
        return _section_params("selector", parts[2]).get(parts[3], inspect.Parameter.empty)
    return _section_params(parts[0]).get(parts[1], inspect.Parameter.empty)


def _flat_paths(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Flat names of earlier releases → their paths, with one :class:`DeprecatedSettingWarning` line naming
    them."""
    out: Dict[str, Any] = {}
    renamed: List[str] = []
    for k, v in settings.items():
        if k in FLAT_NAMES:
            paths = FLAT_NAMES[k]
            shown = paths[0]
            if len(paths) > 1:  # candidate_num: one parameter of four selectors
                bases = ",".join(p.split(".")[2] for p in paths)
                shown = f"selector.params.{{{bases}}}.{paths[0].rpartition('.')[2]}"
            renamed.append(f"{k} → {shown}")
            out.update({p: copy.deepcopy(v) for p in paths})
        else:
            out[k] = v
    if renamed:
        more = (
            f" and {len(renamed) - 4} more (--print-config writes the nested form)"
            if len(renamed) > 4
            else ""
        )
        warnings.warn(
            f"flat setting names of earlier releases still load but are deprecated: "
            f"{', '.join(renamed[:4])}{more}",
            DeprecatedSettingWarning,
            stacklevel=4,
        )
    return out


def check_setting_names(settings: "Mapping[str, Any] | List[str]") -> None:
    """Raise ``ValueError`` for a setting name that is neither a field (``budget``), a section or a path into
    one (``selector.params.mmr.lambda_mult``, ``clusterer.dbscan_q``), nor a flat name of earlier releases;
    the message names the valid keys at the level that went wrong. Values are not checked here."""
    names = [f.name for f in fields(PipelineConfig)]
    for key in settings:
        if key in FLAT_NAMES:
            continue
        parts = _split(str(key))
        if parts[0] not in names:
            raise _unknown("the configuration", key, names)
        if parts[0] == "selector":
            levels = [("selector", ("method", "params"))]
            if len(parts) > 2 and parts[1] == "params":
                levels.append(("selector.params", BASE_SELECTORS))
                if len(parts) > 3 and parts[2] in BASE_SELECTORS:
                    levels.append(
                        (f"selector.params.{parts[2]}", list(_section_params("selector", parts[2])))
                    )
            depth = 4 if parts[1:2] == ["params"] else 2
        elif parts[0] in SECTIONS:
            levels, depth = [(parts[0], list(_section_params(parts[0])))], 2
        else:
            levels, depth = [], 1
        for (where, valid), name in zip(levels, parts[1:]):
            if name not in valid:
                raise _unknown(where, name, valid)
        if len(parts) > depth:
            raise ValueError(
                f"setting {key!r}: {'.'.join(parts[:depth])} is a single value, not a section; "
                f"write {'.'.join(parts[:depth])}=..."
            )


def _check_int(value: Any, name: str, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(
            f"{name} must be an integer >= {low}{' or None' if allow_none else ''}; got {value!r}"
        )


def _check_float(
    value: Any, name: str, low: float = 0.0, strict: bool = False, high: Optional[float] = None
) -> None:
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
    """Every setting of a UCS run: data, backbone, retrieval, selectors, prior, clustering, evaluation.

    ``PipelineConfig()`` is the ``default`` preset. A section given to the constructor (``selector``,
    ``prior``, ``clusterer``) may be partial: it is completed from the defaults (by :meth:`replace`: from that
    configuration), so ``PipelineConfig(clusterer={"dbscan_q": 0.1})`` changes ``q`` alone.

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
        ℓ2-normalised), ``all-minilm-l6-v2``, ``all-mpnet-base-v2`` (the paper's and the default), or a
        sentence-transformers directory / hub id.
    selector : dict
        ``method``: the methods to evaluate (see :data:`METHODS`); ``params``: each base selector's
        constructor parameters under its short name, e.g.
        ``{"dpp": {"candidate_num": 50, "scale_factor": 0.1}, "votek": {"k": 3}, "mmr": {"lambda_mult": 0.5,
        "fetch_k":
        20}}`` (paper Table 8; the relevance-keeping selectors' defaults are in :mod:`ucs.defaults`). Any
        parameter of a selector class may be set here except those the pipeline supplies (the prior, the seed,
        MDL's scorer and label set, Set-BSR's token embedder).
    budget : int
        Demonstrations per prompt.
    mdl_scorer : str
        The LM that scores MDL's candidate subsets: ``backbone`` (the ICL model) or any ``backbone`` value.
    order : str
        Demonstration order in every prompt of a query-dependent selector: ``selected`` (as chosen),
        ``similar_first`` or ``similar_last`` (by cosine similarity to the query), or ``vote_last`` (grouped
        by label, the label most frequent among the demonstrations last;
        ``ucs.selectors.base.vote_last_order``).
    clusterer : dict
        :class:`ucs.clustering.LatentClusterer`'s parameters: ``method`` (``kmeans`` by default; the paper's
        ``dict_dbscan``, ``dbscan``, ``dict_argmax``, ``dict_kmeans``, ``dict_hdbscan``, ``auto``),
        ``pca_dim``, ``n_atoms``, ``coding``, ``ridge_alpha``, ``omp_n_nonzero``, ``dict_batch_size``,
        ``dict_max_iter``, ``dbscan_k``, ``dbscan_q``, ``min_samples``, ``standardize``, ``n_clusters``,
        ``hdbscan_min_cluster_size`` (and any other of its parameters but the seed).
    cluster_space : str
        Which embeddings are clustered: ``retrieval`` (the retrieval embedder's, ℓ2-normalised; the default)
        or ``backbone`` (the paper: the ICL model's own).
    dict_tau : float
        Recorded for parity with the paper's Table 8; the clusterer has no such parameter.
    prior : dict
        The UCS prior (:class:`ucs.selectors.UCSPrior`): ``estimator`` (``binomial`` by default, the paper's
        ``paper``), weight ``lam``, expansion ``t``, truncation ``bin_size``, offset ``alpha``, ``integer``
        floor, score ``design``, ``corpus_prior`` of VoteK+UCS, and ``relevance`` (whether query-dependent
        selectors weigh coverage by the query's own candidates).
    joint_backbones : tuple of str
        Extra backbones whose pool embeddings join this backbone's in a joint dictionary
        (:class:`ucs.clustering.JointLatentClusterer`, paper §5.1); empty (default) = single-source clusters.
        The ICL model stays ``backbone``. ``joint_iter`` is the number of alternation rounds.
    lam_by_selector, dbscan_q_by_selector : dict
        Per-base-selector overrides of ``prior.lam`` / ``clusterer.dbscan_q`` (paper Tables 9–10 tune them per
        selector), e.g. ``{"votek": 5.0}``. A selector-specific ``q`` re-cuts the run's clustering; nothing is
        refitted.
    mode : str
        Prediction mode: ``paper``, ``greedy`` (alias ``generate``), ``greedy-strict``, ``likelihood``.
    test_size, test_seed, n_runs, seed
        Evaluation protocol: ``test_size`` queries drawn once with ``test_seed`` (``None``: the protocol's
        size, 500 intent / 40 reasoning queries); ``n_runs`` runs with seeds ``seed, seed + 1, ...`` (each run
        re-fits the clustering and re-seeds the selectors).
    icl_batch_size : int
        Prompts per generation call (part of the sampling seeds).
    preset : str, optional
        Name of the preset the settings came from (recorded only).

    Examples
    --------
    >>> cfg = PipelineConfig.resolve("paper", overrides={"selector.params.votek.k": 5, "budget": 4})
    >>> cfg.clusterer["method"], cfg.selector["params"]["votek"], cfg.budget
    ('dict_dbscan', {'k': 5}, 4)
    >>> PipelineConfig() == PipelineConfig.resolve("default")
    True
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
    retrieval_embedder: str = "all-mpnet-base-v2"
    selector: Dict[str, Any] = field(default_factory=_default_selector)
    budget: int = 10
    mdl_scorer: str = "backbone"
    order: str = D.ORDER
    clusterer: Dict[str, Any] = field(default_factory=_default_clusterer)
    cluster_space: str = D.DEFAULT_COVERAGE["cluster_space"]
    dict_tau: float = 1e-3
    prior: Dict[str, Any] = field(default_factory=_default_prior)
    joint_backbones: Tuple[str, ...] = ()
    joint_iter: int = 5
    lam_by_selector: Dict[str, float] = field(default_factory=dict)
    dbscan_q_by_selector: Dict[str, float] = field(default_factory=dict)
    mode: str = "paper"
    test_size: Optional[int] = 500
    test_seed: int = 42
    n_runs: int = 3
    seed: int = 42
    icl_batch_size: int = 16
    preset: Optional[str] = "default"

    def __post_init__(self) -> None:
        defaults = {
            "selector": _default_selector(),
            "prior": _default_prior(),
            "clusterer": _default_clusterer(),
        }
        for name in SECTIONS:
            object.__setattr__(self, name, _merged_section(name, getattr(self, name), defaults[name]))
        try:
            specs = parse_method_specs(self.selector["method"])
        except ValueError as exc:
            raise ValueError(f"selector.method: {exc}") from None
        self.selector["method"] = tuple(m.name for m in specs)  # the results' keys: canonical strings
        object.__setattr__(self, "_method_specs", specs)  # not a field: kept, never serialised
        object.__setattr__(self, "mode", MODE_ALIASES.get(self.mode, self.mode))
        jb = self.joint_backbones
        object.__setattr__(self, "joint_backbones", (jb,) if isinstance(jb, str) else tuple(jb or ()))
        for name in ("lam_by_selector", "dbscan_q_by_selector"):
            raw = dict(getattr(self, name) or {})
            clean = {}
            for k, v in raw.items():
                clean[_method_spec(k).base] = float(v)
            object.__setattr__(self, name, clean)
        self.validate()

    # ---------------------------------------------------------------- checks
    def validate(self) -> "PipelineConfig":
        """Raise ``ValueError`` naming the first invalid setting by its path (``clusterer.dbscan_q``)."""
        if not isinstance(self.dataset, str) or not self.dataset:
            raise ValueError(f"dataset must be a dataset name or table path; got {self.dataset!r}")
        if self.test_file is not None:
            if not str(self.dataset).lower().endswith(TABLE_SUFFIXES):
                raise ValueError(
                    f"test_file needs dataset to be a table file ({', '.join(TABLE_SUFFIXES)}) holding "
                    f"the pool; got dataset {self.dataset!r}"
                )
        if not isinstance(self.backbone, str) or not self.backbone:
            raise ValueError(f"backbone must name a model (e.g. 'smollm2'); got {self.backbone!r}")
        if self.engine not in (None, "llama", "transformers"):
            raise ValueError(f"engine must be 'llama', 'transformers' or None; got {self.engine!r}")
        if self.dtype not in (None, "float32", "bfloat16", "float16", "auto"):
            raise ValueError(
                f"dtype must be 'float32', 'bfloat16', 'float16', 'auto' or None; got {self.dtype!r}"
            )
        if self.dtype is not None and self.engine == "llama":
            raise ValueError(
                "dtype applies to the transformers engine only; drop dtype or set engine='transformers' "
                "(llama.cpp runs the GGUF file's own quantisation)"
            )
        if self.pooling not in ("mean", "last", "first"):
            raise ValueError(f"pooling must be 'mean', 'last' or 'first'; got {self.pooling!r}")
        if not (
            self.layer in ("last", "mid")
            or (isinstance(self.layer, int) and not isinstance(self.layer, bool))
        ):
            raise ValueError(f"layer must be 'last', 'mid' or an integer; got {self.layer!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES) + sorted(MODE_ALIASES)}; got {self.mode!r}")
        for name, low in (
            ("embed_max_length", 1),
            ("budget", 0),
            ("test_seed", 0),
            ("n_runs", 1),
            ("seed", 0),
            ("icl_batch_size", 1),
            ("n_gpu_layers", -1),
            ("joint_iter", 1),
        ):
            _check_int(getattr(self, name), name, low)
        for name in ("test_size", "context_length"):
            _check_int(getattr(self, name), name, 1, allow_none=True)
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {self.order!r}")
        self._validate_selector()
        self._validate_clusterer()
        self._validate_prior()
        for k, v in self.lam_by_selector.items():
            check_lam(v, f"lam_by_selector[{k!r}]")
        for k, v in self.dbscan_q_by_selector.items():
            _check_float(v, f"dbscan_q_by_selector[{k!r}]", strict=True, high=1.0)
        if any(not isinstance(b, str) or not b for b in self.joint_backbones):
            raise ValueError(
                f"joint_backbones must be backbone names (e.g. ['gemma3']); got {self.joint_backbones!r}"
            )
        if self.joint_backbones and self.clusterer["method"] in RAW_METHODS:
            raise ValueError(
                f"joint_backbones needs a dictionary: clusterer.method={self.clusterer['method']!r} has "
                "none (set it to 'dict_dbscan' or 'dict_argmax')"
            )
        if self.cluster_space not in CLUSTER_SPACES:
            raise ValueError(
                f"cluster_space must be one of {', '.join(CLUSTER_SPACES)}; got {self.cluster_space!r}"
            )
        return self

    def _validate_selector(self) -> None:
        """Each selector's settings, checked before a run by its own class (:meth:`Selector.check_params`,
        the checks its ``fit`` runs)."""
        for base, params in self.selector["params"].items():
            selector_class(base).check_params(params, f"selector.params.{base}")

    def _validate_clusterer(self) -> None:
        """The clusterer's settings, checked by :class:`LatentClusterer` itself (its ``validate``, the checks
        its ``fit`` runs), the message naming the key the user wrote."""
        try:
            LatentClusterer(**self.clusterer).validate()
        except ValueError as exc:
            raise ValueError(f"clusterer.{exc}") from None

    def _validate_prior(self) -> None:
        p = self.prior
        _check_float(p["t"], "prior.t", strict=True)
        _check_float(p["alpha"], "prior.alpha", strict=True)
        _check_int(p["bin_size"], "prior.bin_size", 1)
        try:  # λ, the score design, the corpus prior and relevance: UCSPrior's own checks
            UCSPrior.build([0], {k: p[k] for k in ("lam", "design", "corpus_prior", "relevance")}).validate()
        except ValueError as exc:
            raise ValueError(f"prior.{exc}") from None
        try:
            resolve_estimator_name(p["estimator"])
        except ValueError as exc:
            raise ValueError(f"prior.estimator: {exc}") from None

    # ------------------------------------------------------------- derived
    @property
    def run_seeds(self) -> Tuple[int, ...]:
        """``seed, seed + 1, ..., seed + n_runs - 1`` (the paper: 42, 43, 44)."""
        return tuple(self.seed + i for i in range(self.n_runs))

    @property
    def method_specs(self) -> Tuple[MethodSpec, ...]:
        """The methods of ``selector.method`` as :class:`~ucs.selectors.MethodSpec`, in order: parsed once,
        when the configuration was made (``selector.method`` keeps their canonical names)."""
        return self._method_specs

    def lam_for(self, method: "MethodSpec | str") -> float:
        """``λ`` of ``method`` (a per-selector override, else ``prior.lam``). The package passes a
        :class:`~ucs.selectors.MethodSpec`; a caller's name is parsed here."""
        return float(self.lam_by_selector.get(_method_spec(method).base, self.prior["lam"]))

    def dbscan_q_for(self, method: "MethodSpec | str") -> float:
        """Clustering quantile ``q`` of ``method`` (a per-selector override, else ``clusterer.dbscan_q``).
        The package passes a :class:`~ucs.selectors.MethodSpec`; a caller's name is parsed here.

        A base selector gets the ``q`` of its UCS form, so both are diagnosed on the same clusters."""
        return float(self.dbscan_q_by_selector.get(_method_spec(method).base, self.clusterer["dbscan_q"]))

    def selector_params(self, base: str) -> Dict[str, Any]:
        """``selector.params[base]``: base selector ``base``'s constructor parameters (a copy), for
        :func:`ucs.selectors.factory.make_selector`."""
        return copy.deepcopy(self.selector["params"].get(base, {}))

    def clusterer_params(self, seed: int) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.clustering.LatentClusterer` for run ``seed``: ``clusterer`` with
        the seed, the settings added later only when they differ from the class's defaults (so the cache keys
        of earlier clusterings stay put)."""
        c = self.clusterer
        params: Dict[str, Any] = {k: c[k] for k in _CLUSTERER_KEYED}
        params["random_state"] = int(seed)
        if c["n_clusters"] is not None:
            params["n_clusters"] = c["n_clusters"]
        if c["hdbscan_min_cluster_size"] != D.HDBSCAN_MIN_CLUSTER_SIZE:
            params["hdbscan_min_cluster_size"] = c["hdbscan_min_cluster_size"]
        for k, v in c.items():
            if (
                k not in params
                and k not in ("n_clusters", "hdbscan_min_cluster_size")
                and v != _class_default(f"clusterer.{k}")
            ):
                params[k] = v
        if (
            c["method"] in KMEANS_FAMILY
        ):  # the float32 Lloyd k-means: never a clustering cached by the old one
            params["kmeans_impl"] = KMEANS_IMPL
        return params

    def prior_params(self, method: "MethodSpec | str | None" = None) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.selectors.UCSPrior` (all but the cluster ids); ``method`` applies
        a per-selector λ. The estimator's parameters follow the estimator (:meth:`estimator_params`)."""
        p = self.prior
        out = {
            "estimator": p["estimator"],
            "lam": p["lam"] if method is None else self.lam_for(method),
            "design": p["design"],
            "corpus_prior": p["corpus_prior"],
            "relevance": p["relevance"],
            **self.estimator_params(),
        }
        out.update({k: v for k, v in p.items() if k not in out and k not in _ESTIMATOR_PARAMS})
        return out

    def estimator_params(self) -> Dict[str, Any]:
        """Keyword arguments of :class:`ucs.estimators.UnseenCoverage` for the chosen estimator."""
        p = self.prior
        params: Dict[str, Any] = {"t": float(p["t"])}
        if resolve_estimator_name(p["estimator"]) == "paper":
            params.update(bin_size=int(p["bin_size"]), alpha=float(p["alpha"]), integer=bool(p["integer"]))
        return params

    def protocol(self):
        """The :class:`ucs.data.TestProtocol` of this configuration."""
        return TestProtocol(test_size=self.test_size, test_seed=self.test_seed, run_seeds=self.run_seeds)

    # ------------------------------------------------------------- building
    @classmethod
    def resolve(
        cls,
        preset: Optional[str] = None,
        file: "str | Path | None" = None,
        overrides: Optional[Mapping[str, Any]] = None,
    ) -> "PipelineConfig":
        """A configuration from a preset (``paper``, ``default``, ``cpu``; default ``default``) or a JSON
        configuration file (complete: not both), then ``overrides`` (see :meth:`with_settings`)."""
        if file is not None and preset is not None:
            raise ValueError(
                "give either a preset or a configuration file, not both (a configuration file is complete)"
            )
        if file is not None:
            try:
                base = cls.from_json(Path(file))
            except ValueError as exc:
                raise ValueError(f"{file}: {exc}") from None
        else:
            name = preset or "default"
            base = cls().with_settings({**get_preset(name).settings, "preset": name})
        return base.with_settings(overrides or {})

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "PipelineConfig":
        """Deprecated spelling of ``PipelineConfig.resolve(name, overrides=overrides)`` (earlier releases, and
        the commands on earlier results pages); warns once with a :class:`DeprecatedSettingWarning`."""
        warnings.warn(
            f"PipelineConfig.from_preset({name!r}, ...) is now PipelineConfig.resolve({name!r}, "
            "overrides={...})",
            DeprecatedSettingWarning,
            stacklevel=2,
        )
        return cls.resolve(name, overrides=overrides)

    def with_settings(self, settings: Mapping[str, Any]) -> "PipelineConfig":
        """This configuration with ``settings`` applied, in order; each key is a field (``budget``), a section
        given as a mapping (merged into this one's), or a path (``selector.params.mmr.lambda_mult``,
        ``clusterer.dbscan_q``, ``prior.lam``). The flat names of earlier releases (``mmr_lambda``) still
        apply, each with a :class:`DeprecatedSettingWarning`. An unknown name is refused with the valid
        keys."""
        check_setting_names(settings)
        tree = self.to_dict()
        for key, value in _flat_paths(dict(settings)).items():
            parts = _split(str(key))
            if parts[0] in SECTIONS:
                tree[parts[0]] = _merged_section(
                    parts[0], _nest(".".join(parts[1:]), value) if len(parts) > 1 else value, tree[parts[0]]
                )
            else:
                tree[parts[0]] = value
        return type(self)._from_tree(tree)

    def replace(self, **changes: Any) -> "PipelineConfig":
        """A copy with ``changes`` (field names; a section given as a mapping is merged into this one's)."""
        return self.with_settings(changes)

    # ------------------------------------------------------------- JSON
    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON types (tuples become lists), nested sections included; :meth:`from_dict` inverts it."""
        d = dataclasses.asdict(self)
        d["selector"]["method"] = list(self.selector["method"])
        d["joint_backbones"] = list(self.joint_backbones)
        return d

    def flat_dict(self) -> Dict[str, Any]:
        """Every setting under the flat names of earlier releases (:data:`FLAT_NAMES`: ``selectors``,
        ``mmr_lambda``, ``votek_k``, ``dbscan_q`` ...): the names the results' key speaks (:meth:`key_dict`).
        Parameters that had no flat name are not in it."""
        d = {k: v for k, v in self.to_dict().items() if k not in SECTIONS}
        tree = self.to_dict()
        for name, paths in FLAT_NAMES.items():
            d[name] = _get(tree, paths[0])
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
    def _from_tree(cls, tree: Mapping[str, Any]) -> "PipelineConfig":
        d = dict(tree)
        if "joint_backbones" in d and not isinstance(d["joint_backbones"], str):
            d["joint_backbones"] = tuple(d["joint_backbones"] or ())
        return cls(**d)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PipelineConfig":
        """A configuration from :meth:`to_dict`'s form; sections may be partial (completed from the defaults).
        The flat form of earlier releases (``mmr_lambda``, ``dbscan_q`` ... at the top, no section) loads as
        it did then: each flat name with a :class:`DeprecatedSettingWarning`, and a missing setting meaning
        what it meant then (the paper's clustering and estimator on the backbone's embeddings, retrieval by
        the backbone, every test query)."""
        if not isinstance(data, Mapping):
            raise ValueError(
                f"a configuration must be a mapping of settings (a JSON object); got {type(data).__name__}"
            )
        names = [f.name for f in fields(cls)]
        unknown = sorted(k for k in data if k not in names and k not in FLAT_NAMES)
        if unknown:
            raise ValueError(f"unknown configuration key(s) {unknown}; valid keys: {sorted(names)}")
        flat_form = any(k in FLAT_NAMES for k in data) and not any(s in data for s in SECTIONS)
        base = cls().with_settings(_FLAT_FORM_BASE) if flat_form else cls()
        return base.with_settings(data)

    @classmethod
    def from_json(cls, text_or_path: "str | Path") -> "PipelineConfig":
        """A configuration from JSON text or a JSON file (:meth:`from_dict`)."""
        p = Path(text_or_path) if not str(text_or_path).lstrip().startswith("{") else None
        text = p.read_text(encoding="utf-8") if p is not None else str(text_or_path)
        return cls.from_dict(json.loads(text))

    def key_dict(self) -> Dict[str, Any]:
        """The settings that change results: what the resume check compares (no paths, no method list), under
        the flat names results were first keyed by (:meth:`flat_dict`); a section parameter without a flat
        name enters by its path (``selector.params.mdl.block``) only when it differs from its class's
        default."""
        d = self.flat_dict()
        for k in ("data_dir", "test_file", "selectors", "preset", "device", "n_gpu_layers"):
            d.pop(k, None)
        if self.dtype is None:  # runs made before the setting existed keep their key
            d.pop("dtype", None)
        for k, v in LATE_DEFAULTS.items():  # runs made before these settings existed keep their key
            if d.get(k) == v:
                d.pop(k, None)
        if (
            not self.joint_backbones
        ):  # single-source runs keep the key they had before joint clustering existed
            d.pop("joint_backbones", None)
            d.pop("joint_iter", None)
        if self.clusterer["method"] in KMEANS_FAMILY and KMEANS_IMPL == "lloyd" and LLOYD_REVISION >= 3:
            # a run folder never mixes selections made on two revisions' clusters (revisions ≤ 2 keep their
            # key)
            d["lloyd_revision"] = LLOYD_REVISION
        d.update(self._unflat_settings())
        d.update(_public_models(d, keep_options=False))  # no credentials, no client options (timeouts)
        return d

    def _unflat_settings(self) -> Dict[str, Any]:
        """``{path: value}`` of the section parameters the flat names do not carry: one without a flat name
        that differs from its class's default, and a second path of a flat name whose value differs from the
        first's."""
        tree = self.to_dict()
        first = {p: paths[0] for paths in FLAT_NAMES.values() for p in paths}
        out: Dict[str, Any] = {}
        for section in SECTIONS:
            for path, value in _leaves(tree[section], section):
                if path == "selector.method":
                    continue
                if path in first:
                    if value != _get(tree, first[path]):
                        out[path] = value
                elif value != _class_default(path):
                    out[path] = value
        return out

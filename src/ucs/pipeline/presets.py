"""Hyper-parameter presets of the paper (Tables 8–10) and the CPU preset of this project.

``COMMON`` is Table 8 (settings shared by every experiment); ``TUNED_DBSCAN_Q`` and
``TUNED_LAMBDA`` are Tables 9 and 10, keyed by ``(backbone, selector, dataset)``. The paper
tuned both by grid search without saying on which split; ``ucs`` ships them as published and
offers its own tuning on a validation split.

Backbones in the tables are the paper's (``qwen2.5-7b-it``, ``llama-3.2-3b-it``,
``gemma-2-9b-it``); none of them installs on a CPU-only machine without a model hub, so the
``cpu`` preset keeps the paper's method settings and shrinks only the evaluation sizes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ucs.defaults import DEFAULT_COVERAGE as _DEFAULT_COVERAGE

__all__ = ["COMMON", "TUNED_DBSCAN_Q", "TUNED_LAMBDA", "DEFAULT_COVERAGE", "PAPER_COVERAGE", "COVERAGE_KEYS", "Preset",
           "PRESETS", "get_preset", "tuned"]

#: Paper Table 8 — common hyper-parameters.
COMMON: dict[str, Any] = {
    "budget": 10,
    "test_size": 500,
    "n_runs": 3,
    "seed": 42,
    "icl_batch_size": 16,
    "retrieval_embedder": "all-mpnet-base-v2",
    "candidate_num": 50,
    "dict_n_atoms": 64,
    "dict_ridge_alpha": 10.0,
    "dict_omp_nonzeros": 4,
    "dict_tau": 1e-3,
    "dict_coding": "omp",  # what the table and scripts ran; the method section describes ridge
    "dict_max_iter": 50,
    "pca_dim": 128,
    "dict_batch_size": 512,
    "clustering": "dict_dbscan",
    "dbscan_k": 20,
    "dbscan_q": 0.01,
    "min_samples": 1,
    "lam": 0.1,
    "t": 5.0,
    "bin_size": 20,
    "alpha": 1.0,
    "votek_k": 3,
    "mdl_select_time": 5,
    "mdl_scorer": "gpt2",
    "dpp_scale_factor": 0.1,
}

_BACKBONES = ("qwen2.5-7b-it", "llama-3.2-3b-it", "gemma-2-9b-it")
_SELECTORS = ("mdl", "dpp", "votek")
_DATASETS = ("banking77", "clinc150", "hwu64")


def _table(rows: dict[tuple[str, str], tuple[float, float, float]]) -> dict[tuple[str, str, str], float]:
    return {(b, s, d): v for (b, s), vals in rows.items() for d, v in zip(_DATASETS, vals)}


#: Paper Table 9 — tuned ``dbscan_q`` per (backbone, UCS selector, dataset).
TUNED_DBSCAN_Q: dict[tuple[str, str, str], float] = _table(
    {
        ("qwen2.5-7b-it", "mdl"): (0.15, 0.01, 0.15),
        ("qwen2.5-7b-it", "dpp"): (0.01, 0.01, 0.01),
        ("qwen2.5-7b-it", "votek"): (0.01, 0.01, 0.01),
        ("llama-3.2-3b-it", "mdl"): (0.01, 0.01, 0.01),
        ("llama-3.2-3b-it", "dpp"): (0.01, 0.01, 0.01),
        ("llama-3.2-3b-it", "votek"): (0.01, 0.01, 0.01),
        ("gemma-2-9b-it", "mdl"): (0.01, 0.01, 0.15),
        ("gemma-2-9b-it", "dpp"): (0.01, 0.10, 0.01),
        ("gemma-2-9b-it", "votek"): (0.01, 0.01, 0.5),
    }
)

#: Paper Table 10 — tuned ``λ`` (``sgt_lambda``) per (backbone, UCS selector, dataset).
TUNED_LAMBDA: dict[tuple[str, str, str], float] = _table(
    {
        ("qwen2.5-7b-it", "mdl"): (0.01, 0.005, 0.001),
        ("qwen2.5-7b-it", "dpp"): (0.001, 0.01, 0.01),
        ("qwen2.5-7b-it", "votek"): (5.0, 5.0, 5.0),
        ("llama-3.2-3b-it", "mdl"): (0.05, 0.05, 0.05),
        ("llama-3.2-3b-it", "dpp"): (0.50, 0.05, 0.05),
        ("llama-3.2-3b-it", "votek"): (0.05, 0.05, 0.50),
        ("gemma-2-9b-it", "mdl"): (0.05, 0.05, 0.05),
        ("gemma-2-9b-it", "dpp"): (0.50, 0.10, 0.05),
        ("gemma-2-9b-it", "votek"): (0.50, 0.10, 0.05),
    }
)


#: The project's coverage setting (one definition: :data:`ucs.defaults.DEFAULT_COVERAGE`), adopted by the
#: ``default`` and ``cpu`` presets. Chosen without test queries (docs/results/validation_banking77.md): on 120
#: validation queries held out of the BANKING77 pool no setting changed DPP+UCS beyond noise (every paired
#: interval includes 0), so the clusters' health breaks the tie — spherical k-means with ⌈√N⌉ clusters in the
#: retrieval space has a largest cluster of 2–3 % and label AMI 0.75 on the pools' own labels, against 10–14 %
#: and 0.10 for the paper's; the OSW binomial estimator carries the guarantees the paper SGT lacks; relevance
#: weighting stays off (it lost on validation: −2.5 [−5.9, +0.8]). ``healthy_ucs`` measures it against
#: ``PAPER_COVERAGE``.
DEFAULT_COVERAGE: dict[str, Any] = dict(_DEFAULT_COVERAGE)
#: The settings a coverage setting may fix (what ``DEFAULT_COVERAGE`` and the paper's ``COMMON`` say about it).
COVERAGE_KEYS = ("clustering", "dbscan_q", "min_samples", "n_clusters", "hdbscan_min_cluster_size", "cluster_space",
                 "estimator", "relevance")
PAPER_COVERAGE: dict[str, Any] = {"clustering": "dict_dbscan", "dbscan_q": COMMON["dbscan_q"],
                                  "min_samples": COMMON["min_samples"], "cluster_space": "backbone",
                                  "estimator": "paper", "relevance": "none"}


def tuned(backbone: str, selector: str, dataset: str) -> dict[str, float]:
    """The paper's tuned ``dbscan_q`` and ``lam`` for one combination.

    ``selector`` may be given with or without a ``+ucs``/``_sgt`` suffix. Combinations the paper
    did not tune (other backbones or datasets) fall back to the common values.
    """
    base = selector.lower().replace("+ucs", "").replace("_sgt", "").replace("_ucs", "")
    if base not in _SELECTORS:
        raise ValueError(f"selector must be one of {_SELECTORS} (optionally with +ucs); got {selector!r}")
    key = (backbone.lower(), base, dataset.lower())
    return {
        "dbscan_q": TUNED_DBSCAN_Q.get(key, COMMON["dbscan_q"]),
        "lam": TUNED_LAMBDA.get(key, COMMON["lam"]),
    }


@dataclass(frozen=True)
class Preset:
    """A named set of experiment settings (method settings + evaluation sizes)."""

    name: str
    description: str
    settings: dict[str, Any] = field(default_factory=dict)

    def with_overrides(self, **overrides: Any) -> "Preset":
        unknown = sorted(set(overrides) - set(self.settings))
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown} for preset {self.name!r}; known: {sorted(self.settings)}")
        return replace(self, settings={**self.settings, **overrides})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        "paper",
        "The paper's Table 8 exactly (OMP codes, 500 test queries, 3 runs, GPT-2 as the MDL scorer).",
        dict(COMMON),
    ),
    "default": Preset(
        "default",
        "The project default: the paper's selector settings with the method section's ridge codes, and the "
        "coverage settings chosen without test queries (DEFAULT_COVERAGE: spherical k-means with ⌈√N⌉ clusters "
        "in the retrieval embedder's space, the OSW binomial estimator); the MDL scorer is the backbone LM, since "
        "no package ships GPT-2 weights.",
        {**COMMON, "dict_coding": "ridge", "mdl_scorer": "backbone", **DEFAULT_COVERAGE},
    ),
    "cpu": Preset(
        "cpu",
        "Fits a 2-core CPU machine: the default method settings, SmolLM2-135M as backbone on the transformers "
        "engine (about 3x faster than llama.cpp at embedding and label scoring on CPU; the MiniLM retrieval "
        "embedder needs torch anyway), likelihood classification, 100 test queries and 3 runs.",
        {**COMMON, "dict_coding": "ridge", "mdl_scorer": "backbone", **DEFAULT_COVERAGE, "test_size": 100,
         "backbone": "smollm2", "engine": "transformers", "mode": "likelihood",
         "retrieval_embedder": "all-minilm-l6-v2"},
    ),
}


def get_preset(name: str) -> Preset:
    """Preset by name (``paper``, ``default``, ``cpu``)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}; got {name!r}") from None

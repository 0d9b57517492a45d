"""The UCS main job: dataset → backbone embeddings → latent clusters → retrieval → selectors → evaluation.

>>> from ucs.pipeline import Pipeline, PipelineConfig
>>> cfg = PipelineConfig(dataset="sample", backbone="dummy", retrieval_embedder="backbone",
...                      selector={"method": ("dpp", "dpp+ucs")}, n_runs=1)
>>> cfg.run_seeds
(42,)
>>> cfg.with_settings({"selector.params.dpp.scale_factor": 0.2}).selector["params"]["dpp"]
{'candidate_num': 50, 'scale_factor': 0.2}

``Pipeline(cfg).run("runs/sample")`` evaluates every method with the resumable runner of
:mod:`ucs.evaluation`; see ``docs/pipeline.md``.
"""

from ucs.pipeline.backbones import load_backbone_for, load_retrieval_for
from ucs.pipeline.config import (
    BASE_SELECTORS,
    METHODS,
    DeprecatedSettingWarning,
    PipelineConfig,
    parse_method,
    parse_methods,
)
from ucs.pipeline.diagnostics import coverage_markdown, coverage_stats, row_spectra, summarize_coverage
from ucs.pipeline.pipeline import Pipeline, PipelineResult

__all__ = [
    "BASE_SELECTORS",
    "DeprecatedSettingWarning",
    "METHODS",
    "Pipeline",
    "PipelineConfig",
    "PipelineResult",
    "coverage_markdown",
    "coverage_stats",
    "load_backbone_for",
    "load_retrieval_for",
    "parse_method",
    "parse_methods",
    "row_spectra",
    "summarize_coverage",
]

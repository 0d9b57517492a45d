"""ICL evaluation: prompt formats, answer matching, prediction modes, metrics, the resumable runner."""

from ucs.evaluation.matching import PaperMatcher, StrictMatcher, extract_answer, get_matcher
from ucs.evaluation.metrics import bootstrap_ci, mean_std
from ucs.evaluation.predict import MODES, PredictionMode, generate_answers, get_mode, likelihood_predict
from ucs.evaluation.prompts import (
    INTENT_FORMAT,
    REASONING_FORMAT,
    BuiltPrompt,
    PromptBuilder,
    PromptFormat,
    format_for_task,
    render_chat,
)
from ucs.evaluation.records import read_records
from ucs.evaluation.summary import grid_markdown, summarize, to_markdown, write_report
from ucs.evaluation.runner import EvaluationResult, SelectionFn, evaluate, package_versions

__all__ = [
    "INTENT_FORMAT",
    "MODES",
    "REASONING_FORMAT",
    "BuiltPrompt",
    "EvaluationResult",
    "PaperMatcher",
    "PredictionMode",
    "PromptBuilder",
    "PromptFormat",
    "SelectionFn",
    "StrictMatcher",
    "bootstrap_ci",
    "evaluate",
    "extract_answer",
    "format_for_task",
    "generate_answers",
    "get_matcher",
    "get_mode",
    "grid_markdown",
    "likelihood_predict",
    "mean_std",
    "package_versions",
    "read_records",
    "render_chat",
    "summarize",
    "to_markdown",
    "write_report",
]

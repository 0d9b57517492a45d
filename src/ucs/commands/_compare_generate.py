"""``ucs compare --mode generate --metric …``: the options of compare's generate mode, checked at the edge.

In generate mode the model writes each answer (:class:`~ucs.experiments.generate.generating_predictor`) and
``--metric`` scores it in [0, 1] against the query's answer (the label column); beside every selector a copy
baseline (the nearest chosen demonstration's answer) is scored with the same metric.
"""

from __future__ import annotations

from typing import Any, List, Optional

import typer

__all__ = ["MODES", "check_mode", "generate_estimate_line", "generate_predictor"]

#: ``--mode``: the label with the highest likelihood, or an answer the model writes.
MODES = ("likelihood", "generate")

MODE_HELP = (
    "likelihood: the model picks the label with the highest likelihood; generate: it writes the "
    "answer (greedy, one line), scored with --metric against the label column, beside a copy "
    "baseline."
)
METRIC_HELP = "generate mode's score in [0, 1]: exact (default), f1, json, regex:PATTERN or module:function."
MAX_NEW_TOKENS_HELP = (
    "generate mode: the longest answer in tokens (default: the longest example answer + 8, at most 256)."
)


def check_mode(mode: str, metric: Optional[str], max_new_tokens: Optional[int]) -> Any:
    """The answer metric of generate mode (``exact`` when ``--metric`` is not given), ``None`` in likelihood
    mode; refuses an unknown mode, a metric that does not parse, and generate's options in likelihood mode."""
    from ucs.evaluation.answer_metrics import get_metric

    if mode not in MODES:
        raise typer.BadParameter(f"choose one of {', '.join(MODES)}; got {mode!r}", param_hint="--mode")
    if mode == "likelihood":
        for value, name in ((metric, "--metric"), (max_new_tokens, "--max-new-tokens")):
            if value is not None:
                raise typer.BadParameter(
                    f"{name} is for written answers: it needs --mode generate "
                    "(likelihood mode picks a label, right or wrong)",
                    param_hint=name,
                )
        return None
    try:
        return get_metric(metric or "exact")
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--metric") from None


def generate_predictor(
    backbone: Any,
    answers: List[str],
    text_column: str,
    label_column: str,
    chat_template: Optional[str],
    max_new_tokens: Optional[int],
) -> Any:
    """The backbone writing answers; ``max_new_tokens`` defaults to the longest of the examples' ``answers``
    in the backbone's tokens plus a margin (:func:`~ucs.experiments.generate.default_max_new_tokens`)."""
    from ucs.experiments.generate import default_max_new_tokens, generating_predictor

    if max_new_tokens is None:
        max_new_tokens = default_max_new_tokens(backbone.count_tokens, answers)
    return generating_predictor(
        backbone, max_new_tokens, text_key=text_column, label_key=label_column, chat_template=chat_template
    )


def generate_estimate_line(
    n_prompts: int, seconds: float, max_new_tokens: int, metric: str, workers: int = 1
) -> str:
    """The cost line of generate mode: prompts, the answer length, the measured seconds and the minutes."""
    side = f" with {workers} workers side by side" if workers > 1 else ""
    return (
        f"cost: {n_prompts} prompts (an answer of up to {max_new_tokens} tokens generated in each, "
        f"scored with {metric}), {seconds:.2f} s per prompt measured here{side} → about "
        f"{n_prompts * seconds / 60:.1f} minutes"
    )

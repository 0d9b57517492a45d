"""One default everywhere: every command's, the index's and the integrations' defaults are read from
ucs.defaults."""

from __future__ import annotations

import inspect

import pytest
import typer.main

from ucs import defaults as D
from ucs.cli import app


def _option_default(command: str, name: str, sub: str = None):
    group = typer.main.get_command(app)
    cmd = group.commands[command]
    if sub is not None:
        cmd = cmd.commands[sub]
    return next(p.default for p in cmd.params if p.name == name)


@pytest.mark.parametrize(
    "command,sub,option,expected",
    [
        ("select", None, "method", D.METHOD),
        ("select", None, "estimator", D.DEFAULT_COVERAGE["prior"]["estimator"]),
        ("cluster", None, "method", D.DEFAULT_COVERAGE["clusterer"]["method"]),
        ("distributed", "select", "method", D.METHOD),
        ("distributed", "select", "estimator", D.DEFAULT_COVERAGE["prior"]["estimator"]),
        ("prompts", None, "order", None),  # None: ucs.defaults.application_order, resolved by the index
    ],
)
def test_every_commands_default_is_the_librarys(command, sub, option, expected):
    assert _option_default(command, option, sub) == expected


def test_the_application_entry_points_default_to_the_same_selector():
    from ucs import SelectorIndex

    assert inspect.signature(SelectorIndex).parameters["method"].default == D.METHOD
    lc = pytest.importorskip("ucs.integrations.langchain")
    assert inspect.signature(lc.UCSExampleSelector.from_examples).parameters["method"].default == D.METHOD
    ds = pytest.importorskip("ucs.integrations.dspy")
    assert ds.UCSFewShot(k=2, mode="per_call")._check() == D.METHOD
    assert ds.UCSFewShot(k=2, mode="fixed")._check() == D.FIXED_METHOD


def test_demonstration_order_and_selector_settings_default_to_the_librarys():
    from ucs import SelectorIndex
    from ucs.pipeline import PipelineConfig
    from ucs.selectors import LabelAwareSelector, MMRSelector, Selector, TopKSelector

    assert inspect.signature(SelectorIndex.select).parameters["order"].default is None  # application_order
    assert inspect.signature(Selector.select).parameters["order"].default == D.ORDER
    p = PipelineConfig().selector["params"]
    assert (
        PipelineConfig().order,
        p["mmr"]["lambda_mult"],
        p["mmr"]["fetch_k"],
        p["labelaware"]["mode"],
        p["labelaware"]["max_per_label"],
        p["topk"]["floor"],
    ) == (D.ORDER, D.MMR_LAMBDA, D.MMR_FETCH_K, D.LABEL_MODE, D.LABEL_CAP, D.TOPK_FLOOR)
    assert (MMRSelector().lambda_mult, MMRSelector().fetch_k) == (D.MMR_LAMBDA, D.MMR_FETCH_K)
    assert (LabelAwareSelector().mode, LabelAwareSelector().max_per_label) == (D.LABEL_MODE, D.LABEL_CAP)
    assert TopKSelector().floor == D.TOPK_FLOOR
    lc = pytest.importorskip("ucs.integrations.langchain")
    assert inspect.signature(lc.UCSExampleSelector.__init__).parameters["order"].default is None


def test_an_application_gets_vote_last_where_its_examples_have_labels_and_the_selectors_order_where_not():
    import numpy as np

    from ucs import SelectorIndex
    from ucs.testing.doubles import DummyEmbedder

    assert D.application_order(True) == D.APPLICATION_ORDER == "vote_last"
    assert D.application_order(False) == D.ORDER
    intents = ["card", "refund", "card", "card", "refund", "top up", "card", "refund"]
    examples = [{"text": f"{w} question {i}", "intent": w} for i, w in enumerate(intents)]
    labelled = SelectorIndex(DummyEmbedder(dim=32), "topk", input_keys=["text"], output_key="intent").fit(
        examples
    )
    default = labelled.select("card question", k=6)
    assert (
        default.indices.tolist() == labelled.select("card question", k=6, order="vote_last").indices.tolist()
    )
    labels = [default.examples[i]["intent"] for i in range(6)]
    assert labels[-1] == max(
        set(labels), key=lambda w: (labels.count(w), w == labels[-1])
    )  # the majority last
    plain = SelectorIndex(DummyEmbedder(dim=32), "topk", input_keys=["text"]).fit(examples)
    np.testing.assert_array_equal(
        plain.select("card question", k=6).indices, plain.select("card question", k=6, order=D.ORDER).indices
    )

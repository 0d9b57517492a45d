"""The contracts floor itself: the batteries pass on the doubles and catch broken implementations, the
clusterer passes scikit-learn's battery, and no production module imports ucs.testing."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ucs.testing import (
    CLUSTERER_CHECKS,
    EMBEDDER_CHECKS,
    LM_CHECKS,
    DummyBackbone,
    DummyEmbedder,
    DummyLM,
    check_clusterer,
    check_embedder,
    check_language_model,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "ucs"


@pytest.mark.parametrize("check", list(EMBEDDER_CHECKS))
@pytest.mark.parametrize("make", [lambda: DummyEmbedder(dim=8), DummyBackbone], ids=["embedder", "backbone"])
def test_doubles_pass_the_embedder_battery(make, check):
    assert check_embedder(make(), [check]) == [check]


@pytest.mark.parametrize("check", list(LM_CHECKS))
@pytest.mark.parametrize("make", [DummyLM, DummyBackbone], ids=["lm", "backbone"])
def test_doubles_pass_the_lm_battery(make, check):
    assert check_language_model(make(), [check]) == [check]


class _BatchDependent(DummyEmbedder):
    def embed(self, texts):
        out = super().embed(texts)
        return (out + len(texts)).astype(np.float32)


class _SkippingOrder(DummyEmbedder):
    def batch_order(self, texts):
        return super().batch_order(texts)[1:]


class _Float64(DummyEmbedder):
    def embed(self, texts):
        return super().embed(texts).astype(np.float64)


class _SumOnly(DummyLM):
    def score_continuations(self, prefix, continuations, reduction="sum"):
        return super().score_continuations(prefix, continuations, "sum")


class _Loose(DummyLM):
    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        return ["x" for _ in prompts]


class _OneSeedPerCall(DummyLM):
    """Samples every prompt of a call with the call's seed (the old test double's behaviour)."""

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        return [
            DummyLM.generate(self, [p], max_new_tokens, temperature, top_p, stop, seed)[0] for p in prompts
        ]


class _BatchAwareOneAtATime(DummyLM):
    """Declares generates_one_at_a_time, but its greedy answers depend on the batch they came in."""

    generates_one_at_a_time = True

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        out = DummyLM.generate(self, prompts, max_new_tokens, temperature, top_p, stop, seed)
        return [o + str(len(prompts)) for o in out]


class _OneAtATime(DummyLM):
    generates_one_at_a_time = True


def test_a_true_one_at_a_time_declaration_passes():
    assert check_language_model(_OneAtATime(), ["one_at_a_time"]) == ["one_at_a_time"]


@pytest.mark.parametrize(
    "obj, battery, check, match",
    [
        (_BatchDependent(dim=8), check_embedder, "rows_independent", "batch"),
        (_Float64(dim=8), check_embedder, "shape", "float32"),
        (_SkippingOrder(dim=8, batch_size=4), check_embedder, "batch_order", "partition"),
        (_BatchDependent(dim=8, batch_size=4), check_embedder, "batch_order", "apart"),
        (_SumOnly(), check_language_model, "scores", "Not equal to tolerance"),
        (_Loose(), check_language_model, "generate", "accepted"),
        (_OneSeedPerCall(), check_language_model, "sample_seeds", "alone with seed"),
        (_BatchAwareOneAtATime(), check_language_model, "one_at_a_time", "a batch gave"),
    ],
)
def test_batteries_catch_broken_implementations(obj, battery, check, match):
    with pytest.raises(AssertionError, match=match):
        battery(obj, [check])


def test_unknown_check_names_are_refused():
    with pytest.raises(ValueError, match="unknown check"):
        check_embedder(DummyEmbedder(), ["nope"])


@pytest.mark.parametrize("name", list(CLUSTERER_CHECKS))
def test_latent_clusterer_passes_scikit_learns_battery(name):
    passed = check_clusterer(name)
    for must in (
        "check_clustering",
        "check_fit_idempotent",
        "check_estimators_pickle",
        "check_get_params_invariance",
    ):
        assert must in passed or (name == "dict_dbscan" and must == "check_clustering")


def test_no_production_module_imports_the_testing_floor():
    offenders = []
    for path in SRC.rglob("*.py"):
        if "testing" in path.relative_to(SRC).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "ucs.testing" or n.startswith("ucs.testing.") for n in names):
                offenders.append(str(path.relative_to(SRC)))
    assert not offenders, f"production modules import ucs.testing: {offenders}"


def test_the_dummy_backbone_reaches_the_pipeline_as_a_plugin():
    from ucs.pipeline import PipelineConfig, load_backbone_for

    a = load_backbone_for(PipelineConfig(backbone="dummy"))
    b = load_backbone_for(PipelineConfig(backbone="dummy-3"))
    assert isinstance(a, DummyBackbone) and isinstance(b, DummyBackbone) and a.identity != b.identity


class _RenormalisedTwin(DummyEmbedder):
    """Declares a twin whose rows do not normalise to its own (a scaled, shifted copy)."""

    def unnormalized(self):
        return _Shifted(dim=self._dim, seed=self.seed, normalize=False)


class _Shifted(DummyEmbedder):
    def embed(self, texts):
        return (super().embed(texts) + 0.5).astype(np.float32)


def test_unnormalized_clause_catches_a_wrong_twin():
    with pytest.raises(AssertionError, match="differs"):
        check_embedder(_RenormalisedTwin(dim=8), ["unnormalized"])

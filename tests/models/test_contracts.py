"""The model batteries of ucs.testing on real backbones and the real retrieval embedder, one test per
(model, check): SmolLM2 through llama.cpp and through transformers, all-MiniLM-L6-v2 from PyPI."""

from __future__ import annotations

import pytest

from ucs.testing import EMBEDDER_CHECKS, LM_CHECKS, check_embedder, check_language_model

BACKBONES = ("smollm2_llama", "smollm2_hf")


@pytest.fixture(scope="session")
def minilm():
    pytest.importorskip("sentence_transformers")
    from ucs.embedding import load_retrieval_embedder
    from ucs.utils import weights as resources
    from ucs.utils.optional import MissingDependencyError

    try:
        resources.all_minilm_l6_v2_dir()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    return load_retrieval_embedder("all-minilm-l6-v2", batch_size=8)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", BACKBONES)
@pytest.mark.parametrize("check", list(LM_CHECKS))
def test_backbone_is_a_language_model(fixture, check, request):
    assert check_language_model(request.getfixturevalue(fixture), [check]) == [check]


@pytest.mark.slow
@pytest.mark.parametrize("fixture", [*BACKBONES, "minilm"])
@pytest.mark.parametrize("check", list(EMBEDDER_CHECKS))
def test_real_embedder_is_an_embedder(fixture, check, request):
    assert check_embedder(request.getfixturevalue(fixture), [check]) == [check]

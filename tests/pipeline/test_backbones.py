import numpy as np
import pytest

from ucs.embedding import Embedder
from ucs.lm import LanguageModel
from ucs.pipeline import PipelineConfig, load_backbone_for, load_retrieval_for
from ucs.testing import DummyBackbone
from ucs.pipeline.backbones import backbone_kwargs


def test_dummy_backbone_is_an_embedder_and_a_language_model():
    b = load_backbone_for(PipelineConfig(backbone="dummy"))
    assert isinstance(b, DummyBackbone)
    assert isinstance(b, Embedder) and isinstance(b, LanguageModel)
    e = b.embed(["a", "b", "a"])
    assert e.shape == (3, b.dim) and np.array_equal(e[0], e[2])
    s = b.score_continuations("prefix", [" x", " y"])
    assert s.shape == (2,) and np.all(np.isfinite(s))


def test_backbone_retrieval_is_the_normalised_backbone():
    b = DummyBackbone()
    r = load_retrieval_for(PipelineConfig(backbone="dummy", retrieval_embedder="backbone"), b)
    x = r.embed(["hello", "world"])
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        x,
        b.embed(["hello", "world"]) / np.linalg.norm(b.embed(["hello", "world"]), axis=1)[:, None],
        rtol=1e-6,
    )
    assert r.identity["l2"] is True


def test_backbone_kwargs_route_devices_to_their_engine():
    kw = backbone_kwargs(PipelineConfig(engine="transformers", device="cuda", n_gpu_layers=-1, layer="mid"))
    assert kw["device"] == "cuda" and "n_gpu_layers" not in kw and kw["layer"] == "mid"
    kw = backbone_kwargs(PipelineConfig(engine="llama", device="cuda", n_gpu_layers=-1, embed_max_length=128))
    assert kw["n_gpu_layers"] == -1 and "device" not in kw and kw["max_length"] == 128


def test_dtype_goes_to_the_transformers_engine_only():
    assert backbone_kwargs(PipelineConfig(engine="transformers", dtype="bfloat16"))["dtype"] == "bfloat16"
    assert "dtype" not in backbone_kwargs(PipelineConfig(engine="transformers"))
    with pytest.raises(ValueError, match="dtype applies to the transformers engine"):
        PipelineConfig(engine="llama", dtype="bfloat16")
    with pytest.raises(ValueError, match="dtype must be"):
        PipelineConfig(engine="transformers", dtype="int4")

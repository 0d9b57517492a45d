"""llama.cpp backbone with real SmolLM2 / Gemma-3 weights."""

import numpy as np
import pytest

from tests.models.conftest import TEXTS
from ucs.embedding import Embedder, cached_embed
from ucs.lm import LanguageModel
from ucs.models import InvalidModelFileError, load_backbone
from ucs.models.llamacpp import LlamaCppBackbone

LABELS = [" card_arrival", " card_linking", " exchange_rate", " lost_or_stolen_card", " top_up_failed"]
PROMPT = (
    "Query: I still have not got my card\nLabel: card_arrival\n\n"
    "Query: what rate do you use for euros?\nLabel: exchange_rate\n\n"
    "Query: where is the card you sent me?\nLabel:"
)


@pytest.mark.slow
def test_embeddings_shape_determinism_and_bad_input(smollm2_llama):
    m = smollm2_llama
    assert isinstance(m, Embedder) and isinstance(m, LanguageModel)
    x = m.embed(TEXTS + [b"caf\xe9 \xff card".decode("utf-8", "replace")])
    assert x.shape == (6, 576) and x.dtype == np.float32 and np.isfinite(x).all()

    # a row does not depend on the batch it was computed in, beyond quantised-kernel rounding: on CPUs
    # whose llama.cpp matmul kernel depends on the batch's token count (AMX/VNNI builds) rows move by
    # about 1 % in norm; elsewhere they agree to 1e-5
    def assert_same_rows(a, b):
        rel = np.linalg.norm(a - b, axis=-1) / np.linalg.norm(b, axis=-1)
        assert np.all(rel < 0.05), rel

    assert_same_rows(m.embed([TEXTS[1]])[0], x[1])
    assert_same_rows(m.embed(TEXTS), x[:5])
    np.testing.assert_array_equal(m.embed(TEXTS), m.embed(TEXTS))  # same request, same bits
    assert m.embed([]).shape == (0, 576)
    # requests on one topic are closer to each other than to another topic's, on average: raw mean-pooled
    # vectors share a large common direction (cosines 0.85-0.90 here), so single triples can go either way
    card = [
        "where is my new card",
        "my card has not arrived yet",
        "when will my card be delivered",
        "I am still waiting for my card",
    ]
    rate = [
        "what is the euro exchange rate",
        "which exchange rate do you use for dollars",
        "how much is one pound in euros",
        "what rate do you apply when converting currency",
    ]
    u = m.embed(card + rate)
    u = u / np.linalg.norm(u, axis=1, keepdims=True)
    cos, topic = u @ u.T, np.repeat([0, 1], 4)
    same = (topic[:, None] == topic[None]) & ~np.eye(8, dtype=bool)
    assert cos[same].mean() > cos[topic[:, None] != topic[None]].mean()  # 0.898 vs 0.851 measured


@pytest.mark.slow
def test_layer_and_pooling_options(smollm2_path):
    with pytest.raises(ValueError, match="only exposes the last layer"):
        LlamaCppBackbone(smollm2_path, layer="mid").load()
    with pytest.raises(ValueError, match="out of range"):
        LlamaCppBackbone(smollm2_path, layer=99).load()
    with pytest.raises(ValueError, match="pooling"):
        LlamaCppBackbone(smollm2_path, pooling="max")
    m = LlamaCppBackbone(smollm2_path, pooling="last", normalize=True, max_length=8, n_threads=2)
    x = m.embed(
        ["one two three four five six seven eight nine ten", "one two three four five six seven eight"]
    )
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(x[0], x[1], atol=1e-5)  # truncated to the same 8 tokens
    m.close()


@pytest.mark.slow
def test_tree_scoring_matches_independent_scoring(smollm2_llama):
    m = smollm2_llama
    joint = m.score_continuations_detailed(PROMPT, LABELS)
    alone = np.array([m.score_continuations(PROMPT, [c])[0] for c in LABELS])
    np.testing.assert_allclose(joint.logprob, alone, atol=1e-3)
    assert (joint.logprob < 0).all() and (joint.n_tokens >= 1).all()
    np.testing.assert_allclose(m.score_continuations(PROMPT, LABELS, reduction="mean"), joint.mean)
    copy = m.score_continuations("red apple, red apple, red apple, red", [" apple", " zebra"])
    assert copy[0] > copy[1] + 3
    # a trailing space in the prefix is moved onto the continuations
    np.testing.assert_allclose(
        m.score_continuations(PROMPT + " ", [c[1:] for c in LABELS]), joint.logprob, atol=1e-3
    )
    # the shared prefix is evaluated in one context even when labels exceed one trie batch
    many = [f" label_{i}" for i in range(260)]  # > 255 sequences: two groups
    s = m.score_continuations(PROMPT, many)
    assert s.shape == (260,) and np.isfinite(s).all()
    # large batches take other quantized-matmul paths in llama.cpp: agreement to rounding, not bits
    np.testing.assert_allclose(s[[0, 259]], m.score_continuations(PROMPT, [many[0], many[259]]), atol=0.1)


@pytest.mark.slow
def test_prefix_reuse_scores_like_a_fresh_context_whatever_came_before(smollm2_path, smollm2_llama):
    """The KV cache of the run a prompt shares with the previous one is kept: the scores are those of a
    context that evaluates every prompt from scratch, in any order, for prompts sharing an opening, one a
    prefix of another and one that diverges in the middle of the opening."""
    names = [
        "card_arrival",
        "card_linking",
        "exchange_rate",
        "lost_or_stolen_card",
        "top_up_failed",
        "activate_my_card",
        "age_limit",
        "apple_pay_or_google_pay",
        "atm_support",
        "automatic_top_up",
        "balance_not_updated_after_bank_transfer",
        "beneficiary_not_allowed",
        "cancel_transfer",
        "card_about_to_expire",
        "card_acceptance",
        "card_delivery_estimate",
        "cash_withdrawal_charge",
        "change_pin",
        "compromised_card",
        "contactless_not_working",
        "country_support",
        "declined_transfer",
    ]
    opening = f"Assign exactly one label to the text. Labels: {', '.join(names)}.\n"  # about 170 tokens
    demo_a = "Text: I still have not got my card\nLabel: card_arrival\n"
    demo_b = "Text: what rate do you use for euros?\nLabel: exchange_rate\n"
    prompts = [
        opening + demo_a + "Text: where is the card you sent me?\nLabel:",
        opening + demo_a + demo_b + "Text: my top up did not work\nLabel:",
        opening + demo_a,  # the beginning of the first two
        opening + demo_b + "Text: someone took my card\nLabel:",
        opening.replace("atm_support", "atm_help") + demo_a + "Text: hi\nLabel:",
    ]
    fresh = LlamaCppBackbone(
        smollm2_path, n_threads=2, context_length=512, batch_tokens=256, prefix_reuse=False
    )
    want = [fresh.score_continuations_detailed(p, LABELS).logprob for p in prompts]
    assert fresh.prefix_tokens_evaluated == sum(fresh.count_tokens(p) for p in prompts)
    fresh.close()
    m = smollm2_llama
    for n, i in enumerate(np.random.default_rng(0).permutation(np.r_[np.arange(len(prompts)), [0, 2]])):
        before = m.prefix_tokens_evaluated
        got = m.score_continuations_detailed(prompts[i], LABELS).logprob
        np.testing.assert_allclose(got, want[i], rtol=0, atol=1e-5)
        assert np.argmax(got) == np.argmax(want[i])
        if n:  # every prompt opens alike: from the second call on, the shared run is reused
            assert m.prefix_tokens_evaluated - before < m.count_tokens(prompts[i]) - 20
    assert m.prefix_reuse and not LlamaCppBackbone(smollm2_path, prefix_reuse=False).prefix_reuse


@pytest.mark.slow
def test_long_prompt_is_truncated_not_an_error(smollm2_llama):
    long = "word " * 600 + "\nLabel:"
    assert np.isfinite(smollm2_llama.score_continuations(long, LABELS[:2])).all()
    assert isinstance(smollm2_llama.generate([long], max_new_tokens=2)[0], str)
    assert np.isfinite(smollm2_llama.score_continuations("", [""])).all()


@pytest.mark.slow
def test_a_context_shorter_than_the_sequence_limit_scores_and_generates(smollm2_path, smollm2_llama):
    """A context of fewer than 256 tokens used to abort the process inside llama.cpp (one output row per
    parallel sequence); it now scores in smaller groups, with the default context's numbers."""
    small = LlamaCppBackbone(smollm2_path, context_length=64, n_threads=2)
    labels = [f" label_{i}" for i in range(70)]  # more continuations than 64 sequences: several groups
    prefix = "Query: where is my card?\nLabel:"  # short: neither context cuts it
    # other batch shapes take other quantized-matmul paths in llama.cpp: agreement to rounding, not bits
    np.testing.assert_allclose(
        small.score_continuations(prefix, labels),
        smollm2_llama.score_continuations(prefix, labels),
        rtol=0.02,
        atol=0.1,
    )
    assert isinstance(small.generate(["hello"], max_new_tokens=2)[0], str)
    small.close()


@pytest.mark.slow
def test_generation_greedy_sampled_and_stop(smollm2_llama):
    m = smollm2_llama
    g = m.generate(["The capital of France is", "1, 2, 3, 4,"], max_new_tokens=6)
    assert "Paris" in g[0] and "5" in g[1]
    assert m.generate(["1, 2, 3, 4,"], max_new_tokens=6) == [g[1]]
    assert "," not in m.generate(["1, 2, 3, 4,"], max_new_tokens=6, stop=[","])[0]
    s1 = m.generate(["Once upon a time"], max_new_tokens=8, temperature=1.0, seed=3)
    assert s1 == m.generate(["Once upon a time"], max_new_tokens=8, temperature=1.0, seed=3)
    with pytest.raises(ValueError, match="top_p"):
        m.generate(["x"], top_p=0)


@pytest.mark.slow
def test_second_run_over_a_pool_does_not_load_the_model(smollm2_path, tmp_path):
    pool = TEXTS[:3]
    first = cached_embed(load_backbone(smollm2_path, n_threads=2), pool, tmp_path)
    fresh = load_backbone(smollm2_path, n_threads=2)
    second = cached_embed(fresh, pool, tmp_path)
    assert fresh._llm is None
    np.testing.assert_array_equal(first, second)


def test_bad_model_files(tmp_path):
    pytest.importorskip("llama_cpp")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(InvalidModelFileError, match="not a GGUF"):
        LlamaCppBackbone(junk).load()
    with pytest.raises(FileNotFoundError):
        LlamaCppBackbone(tmp_path / "missing.gguf").load()
    gguf = pytest.importorskip("gguf")
    meta_only = tmp_path / "meta.gguf"
    w = gguf.GGUFWriter(str(meta_only), arch="llama")
    w.add_name("not-a-model")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(InvalidModelFileError, match="could not load"):
        LlamaCppBackbone(meta_only).load()


@pytest.mark.slow
def test_gemma3_backbone():
    pytest.importorskip("llama_cpp")
    from ucs.utils.optional import MissingDependencyError

    try:
        m = load_backbone("gemma3-270m", engine="llama", n_threads=2)
        m.load()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    x = m.embed(TEXTS[:3])
    assert x.shape == (3, 640) and np.isfinite(x).all()
    s = m.score_continuations_detailed(PROMPT, LABELS)
    # a tree batch of all labels vs two labels: the Q4_K matmul kernel may depend on the batch size
    np.testing.assert_allclose(
        s.logprob[[1, 3]], m.score_continuations(PROMPT, [LABELS[1], LABELS[3]]), rtol=2e-2
    )
    assert isinstance(m.generate(["The capital of France is"], max_new_tokens=4)[0], str)
    assert m.identity["model"] == "gemma3-270m"
    m.close()

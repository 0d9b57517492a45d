"""Contract batteries of the model floor: :class:`~ucs.embedding.Embedder` and :class:`~ucs.lm.LanguageModel`.

Each ``check_*`` is a function of the object under test that raises ``AssertionError`` naming the broken
clause; :func:`check_embedder` and :func:`check_language_model` run them all and return their names. The
same checks run on the test doubles, on a real PyPI-installed backbone (SmolLM2 through both engines) and
on the sentence-transformers retrieval embedder, so a new backend is held to the contract by adding one
test line. Cost: a handful of short texts through the model (an LM check scores ≤ 3 continuations and
generates ≤ 4 tokens per prompt).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ucs.testing._battery import run_battery

__all__ = ["EMBEDDER_CHECKS", "LM_CHECKS", "check_embedder", "check_language_model"]

_TEXTS = ["The card was declined.", "How do I reset my PIN?", "Ünïcode — and emoji 🙂", "x"]


def check_embedder_shape(emb: Any) -> None:
    """``embed`` gives a C-contiguous float32 array (n, dim) of finite values; ``dim`` is a positive int."""
    dim = emb.dim
    assert isinstance(dim, int) and dim > 0, f"dim must be a positive int, got {dim!r}"
    out = emb.embed(_TEXTS)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32, (
        f"embed must return float32, got {type(out)}"
    )
    assert out.shape == (len(_TEXTS), dim), f"embed gave shape {out.shape}, expected {(len(_TEXTS), dim)}"
    assert out.flags["C_CONTIGUOUS"], "embed must return a C-contiguous array"
    assert np.isfinite(out).all(), "embed returned non-finite values"


def check_embedder_rows_independent(emb: Any) -> None:
    """Row i depends only on text i: the same text alone, in another batch or another order gives its row."""
    full = emb.embed(_TEXTS)
    alone = emb.embed(_TEXTS[1:2])
    rev = emb.embed(_TEXTS[::-1])
    np.testing.assert_allclose(alone[0], full[1], rtol=1e-3, atol=1e-4, err_msg="row depends on its batch")
    np.testing.assert_allclose(rev[::-1], full, rtol=1e-3, atol=1e-4, err_msg="rows depend on their order")


def check_embedder_deterministic(emb: Any) -> None:
    """The same texts twice give the same vectors."""
    np.testing.assert_allclose(
        emb.embed(_TEXTS), emb.embed(_TEXTS), rtol=1e-5, atol=1e-6, err_msg="embed is not deterministic"
    )


def check_embedder_identity(emb: Any) -> None:
    """``identity`` is a non-empty JSON-serialisable dict, stable between calls (the embedding-cache key)."""
    ident = emb.identity
    assert isinstance(ident, dict) and ident, f"identity must be a non-empty dict, got {ident!r}"
    assert json.dumps(ident, sort_keys=True) == json.dumps(emb.identity, sort_keys=True), "identity changes"


def check_embedder_empty(emb: Any) -> None:
    """No texts give an empty (0, dim) array."""
    out = emb.embed([])
    assert out.shape == (0, emb.dim), f"embed([]) gave shape {out.shape}, expected (0, {emb.dim})"


def check_embedder_batch_order(emb: Any) -> None:
    """Where ``batch_order`` exists: its batches partition the rows, and embedding consecutive batches
    separately gives the rows of one call over all texts bit for bit (what checkpointing relies on)."""
    order = getattr(emb, "batch_order", None)
    if order is None:
        return
    n = 2 * int(getattr(emb, "batch_size", 8)) + 3
    texts = [" ".join(["word"] * (1 + (7 * i) % 23)) + f" {i}" for i in range(n)]
    batches = [np.asarray(b, dtype=np.int64) for b in order(texts)]
    flat = np.sort(np.concatenate(batches))
    assert np.array_equal(flat, np.arange(n)), "batch_order does not partition the rows"
    assert len(batches) > 1, f"batch_order put {n} texts in one batch; expected several (batch_size)"
    full = emb.embed(texts)
    for part in (batches[:1], batches[1:]):
        idx = np.concatenate(part)
        got = emb.embed([texts[j] for j in idx])
        assert np.array_equal(got, full[idx]), "consecutive batches embedded apart differ from one call"


def check_embedder_unnormalized(emb: Any) -> None:
    """Where ``unnormalized()`` gives a twin: its identity differs, and ℓ2-normalising its rows gives this
    embedder's rows bit for bit (what lets the embedding cache derive an ℓ2 pass from a plain one)."""
    from ucs.embedding.base import l2_normalize, unnormalized_twin

    make = getattr(emb, "unnormalized", None)
    if not callable(make) or make() is None:
        return
    twin = unnormalized_twin(emb)
    assert twin is not None, "the unnormalised twin has the same identity"
    got = l2_normalize(twin.embed(_TEXTS))
    assert np.array_equal(got, emb.embed(_TEXTS)), "l2_normalize of the twin's rows differs from embed's rows"


EMBEDDER_CHECKS: Dict[str, Callable[[Any], None]] = {
    "shape": check_embedder_shape,
    "rows_independent": check_embedder_rows_independent,
    "deterministic": check_embedder_deterministic,
    "identity": check_embedder_identity,
    "empty": check_embedder_empty,
    "batch_order": check_embedder_batch_order,
    "unnormalized": check_embedder_unnormalized,
}

_PREFIX = "Text: I lost my card\nLabel:"
_LABELS = [" lost card", " card has not arrived", " pin"]


def check_lm_scores(lm: Any) -> None:
    """Detailed scores: float64 log-probabilities ≤ 0 and int64 token counts ≥ 1, one per continuation;
    ``score_continuations`` reduces them by ``sum`` and ``mean``."""
    d = lm.score_continuations_detailed(_PREFIX, _LABELS)
    lp, nt = np.asarray(d.logprob), np.asarray(d.n_tokens)
    assert lp.shape == nt.shape == (len(_LABELS),), f"scores have shapes {lp.shape}, {nt.shape}"
    assert lp.dtype == np.float64 and np.issubdtype(nt.dtype, np.integer), f"dtypes {lp.dtype}, {nt.dtype}"
    assert np.isfinite(lp).all() and (lp <= 1e-9).all(), f"log-probabilities must be finite and <= 0: {lp}"
    assert (nt >= 1).all(), f"every continuation has at least one token: {nt}"
    np.testing.assert_allclose(lm.score_continuations(_PREFIX, _LABELS, "sum"), lp, rtol=1e-6)
    np.testing.assert_allclose(lm.score_continuations(_PREFIX, _LABELS, "mean"), lp / nt, rtol=1e-6)


def check_lm_scores_per_continuation(lm: Any) -> None:
    """A continuation's score does not depend on the others scored with it."""
    both = lm.score_continuations(_PREFIX, _LABELS)
    one = lm.score_continuations(_PREFIX, _LABELS[2:])
    np.testing.assert_allclose(
        one[0], both[2], rtol=1e-3, atol=1e-3, err_msg="scores depend on the other labels"
    )


def check_lm_generate(lm: Any) -> None:
    """One string per prompt; greedy generation is deterministic; invalid arguments raise ``ValueError``."""
    prompts = [_PREFIX, "Q: 1 + 1 =\nA:"]
    a = lm.generate(prompts, max_new_tokens=4, temperature=0.0)
    assert isinstance(a, list) and len(a) == 2 and all(isinstance(t, str) for t in a), f"generate gave {a!r}"
    assert a == lm.generate(prompts, max_new_tokens=4, temperature=0.0), (
        "greedy generation is not deterministic"
    )
    for bad in (dict(max_new_tokens=0), dict(temperature=-1.0), dict(top_p=0.0)):
        try:
            lm.generate(prompts[:1], **{"max_new_tokens": 4, **bad})
        except ValueError:
            continue
        raise AssertionError(f"generate accepted {bad}")


def check_lm_sample_seeds(lm: Any) -> None:
    """Sampled prompt ``i`` of a call with ``seed=s`` is drawn with seed ``s + i``: asked alone with that seed
    it gives the same completion, and a repeated call gives the same completions (the key of stored sampled
    answers, :func:`ucs.evaluation.answers.sample_key`)."""
    prompts = [_PREFIX, "Q: 1 + 1 =\nA:", _PREFIX]
    kw = dict(max_new_tokens=4, temperature=1.5, top_p=1.0)
    batch = lm.generate(prompts, seed=1234, **kw)
    assert batch == lm.generate(prompts, seed=1234, **kw), "sampling with the same seed is not repeatable"
    for i, p in enumerate(prompts):
        alone = lm.generate([p], seed=1234 + i, **kw)
        assert alone == [batch[i]], (
            f"prompt {i} sampled alone with seed s + {i} gave {alone!r}, in the call {batch[i]!r}"
        )


def check_lm_one_at_a_time(lm: Any) -> None:
    """Where ``generates_one_at_a_time`` is declared: a greedy call over several prompts gives what each
    prompt asked alone gives (what lets the runner ask a batch in parts and record each part as it is
    answered)."""
    if not getattr(lm, "generates_one_at_a_time", False):
        return
    prompts = [_PREFIX, "Q: 1 + 1 =\nA:", _PREFIX + " card"]
    together = lm.generate(prompts, max_new_tokens=4, temperature=0.0)
    alone = [lm.generate([p], max_new_tokens=4, temperature=0.0)[0] for p in prompts]
    assert list(together) == alone, f"generates_one_at_a_time, but a batch gave {together!r}, alone {alone!r}"


def check_lm_tokens(lm: Any) -> None:
    """``count_tokens`` is a positive int growing with the text; ``context_length`` a positive int."""
    n1, n2 = lm.count_tokens("hello"), lm.count_tokens("hello " * 20)
    assert isinstance(n1, int) and 1 <= n1 < n2, f"count_tokens gave {n1}, {n2}"
    assert isinstance(lm.context_length, int) and lm.context_length > n2, (
        f"context_length {lm.context_length!r}"
    )


LM_CHECKS: Dict[str, Callable[[Any], None]] = {
    "scores": check_lm_scores,
    "scores_per_continuation": check_lm_scores_per_continuation,
    "generate": check_lm_generate,
    "one_at_a_time": check_lm_one_at_a_time,
    "sample_seeds": check_lm_sample_seeds,
    "tokens": check_lm_tokens,
}


def check_embedder(emb: Any, checks: Optional[Sequence[str]] = None) -> List[str]:
    """Run :data:`EMBEDDER_CHECKS` (or the named subset) on ``emb``; returns the names run."""
    return run_battery(EMBEDDER_CHECKS, emb, checks)


def check_language_model(lm: Any, checks: Optional[Sequence[str]] = None) -> List[str]:
    """Run :data:`LM_CHECKS` (or the named subset) on ``lm``; returns the names run."""
    return run_battery(LM_CHECKS, lm, checks)

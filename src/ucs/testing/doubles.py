"""Deterministic test doubles for the model contracts (no weights, no randomness across runs).

:class:`DummyEmbedder` implements :class:`ucs.embedding.Embedder` and :class:`DummyLM` implements
:class:`ucs.lm.LanguageModel`. They exist so that orchestration (selectors, caches, evaluation
runners, the CLI) can be unit-tested in milliseconds; their outputs carry no meaning beyond being
reproducible functions of their inputs and seed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ucs.embedding.base import l2_normalize, sanitize_text, sanitize_texts
from ucs.lm.base import ContinuationScores, ReducedScoresMixin, check_generation_args

__all__ = ["DummyBackbone", "DummyEmbedder", "DummyLM", "DummyTokenEmbedder"]

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _digest(*parts: Any) -> bytes:
    h = hashlib.sha256()
    for p in parts:
        b = str(p).encode("utf-8", errors="replace")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def _unit_float(*parts: Any) -> float:
    """A deterministic number in [0, 1) from hashing ``parts``."""
    return int.from_bytes(_digest(*parts)[:8], "little") / 2.0**64


def _tokens(text: str) -> list:
    return _TOKEN_RE.findall(text)


class DummyEmbedder:
    """Deterministic hash-based embedder.

    Each text is mapped to a Gaussian vector drawn from a generator seeded by
    ``sha256(seed, text)``; equal texts give equal rows, different texts unrelated rows
    (similar texts are *not* close).

    Parameters
    ----------
    dim : int, default=16
        Embedding dimension.
    seed : int, default=0
        Changes every vector (and the :attr:`identity`).
    normalize : bool, default=True
        ℓ2-normalise rows.
    batch_size : int, default=32
        Rows per batch of :meth:`batch_order` (by text length, as a real backbone batches).

    Attributes
    ----------
    n_calls_ : int
        Number of :meth:`embed` calls so far (lets tests assert that a cache was used).
    n_texts_embedded_ : int
        Number of texts embedded so far.

    Notes
    -----
    Time O(n · dim), memory O(n · dim).
    """

    #: A text's vector never depends on the other texts of its call (a server may embed queries together).
    query_batch_invariant = True

    def __init__(self, dim: int = 16, seed: int = 0, normalize: bool = True, batch_size: int = 32) -> None:
        if not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._dim = int(dim)
        self.seed = seed
        self.normalize = bool(normalize)
        self.batch_size = int(batch_size)
        self.n_calls_ = 0
        self.n_texts_embedded_ = 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> Dict[str, Any]:
        return {
            "model": "dummy-embedder",
            "revision": f"seed={self.seed}",
            "layer": "none",
            "pooling": "none",
            "l2": self.normalize,
            "max_length": None,
            "dim": self._dim,
        }

    def batch_order(self, texts: Sequence[str]) -> List[np.ndarray]:
        """Batches of ``batch_size`` rows by text length (rows never depend on their batch here)."""
        order = np.argsort([len(t) for t in sanitize_texts(texts)], kind="stable")
        return [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, float32."""
        texts = sanitize_texts(texts)
        self.n_calls_ += 1
        self.n_texts_embedded_ += len(texts)
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(np.frombuffer(_digest(self.seed, t), dtype=np.uint32))
            out[i] = rng.standard_normal(self._dim)
        return l2_normalize(out) if self.normalize else out

    def __repr__(self) -> str:
        return f"DummyEmbedder(dim={self._dim}, seed={self.seed!r}, normalize={self.normalize})"


AnswerSource = Union[None, Mapping[str, str], Callable[[str], Optional[str]]]


class DummyLM(ReducedScoresMixin):
    """Deterministic fake causal LM.

    Tokens are words and punctuation marks (regex ``\\w+|[^\\w\\s]``).

    * ``score_continuations``: each continuation token gets log-probability
      ``-(0.1 + 5·u)`` with ``u = hash(seed, prefix, continuation, position)`` in [0, 1). If
      ``answers`` gives an answer for ``prefix``, the continuation equal to it (after stripping
      whitespace) instead scores ``-0.01`` per token, so it wins — handy for testing evaluation.
    * ``generate``: ``answers[prompt]`` when known, otherwise ``"answer_<8 hex digits>"`` hashed
      from ``(seed, prompt)`` (and ``(seed, prompt, sample seed + i)`` for prompt ``i`` when ``temperature >
      0``, as every backend samples prompt ``i`` with seed ``seed + i``);
      cut at the first stop string and to ``max_new_tokens`` tokens.

    Parameters
    ----------
    seed : int, default=0
    answers : mapping or callable, optional
        ``prompt -> answer`` (a callable may return ``None`` for "unknown").
    context_length : int, default=2048

    Attributes
    ----------
    n_generate_calls_, n_score_calls_ : int
        Call counters for tests.
    """

    def __init__(self, seed: int = 0, answers: AnswerSource = None, context_length: int = 2048) -> None:
        if answers is not None and not (isinstance(answers, Mapping) or callable(answers)):
            raise ValueError("answers must be a mapping prompt -> answer, a callable, or None")
        if not isinstance(context_length, (int, np.integer)) or context_length < 1:
            raise ValueError(f"context_length must be a positive integer, got {context_length!r}")
        self.seed = seed
        self.answers = answers
        self._context_length = int(context_length)
        self.n_generate_calls_ = 0
        self.n_score_calls_ = 0

    @property
    def context_length(self) -> int:
        return self._context_length

    @property
    def identity(self) -> Dict[str, Any]:
        return {"model": "dummy-lm", "revision": f"seed={self.seed}"}

    def count_tokens(self, text: str) -> int:
        return len(_tokens(sanitize_text(text)))

    def _answer_for(self, prompt: str) -> Optional[str]:
        if self.answers is None:
            return None
        if isinstance(self.answers, Mapping):
            return self.answers.get(prompt)
        return self.answers(prompt)

    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int = 16,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: Optional[Sequence[str]] = None,
        seed: Optional[int] = None,
    ) -> list:
        """Return one deterministic completion per prompt."""
        check_generation_args(max_new_tokens, temperature, top_p)
        prompts = sanitize_texts(prompts)
        self.n_generate_calls_ += 1
        out = []
        for i, p in enumerate(prompts):
            ans = self._answer_for(p)
            if ans is None:
                key = (
                    (self.seed, p) if temperature == 0 else (self.seed, p, None if seed is None else seed + i)
                )
                ans = "answer_" + _digest(*key).hex()[:8]
            out.append(_truncate_generation(ans, max_new_tokens, stop))
        return out

    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]) -> ContinuationScores:
        """Log-probabilities and token counts, shapes ``(k,)``."""
        prefix = sanitize_text(prefix)
        conts = sanitize_texts(continuations)
        self.n_score_calls_ += 1
        target = self._answer_for(prefix)
        logp = np.empty(len(conts), dtype=np.float64)
        n_tok = np.empty(len(conts), dtype=np.int64)
        for i, c in enumerate(conts):
            toks = _tokens(c) or [""]
            n_tok[i] = len(toks)
            if target is not None and c.strip() == target.strip():
                logp[i] = -0.01 * len(toks)
            else:
                logp[i] = -sum(0.1 + 5.0 * _unit_float(self.seed, prefix, c, j) for j in range(len(toks)))
        return ContinuationScores(logprob=logp, n_tokens=n_tok)

    def __repr__(self) -> str:
        return f"DummyLM(seed={self.seed!r})"


def _truncate_generation(text: str, max_new_tokens: int, stop: Optional[Sequence[str]]) -> str:
    if stop:
        cut = min((text.find(s) for s in stop if s and s in text), default=-1)
        if cut >= 0:
            text = text[:cut]
    spans = list(_TOKEN_RE.finditer(text))
    if len(spans) > max_new_tokens:
        text = text[: spans[max_new_tokens - 1].end()]
    return text


class DummyBackbone:
    """A weight-free stand-in for an ICL backbone: :class:`DummyEmbedder` embeddings and
    :class:`DummyLM` answers behind one object (like a real backbone, which is both).

    Registered as the ``dummy`` backbone plug-in (``--backbone dummy``, ``dummy-<n>`` seeded with ``n``) for
    dry runs and the orchestration tests; its numbers mean nothing.
    """

    engine = "dummy"

    def __init__(self, dim: int = 32, seed: int = 0, context_length: int = 4096) -> None:
        self._emb = DummyEmbedder(dim=dim, seed=seed, normalize=False)
        self._lm = DummyLM(seed=seed, context_length=context_length)
        self._tokens = DummyTokenEmbedder(dim=dim, seed=seed)

    @property
    def identity(self) -> Dict[str, Any]:
        return {**self._emb.identity, "lm": self._lm.identity}

    @property
    def dim(self) -> int:
        return self._emb.dim

    @property
    def context_length(self) -> int:
        return self._lm.context_length

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._emb.embed(texts)

    def embed_tokens(self, texts: Sequence[str]) -> "tuple[list, list]":
        """Token embeddings of :class:`DummyTokenEmbedder` (Set-BSR with the backbone as retrieval
        embedder)."""
        return self._tokens.embed_tokens(texts)

    def count_tokens(self, text: str) -> int:
        return self._lm.count_tokens(text)

    def generate(self, prompts, max_new_tokens=16, temperature=0.0, top_p=1.0, stop=None, seed=None):
        return self._lm.generate(prompts, max_new_tokens, temperature, top_p, stop, seed)

    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]):
        return self._lm.score_continuations_detailed(prefix, continuations)

    def score_continuations(self, prefix: str, continuations: Sequence[str], reduction: str = "sum"):
        return self._lm.score_continuations(prefix, continuations, reduction)

    @property
    def n_texts_embedded_(self) -> int:
        return self._emb.n_texts_embedded_

    def __repr__(self) -> str:
        return f"DummyBackbone(dim={self.dim})"


class DummyTokenEmbedder:
    """Weight-free token embeddings for :class:`ucs.selectors.bsr.BSRSelector` in orchestration tests.

    Every word or punctuation mark of a text maps to a vector drawn from a generator seeded by ``sha256(seed,
    word)`` (equal words, equal vectors: no context), between a start and an end marker of weight 0, as a
    tokenizer's special tokens.
    """

    def __init__(self, dim: int = 16, seed: int = 0) -> None:
        self.dim = dim
        self.seed = seed

    def _vector(self, token: str) -> np.ndarray:
        digest = hashlib.sha256(f"{self.seed}\x00{token}".encode("utf-8")).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal(self.dim)

    def embed_tokens(self, texts: Sequence[str]) -> "tuple[list, list]":
        vectors, weights = [], []
        for text in sanitize_texts(texts):
            toks = ["<s>"] + _tokens(text) + ["</s>"]
            vectors.append(np.stack([self._vector(t) for t in toks]).astype(np.float32))
            w = np.ones(len(toks))
            w[[0, -1]] = 0.0
            weights.append(w)
        return vectors, weights

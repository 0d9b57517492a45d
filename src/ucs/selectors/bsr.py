"""BSR and Set-BSR: demonstrations that cover the query's own tokens.

Gupta, Gardner & Singh, EMNLP 2023.

With contextual token embeddings (ℓ2-normalised), a candidate ``x`` covers query token ``t`` by
``r_t(x) = max_s cos(q_t, x_s)``; its BERTScore recall is ``Σ_t w_t · r_t(x)`` with token weights ``w``
summing to 1 (uniform, the special tokens weighted 0, as BERTScore without idf). Notation below: ``R`` is the
(c, L) matrix of ``w_t · r_t(x_j)`` for the ``c`` candidates and the query's ``L`` tokens.

* ``coverage=False`` (**BSR**): the ``B`` candidates of highest recall.
* ``coverage=True`` (**Set-BSR**): the recall of a *set*, ``Σ_t w_t · max_{x ∈ S} r_t(x)``, grown greedily:
  add the candidate with the highest set recall together with ``S``; when no candidate raises it, start a new
  round from an empty coverage state (the set keeps its members) — so a prompt covers the query's tokens, then
  covers them again with different demonstrations.

Both put the strongest demonstration last, next to the query, as the authors' code orders them (BSR: ascending
recall; Set-BSR: the reverse of the greedy order). Read from the authors' public code
(Shivanshu-Gupta/icl-coverage, ``selector/bertscore.py`` and ``selector/greedy.py``); written anew here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ucs.selectors.base import Selector, _check_int

__all__ = ["BSRSelector", "PackedTokens", "token_recalls", "set_coverage_greedy"]


class PackedTokens:
    """Token embeddings of many texts in one (K, d) float32 array, ℓ2-normalised rows; text ``i`` owns rows
    ``offsets[i]:offsets[i + 1]``."""

    def __init__(self, vectors: Sequence[np.ndarray]) -> None:
        if not len(vectors):
            raise ValueError("token embeddings are empty: give at least one text")
        lengths = np.array([len(v) for v in vectors], dtype=np.int64)
        if (lengths == 0).any():
            raise ValueError(f"text {int(np.flatnonzero(lengths == 0)[0])} has no token embeddings")
        rows = np.concatenate([np.asarray(v, dtype=np.float32) for v in vectors])
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        self.rows = np.ascontiguousarray(rows)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    @classmethod
    def from_arrays(cls, rows: np.ndarray, offsets: np.ndarray) -> "PackedTokens":
        """Packed tokens from stored ``rows`` (K, d), already ℓ2-normalised, and ``offsets`` (N + 1,): no
        copy when ``rows`` is float32 (a memory map stays one), one conversion to float32 otherwise (float16
        storage)."""
        self = cls.__new__(cls)
        self.rows = rows if rows.dtype == np.float32 else np.ascontiguousarray(rows, dtype=np.float32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        if (
            self.offsets.ndim != 1
            or self.offsets[0] != 0
            or self.offsets[-1] != self.rows.shape[0]
            or (np.diff(self.offsets) <= 0).any()
        ):
            raise ValueError(
                "token offsets must rise from 0 to the number of token rows, every text owning one"
            )
        return self

    def __len__(self) -> int:
        return self.offsets.size - 1

    def subset(self, idx: np.ndarray) -> "PackedTokens":
        return PackedTokens([self.rows[self.offsets[i] : self.offsets[i + 1]] for i in idx.tolist()])


def token_recalls(query: np.ndarray, weights: np.ndarray, cands: PackedTokens) -> np.ndarray:
    """``R`` (c, L): ``w_t · max_s cos(q_t, x_s)`` for every candidate and query token.

    ``query`` (L, d) ℓ2-normalised, ``weights`` (L,) summing to 1. ``O(K·L·d)`` for ``K`` candidate tokens.
    """
    sims = cands.rows @ query.T.astype(np.float32)  # (K, L)
    best = np.maximum.reduceat(sims, cands.offsets[:-1], axis=0)  # (c, L): max over each candidate's tokens
    return best.astype(np.float64) * weights[None, :]


def set_coverage_greedy(R: np.ndarray, budget: int) -> Tuple[np.ndarray, np.ndarray]:
    """Set-BSR's greedy over ``R`` (c, L); returns ``(positions, set recalls)`` in the order chosen.

    Each step adds the unchosen candidate maximising ``Σ_t max(state_t, R_jt)``; when that does not exceed the
    current set recall, the coverage state restarts empty (the chosen stay chosen). Ties go to the smaller
    position. ``O(budget · c · L)``.
    """
    c = R.shape[0]
    taken = np.zeros(c, dtype=bool)
    state = np.full(R.shape[1], -np.inf)
    current = -np.inf
    order: List[int] = []
    values: List[float] = []
    while len(order) < budget:
        together = np.maximum(R, state[None, :])
        score = together.sum(axis=1)
        score[taken] = -np.inf
        j = int(np.argmax(score))
        if score[j] > current:
            order.append(j)
            values.append(float(score[j]))
            taken[j] = True
            state, current = together[j], score[j]
        else:  # nothing raises the set's recall: a new round
            state = np.full(R.shape[1], -np.inf)
            current = -np.inf
    return np.asarray(order, dtype=np.int64), np.asarray(values)


class BSRSelector(Selector):
    """BERTScore-recall selection (``coverage=False``) and its set form Set-BSR (``coverage=True``).

    Parameters
    ----------
    token_embedder : object with ``embed_tokens(texts) -> (list of (L_i, d) arrays, list of (L_i,) weights)``
        Contextual token embeddings and each token's weight (0 for special tokens), e.g.
        :class:`ucs.embedding.sbert.SentenceTransformerEmbedder`. The pipeline and the index pass theirs.
    coverage : bool, default=True
        Set-BSR (the authors' best selector) or plain BSR.
    candidate_num : int, optional
        Score only the query's ``candidate_num`` nearest pool items by sentence cosine; ``None`` (the authors'
        setting) scores the whole pool.
    block : int
        Queries per similarity block of the candidate retrieval.

    Notes
    -----
    Needs the pool's texts at ``fit`` and the queries' texts at ``select``. ``fit`` embeds the pool's tokens
    once (``O(N·L)`` vectors); each query then costs ``O(K·L·d)`` for the ``K`` candidate tokens plus the
    greedy's ``O(B·c·L)``. No model calls beyond the token embedder.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import BSRSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> from ucs.testing.doubles import DummyTokenEmbedder  # hashed words, no weights: a test double
    >>> texts = ["card lost", "card stolen", "card blocked", "new card", "loan rate", "loan term",
    ...          "loan limit", "loan fee", "fx rate", "fx fee", "exchange euros", "fx limit"]
    >>> bsr = BSRSelector(token_embedder=DummyTokenEmbedder()).fit(pool, labels=labels, texts=texts)
    >>> sel = bsr.select(query, 3, query_texts=["card fee"])
    >>> [texts[i] for i in sel.indices[0]]  # together they cover the query's words
    ['loan fee', 'card lost', 'fx fee']
    """

    name = "bsr"
    needs_query_texts = True
    needs_token_embedder = True
    stored_state = "bsr_tokens"

    def __init__(
        self,
        token_embedder: Any = None,
        coverage: bool = True,
        candidate_num: Optional[int] = None,
        block: int = 1024,
    ) -> None:
        self.token_embedder = token_embedder
        self.coverage = coverage
        self.candidate_num = candidate_num
        self.block = block

    def _validate_params(self) -> None:
        if not isinstance(self.coverage, (bool, np.bool_)):
            raise ValueError(f"coverage must be True (Set-BSR) or False (BSR); got {self.coverage!r}")
        if self.candidate_num is not None:
            _check_int(self.candidate_num, "candidate_num", 1)
        _check_int(self.block, "block", 1)

    def _fit(self) -> None:
        if self.token_embedder is None or not callable(getattr(self.token_embedder, "embed_tokens", None)):
            raise ValueError(
                "BSRSelector needs a token_embedder with embed_tokens(texts), e.g. a sentence-transformers "
                "retrieval embedder (load_retrieval_embedder('all-minilm-l6-v2'))"
            )
        if self.texts_ is None:
            raise ValueError("BSRSelector scores the pool's tokens: fit(pool, texts=...)")
        stored = self.__dict__.pop("_stored_pool_tokens", None)
        if stored is not None and len(stored) == self.n_pool_:
            self.pool_tokens_ = stored
            return
        vectors, _ = self.token_embedder.embed_tokens(self.texts_)
        self.pool_tokens_ = PackedTokens(vectors)

    def fit_with_state(self, pool_embeddings: Any, state: Any, **kwargs: Any) -> "BSRSelector":
        """:meth:`fit_with_tokens` (the stored state is the pool's tokens)."""
        return self.fit_with_tokens(pool_embeddings, state, **kwargs)

    def fit_with_tokens(
        self, pool_embeddings: Any, pool_tokens: PackedTokens, **kwargs: Any
    ) -> "BSRSelector":
        """:meth:`fit` with the pool's token vectors already computed (``pool_tokens``, one text per pool row,
        e.g. stored with a saved index): nothing is embedded. ``kwargs`` are :meth:`fit`'s."""
        if len(pool_tokens) != np.shape(pool_embeddings)[0]:
            raise ValueError(
                f"pool_tokens holds {len(pool_tokens)} texts; the pool has {np.shape(pool_embeddings)[0]}"
            )
        self._stored_pool_tokens = pool_tokens
        try:
            return self.fit(pool_embeddings, **kwargs)
        finally:
            self.__dict__.pop("_stored_pool_tokens", None)

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        q = queries.shape[0]
        idx_out = np.empty((q, budget), dtype=np.int64)
        score_out = np.empty((q, budget))
        if budget == 0 or q == 0:
            return idx_out, score_out, {}
        if query_texts is None or len(query_texts) != q:
            raise ValueError("BSRSelector covers the query's tokens: pass query_texts to select")
        vectors, weights = self.token_embedder.embed_tokens(list(query_texts))
        if self.candidate_num is None:
            cand = np.broadcast_to(np.arange(self.n_pool_), (q, self.n_pool_))
        else:
            cand, _ = self._retrieve(queries, min(self.n_pool_, max(int(self.candidate_num), budget)))
        for r in range(q):
            tokens = PackedTokens([vectors[r]]).rows
            w = np.asarray(weights[r], dtype=np.float64)
            w = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)
            pool = self.pool_tokens_ if self.candidate_num is None else self.pool_tokens_.subset(cand[r])
            R = token_recalls(tokens, w, pool)
            if self.coverage:
                pos, scores = set_coverage_greedy(R, budget)
                pos, scores = pos[::-1], scores[::-1]  # the first pick next to the query
            else:
                recall = R.sum(axis=1)
                pos = np.lexsort((np.arange(recall.size), -recall))[:budget][::-1]  # ascending: best last
                scores = recall[pos]
            idx_out[r], score_out[r] = cand[r][pos], scores
        return idx_out, score_out, {}

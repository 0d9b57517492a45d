"""llama.cpp backbone (``llama-cpp-python``): GGUF models as both Embedder and LanguageModel.

One model file is mapped once and served by up to three llama.cpp contexts, each created on first use:

* **embedding** — pooled final-layer (after the final norm) hidden states; many texts are packed into
  one batch as separate sequences, so no padding is computed at all;
* **scoring** — label continuations of a shared prefix: the prefix's KV cache is kept from one call
  to the next, so a prompt evaluates only its tokens after the run it shares with the previous one (the
  instruction and label list every ICL prompt of a dataset opens with); then every distinct node of the
  continuations' token trie is evaluated once, as a tree-shaped multi-sequence batch over the cached
  prefix, with logits only where a next-token distribution is needed (see :mod:`ucs.lm.prefix_tree`);
* **generation** — ``llama_cpp.Llama.create_completion`` (greedy or sampled, stop strings); the
  prompt's KV cache is reused across calls that share a beginning.

Only the final layer is reachable through llama.cpp's pooling; use the transformers engine for
intermediate layers.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.embedding.base import POOLINGS, l2_normalize, sanitize_text, sanitize_texts
from ucs.lm.best_continuation import best_continuation
from ucs.lm.base import ContinuationScores, ReducedScoresMixin, check_generation_args
from ucs.lm.prefix_tree import build_trie, logsumexp_rows, move_trailing_spaces
from ucs.models.gguf_weights import check_weights, float_copy
from ucs.models.llama_kernels import select_kernels
from ucs.models.probe import check_llama_engine
from ucs.utils.cpu import available_cores
from ucs.utils.native_output import quiet as _quiet
from ucs.utils.optional import InvalidModelFileError, extra_install, require
from ucs.utils.progress import advance

__all__ = ["LlamaCppBackbone"]

_INSTALL = extra_install("llama", "llama-cpp-python")


def check_gguf(path: Path) -> Path:
    """Raise a clear error unless ``path`` is an existing file that starts with the GGUF magic."""
    if not path.exists():
        raise FileNotFoundError(f"model file not found: {path}")
    if not path.is_file():
        raise InvalidModelFileError(f"model path is not a file: {path}")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise InvalidModelFileError(f"{path} is not a GGUF file (magic {magic!r}, expected b'GGUF')")
    return path


class LlamaCppBackbone(ReducedScoresMixin):
    """A GGUF causal LM served by llama.cpp; implements ``Embedder`` and ``LanguageModel``.

    Parameters
    ----------
    model_path : str or Path
        GGUF model file.
    name : str, optional
        Name recorded in :attr:`identity` (defaults to the file name).
    layer : {"last"} or int, default="last"
        Only the final layer (``"last"``, ``-1`` or ``num_layers``) is available in llama.cpp.
    pooling : {"mean", "last", "first"}, default="mean"
    normalize : bool, default=False
        ℓ2-normalise embeddings.
    max_length : int, default=512
        Texts are truncated to this many tokens before embedding (never an error).
    context_length : int, default=2048
        KV-cache size of the scoring and generation contexts; prompts longer than it are
        truncated from the left.
    n_threads : int, optional
        CPU threads (default: the cores available to this process).
    n_gpu_layers : int, default=0
        Layers to offload when llama.cpp was built with a GPU backend (-1 = all).
    batch_tokens : int, default=512
        Tokens per llama.cpp batch (``n_batch = n_ubatch``); small values are faster on CPU.
    seed : int, default=0
        Default sampling seed for :meth:`generate`.
    prefix_reuse : bool, default=True
        Label scoring keeps the KV cache of the previous prompt's longest token run that the next prompt
        shares (every ICL prompt of a dataset opens with the same instruction and label list) and evaluates
        only the new tokens; ``False`` reuses an identical prompt only.
    weights : {"file", "f32", "f16"}, default="file"
        ``"file"`` runs the GGUF file as given; ``"f32"`` / ``"f16"`` run a float copy of it, converted once
        and cached (:mod:`ucs.models.gguf_weights`): the same weights, scored through llama.cpp's float
        kernels, 1.5× faster than SmolLM2's Q4_1 file on an AVX2 core, at 4 (2) bytes a parameter. The
        copy's kind enters :attr:`identity`.

    Notes
    -----
    Embedding: O(total tokens · L) compute, no padding. Scoring ``k`` continuations: one pass over
    the prefix's tokens after the run shared with the previous prompt, plus one pass over the trie's
    ``m ≤ Σ len(continuation)`` nodes, batched, with logits only at nodes that have children;
    :attr:`prefix_tokens_evaluated` and :attr:`trie_tokens_evaluated` count them. Memory: the model
    (memory-mapped) plus a KV cache of ``context_length`` positions per context and one
    ``(batch_tokens, vocab)`` float32 logits buffer.
    """

    engine = "llama"
    #: ``generate`` answers its prompts one after another (the runner may ask a batch in parts).
    generates_one_at_a_time = True

    def __init__(
        self,
        model_path: "str | os.PathLike[str]",
        name: Optional[str] = None,
        layer: "str | int" = D.LAYER,
        pooling: str = D.POOLING,
        normalize: bool = False,
        max_length: int = D.MAX_LENGTH,
        context_length: int = 2048,
        n_threads: Optional[int] = None,
        n_gpu_layers: int = 0,
        batch_tokens: int = 512,
        seed: int = 0,
        prefix_reuse: bool = True,
        weights: str = "file",
    ) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        for pname, val in (
            ("max_length", max_length),
            ("context_length", context_length),
            ("batch_tokens", batch_tokens),
        ):
            if not isinstance(val, (int, np.integer)) or val < 1:
                raise ValueError(f"{pname} must be a positive integer, got {val!r}")
        if n_threads is not None and (not isinstance(n_threads, int) or n_threads < 1):
            raise ValueError(f"n_threads must be a positive integer or None, got {n_threads!r}")
        self.model_path = Path(model_path)
        self.name = name or self.model_path.name
        self.layer = layer
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.max_length = int(max_length)
        self.context_length = int(context_length)
        self.n_threads = n_threads
        self.n_gpu_layers = n_gpu_layers
        self.batch_tokens = int(batch_tokens)
        self.seed = seed
        self.prefix_reuse = bool(prefix_reuse)
        self.weights = check_weights(weights)
        self.prefix_tokens_evaluated = 0
        self.trie_tokens_evaluated = 0
        self._llm = None
        self._emb_ctx = None
        self._score_ctx = None
        self._batches: Dict[str, Any] = {}
        self._ctxs: List[Any] = []
        self._sha: Optional[str] = None
        self._score_prefix: Optional[List[int]] = None
        self._score_last_logits: Optional[np.ndarray] = None

    # ------------------------------------------------------------------ loading
    def load(self) -> "LlamaCppBackbone":
        """Map the model (idempotent) and validate ``layer``; returns ``self``."""
        if self._llm is not None:
            return self
        select_kernels()  # the AVX-512 build where this CPU has it (before llama_cpp is first imported)
        llama_cpp = require("llama_cpp", _INSTALL, "The llama.cpp engine")
        check_gguf(self.model_path)
        check_llama_engine(
            self.model_path
        )  # a child process once per build and CPU: a crash must not kill us
        threads = self.n_threads or available_cores()
        path = float_copy(self.model_path, self.weights)
        try:
            with _quiet():
                self._llm = llama_cpp.Llama(
                    str(path),
                    n_ctx=self.context_length,
                    n_batch=self.batch_tokens,
                    n_ubatch=self.batch_tokens,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=self.n_gpu_layers,
                    seed=self.seed,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            raise InvalidModelFileError(
                f"llama.cpp could not load {self.model_path} as a model: {exc}"
            ) from exc
        self._lc = llama_cpp
        # free the native objects while the interpreter is still intact (not in __del__ at exit)
        self._finalizer = weakref.finalize(self, _free, self._llm, self._batches, self._ctxs)
        self._resolve_layer()
        return self

    @property
    def num_layers(self) -> int:
        self.load()
        return int(self._lc.llama_model_n_layer(self._llm._model.model))

    def _resolve_layer(self) -> None:
        n = self.num_layers
        if self.layer in ("last", -1, n):
            return
        if isinstance(self.layer, (int, np.integer)) and not -n - 1 <= self.layer <= n:
            raise ValueError(
                f"layer {self.layer} is out of range for a model with {n} layers (valid: 0..{n})"
            )
        raise ValueError(
            f"layer={self.layer!r}: the llama.cpp engine only exposes the last layer; "
            "use engine='transformers' for intermediate layers"
        )

    def _new_ctx(self, *, embeddings: bool, n_ctx: int, n_seq: int, pooling: int = 0):
        from llama_cpp import _internals as internals

        lc = self._lc
        p = lc.llama_context_default_params()
        threads = self.n_threads or available_cores()
        p.n_ctx = n_ctx
        p.n_batch = self.batch_tokens
        p.n_ubatch = self.batch_tokens
        p.n_seq_max = n_seq
        p.n_threads = threads
        p.n_threads_batch = threads
        p.embeddings = embeddings
        p.kv_unified = True
        # Measured with llama.cpp as bundled by llama-cpp-python 0.3.36 on CPU: packed embedding
        # batches are only row-independent with the classic attention kernel, and tree-shaped
        # multi-sequence scoring batches only match one-continuation-at-a-time scoring with flash
        # attention. Tests (tests/models/test_llamacpp.py) check both properties.
        p.flash_attn_type = (
            lc.LLAMA_FLASH_ATTN_TYPE_DISABLED if embeddings else lc.LLAMA_FLASH_ATTN_TYPE_ENABLED
        )
        if embeddings:
            p.pooling_type = pooling
        with _quiet():
            ctx = internals.LlamaContext(model=self._llm._model, params=p, verbose=False)
        self._ctxs.append(ctx)
        return ctx

    def _batch(self, kind: str, n_seq: int):
        from llama_cpp import _internals as internals

        if kind not in self._batches:
            self._batches[kind] = internals.LlamaBatch(
                n_tokens=self.batch_tokens, embd=0, n_seq_max=n_seq, verbose=False
            )
        return self._batches[kind]

    # ------------------------------------------------------------------ identity
    @property
    def identity(self) -> Dict[str, Any]:
        if self._sha is None:
            from ucs.utils.weights import fingerprint

            self._sha = fingerprint(self.model_path)
        return {
            "model": self.name,
            "revision": "sha256:" + self._sha,
            "engine": self.engine,
            "layer": "last",
            "pooling": self.pooling,
            "l2": self.normalize,
            "max_length": self.max_length,
            **({} if self.weights == "file" else {"weights": self.weights}),
        }

    @property
    def dim(self) -> int:
        self.load()
        return int(self._llm.n_embd())

    @property
    def vocab_size(self) -> int:
        self.load()
        return int(self._llm.n_vocab())

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str, add_special: bool = True) -> List[int]:
        """Token ids of ``text`` (BOS added when the model asks for it and ``add_special``)."""
        self.load()
        return self._llm.tokenize(sanitize_text(text).encode("utf-8"), add_bos=add_special, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def _fallback_token(self) -> int:
        vocab = self._llm._model.vocab
        bos = self._lc.llama_vocab_bos(vocab)
        return int(bos if bos >= 0 else self._lc.llama_vocab_eos(vocab))

    # ------------------------------------------------------------------ embeddings
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Pooled final-layer embeddings, shape ``(len(texts), dim)`` float32.

        Texts longer than ``max_length`` tokens are truncated; an empty text is embedded as the
        single BOS (or EOS) token.
        """
        texts = sanitize_texts(texts)
        self.load()
        d = self.dim
        out = np.empty((len(texts), d), dtype=np.float32)
        if not texts:
            return out
        lc = self._lc
        limit = min(self.max_length, self.batch_tokens)
        n_seq = min(self.batch_tokens, int(lc.llama_max_parallel_sequences()))
        if self._emb_ctx is None:
            pool_id = {
                "mean": lc.LLAMA_POOLING_TYPE_MEAN,
                "last": lc.LLAMA_POOLING_TYPE_LAST,
                "first": lc.LLAMA_POOLING_TYPE_CLS,
            }[self.pooling]
            self._emb_ctx = self._new_ctx(
                embeddings=True, n_ctx=self.batch_tokens, n_seq=n_seq, pooling=pool_id
            )
        ctx = self._emb_ctx
        batch = self._batch("embed", n_seq)
        fallback = self._fallback_token()
        toks = [
            self._llm.tokenize(t.encode("utf-8"), add_bos=True, special=True)[:limit] or [fallback]
            for t in texts
        ]
        rows: List[int] = []
        batch.reset()
        used = 0

        def flush() -> None:
            ctx.kv_cache_clear()
            ctx.decode(batch)
            for s, r in enumerate(rows):
                ptr = lc.llama_get_embeddings_seq(ctx.ctx, s)
                out[r] = np.ctypeslib.as_array(ptr, shape=(d,))
            advance(len(rows), kind="embed")
            batch.reset()
            rows.clear()

        for r, tk in enumerate(toks):
            if used + len(tk) > self.batch_tokens or len(rows) >= n_seq:
                flush()
                used = 0
            batch.add_sequence(tk, len(rows), True)
            rows.append(r)
            used += len(tk)
        flush()
        ctx.kv_cache_clear()
        return l2_normalize(out) if self.normalize else out

    # ------------------------------------------------------------------ scoring
    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]) -> ContinuationScores:
        """Log-probabilities of each continuation given ``prefix``, with token counts.

        The prefix is evaluated once (only its tokens after the run it shares with the previous call's
        prefix, see ``prefix_reuse``); each distinct node of the continuations' token trie is evaluated once,
        in one multi-sequence batch per group of continuations over the prefix's KV cache.
        """
        self.load()
        if len(continuations) == 0:
            return ContinuationScores(np.zeros(0), np.zeros(0, dtype=np.int64))
        p_tok, c_tok = self._tokens(prefix, continuations)
        k = len(c_tok)
        ctx, batch, n_seq = self._scoring()
        V = self.vocab_size
        try:
            last_logits = self._eval_prefix(ctx, batch, p_tok, V)
            logp = np.zeros(k, dtype=np.float64)
            P = len(p_tok)
            for g in _groups(c_tok, n_seq, min(self.context_length - P, self.batch_tokens)):
                self._score_group(ctx, batch, P, [c_tok[j] for j in g], g, last_logits, logp, V)
        except BaseException:
            self._score_prefix = None  # the KV cache may hold anything now: the next call starts afresh
            raise
        return ContinuationScores(logprob=logp, n_tokens=np.array([len(c) for c in c_tok], dtype=np.int64))

    def _tokens(self, prefix: str, continuations: Sequence[str]) -> Tuple[List[int], List[List[int]]]:
        """The prefix's and the continuations' tokens (trailing spaces moved onto the continuations), the
        prefix cut from the left so that it and the longest continuation fit the context."""
        prefix, conts = move_trailing_spaces(sanitize_text(prefix), sanitize_texts(continuations))
        fallback = self._fallback_token()
        p_tok = self._llm.tokenize(prefix.encode("utf-8"), add_bos=True, special=True) or [fallback]
        c_tok = [
            self._llm.tokenize(c.encode("utf-8"), add_bos=False, special=True) or [fallback] for c in conts
        ]
        max_c = max(len(c) for c in c_tok)
        if max_c >= self.context_length:
            raise ValueError(
                f"a continuation has {max_c} tokens, more than context_length={self.context_length}"
            )
        return p_tok[-max(1, self.context_length - max_c - 1) :], c_tok

    def _scoring(self):
        """``(context, batch, sequences per batch)`` of label scoring, made on first use."""
        # llama.cpp reserves an output row per sequence within one batch, and a batch holds at most n_ctx
        # tokens: more sequences than that aborts the process (a context_length under 256, say)
        n_seq = max(
            2, min(int(self._lc.llama_max_parallel_sequences()), 256, self.context_length, self.batch_tokens)
        )
        if self._score_ctx is None:
            self._score_ctx = self._new_ctx(embeddings=False, n_ctx=self.context_length, n_seq=n_seq)
        return self._score_ctx, self._batch("score", n_seq), n_seq

    def choose_continuation(self, prefix: str, continuations: Sequence[str]) -> Tuple[int, float]:
        """``(index, log-probability)`` of the most likely continuation after ``prefix``, found by branch and
        bound over the continuations' token trie (:mod:`ucs.lm.best_continuation`): only the trie nodes that
        can still hold the answer are evaluated. The prefix is evaluated as in :meth:`score_continuations`.

        Raises ``ValueError`` for no continuations. With more continuations than a batch has sequences, or a
        trie that does not fit the context beside the prompt, every continuation is scored instead."""
        if len(continuations) == 0:
            raise ValueError("choose_continuation needs at least one continuation")
        self.load()
        p_tok, c_tok = self._tokens(prefix, continuations)
        ctx, batch, n_seq = self._scoring()
        trie = build_trie(c_tok)
        if len(c_tok) >= n_seq or len(p_tok) + trie.n_nodes > self.context_length:
            scores = self.score_continuations(prefix, continuations)
            return int(np.argmax(scores)), float(np.max(scores))
        V, lc, P = self.vocab_size, self._lc, len(p_tok)
        try:
            last = self._eval_prefix(ctx, batch, p_tok, V).astype(np.float64)
        except BaseException:
            self._score_prefix = None
            raise
        members = trie.members()
        for s in range(1, len(c_tok) + 1):
            lc.llama_memory_seq_cp(ctx.memory, 0, s, -1, -1)

        def evaluate(nodes: Sequence[int]) -> np.ndarray:
            out = []
            for lo in range(0, len(nodes), self.batch_tokens):
                part = nodes[lo : lo + self.batch_tokens]
                batch.reset()
                b = batch.batch
                for i, n in enumerate(part):
                    b.token[i] = int(trie.tokens[n])
                    b.pos[i] = P + int(trie.depth[n])
                    b.n_seq_id[i] = len(members[n])
                    for q, j in enumerate(members[n]):
                        b.seq_id[i][q] = j + 1
                    b.logits[i] = True
                b.n_tokens = len(part)
                ctx.decode(batch)
                rows = np.ctypeslib.as_array(lc.llama_get_logits(ctx.ctx), shape=(len(part), V)).copy()
                out.append(rows - logsumexp_rows(rows)[:, None])
            return np.concatenate(out)

        try:
            j, logp, used = best_continuation(trie, last - logsumexp_rows(last[None, :])[0], evaluate)
        except BaseException:
            self._score_prefix = None
            raise
        finally:
            for s in range(1, len(c_tok) + 1):
                lc.llama_memory_seq_rm(ctx.memory, s, -1, -1)
        self.trie_tokens_evaluated += used
        return j, logp

    def _eval_prefix(self, ctx, batch, p_tok: List[int], V: int) -> np.ndarray:
        """Bring sequence 0 of the KV cache to exactly ``p_tok``; return the logits after its last token.

        The prompt is evaluated in chunks that start at multiples of ``B`` tokens (:func:`_prefix_chunks`:
        exact ``B``-token blocks, the last chunk ``B … 2B − 1`` tokens long), whether or not anything is
        reused: llama.cpp takes other kernel paths for other batch sizes, whose rounding differs (by up to
        0.1 nats on SmolLM2), so a position is always computed in the same chunk. With ``prefix_reuse`` the
        exact blocks the cached prompt shares with ``p_tok`` stay (only the tail is removed) and the rest is
        evaluated: the numbers of a fresh context, whatever came before (``tests/models/test_llamacpp.py``
        checks it over prompts in random order).
        """
        lc = self._lc
        P = len(p_tok)
        old = self._score_prefix
        if old == p_tok:
            return self._score_last_logits
        B = max(1, min(_PREFIX_BLOCK, self.batch_tokens // 2))
        keep = 0
        if old is not None and self.prefix_reuse:
            keep = min(
                _shared_run(old, p_tok) // B * B, _prefix_chunks(len(old), B)[-1], _prefix_chunks(P, B)[-1]
            )
        self._score_prefix = None
        if keep == 0 or not lc.llama_memory_seq_rm(ctx.memory, 0, keep, -1):
            ctx.kv_cache_clear()
            keep = 0
        last_logits = None
        starts = [s for s in _prefix_chunks(P, B) if s >= keep]
        for s, e in zip(starts, starts[1:] + [P]):
            chunk = p_tok[s:e]
            batch.reset()
            b = batch.batch
            for i, t in enumerate(chunk):
                b.token[i] = t
                b.pos[i] = s + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = False
            b.logits[len(chunk) - 1] = True
            b.n_tokens = len(chunk)
            ctx.decode(batch)
            if e == P:
                last_logits = np.ctypeslib.as_array(
                    lc.llama_get_logits_ith(ctx.ctx, len(chunk) - 1), shape=(V,)
                ).copy()
        self._score_prefix, self._score_last_logits = list(p_tok), last_logits
        self.prefix_tokens_evaluated += P - keep
        return last_logits

    def _score_group(self, ctx, batch, P, toks, idx, last_logits, logp, V) -> None:
        """Score one group of continuations: every trie node is evaluated once, in one decode call, with
        logits only where a child needs them; sequence ``j + 1`` is continuation ``j``.

        Leaves are evaluated too although nothing reads them: dropping them changes the batch size, and
        llama.cpp then takes other kernel paths whose rounding moved long labels' scores by up to 0.3 nats
        on BANKING77 prompts (no closer to one-continuation-at-a-time scoring, which differs from both by
        as much)."""
        lc = self._lc
        trie = build_trie(toks)
        members = trie.members()
        inner = np.nonzero(trie.has_children())[0]  # BFS order: every parent precedes its children
        # logits rows: the prefix's last token (row 0) and, in order, each evaluated node (row 1 + q)
        row = np.full(trie.n_nodes, -1, dtype=np.int64)
        row[inner] = 1 + np.arange(inner.size)
        for s in range(1, len(toks) + 1):
            lc.llama_memory_seq_cp(ctx.memory, 0, s, -1, -1)
        out = np.zeros((0, V), dtype=np.float32)
        try:
            batch.reset()
            b = batch.batch
            need = row >= 0
            for i in range(trie.n_nodes):
                b.token[i] = int(trie.tokens[i])
                b.pos[i] = P + int(trie.depth[i])
                mem = members[i]
                b.n_seq_id[i] = len(mem)
                for q, j in enumerate(mem):
                    b.seq_id[i][q] = j + 1
                b.logits[i] = bool(need[i])
            b.n_tokens = trie.n_nodes
            ctx.decode(batch)
            if inner.size:
                out = np.ctypeslib.as_array(lc.llama_get_logits(ctx.ctx), shape=(int(inner.size), V))
                lse = np.concatenate([logsumexp_rows(last_logits[None, :]), logsumexp_rows(out)])
            else:
                lse = logsumexp_rows(last_logits[None, :])
        finally:
            for s in range(1, len(toks) + 1):
                lc.llama_memory_seq_rm(ctx.memory, s, -1, -1)
        self.trie_tokens_evaluated += trie.n_nodes
        src = np.where(trie.parent >= 0, row[np.maximum(trie.parent, 0)], 0)
        first = src == 0
        picked = np.empty(trie.n_nodes, dtype=np.float64)
        picked[first] = last_logits[trie.tokens[first]]
        picked[~first] = out[src[~first] - 1, trie.tokens[~first]]
        node_lp = picked - lse[src]  # log p(node token | its parent path)
        for local, j in enumerate(idx):
            logp[j] = node_lp[trie.paths[local]].sum()

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int = 16,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: Optional[Sequence[str]] = None,
        seed: Optional[int] = None,
    ) -> List[str]:
        """Complete each prompt (greedy when ``temperature == 0``); returns the new text only.

        Sampling uses exactly ``temperature`` and nucleus ``top_p`` (no top-k, min-p or repetition
        penalty); prompt ``i`` is sampled with seed ``seed + i`` (default ``self.seed + i``).
        """
        check_generation_args(max_new_tokens, temperature, top_p)
        prompts = sanitize_texts(prompts)
        self.load()
        base = self.seed if seed is None else seed
        out = []
        keep = max(1, self.context_length - max_new_tokens)
        for i, p in enumerate(prompts):
            toks = self.tokenize(p)[-keep:] or [self._fallback_token()]
            res = self._llm.create_completion(
                toks,
                max_tokens=max_new_tokens,
                temperature=float(temperature),
                top_p=float(top_p),
                top_k=0,
                min_p=0.0,
                repeat_penalty=1.0,
                stop=list(stop) if stop else None,
                seed=int(base) + i,
            )
            out.append(res["choices"][0]["text"])
        return out

    def close(self) -> None:
        """Free the llama.cpp contexts and the model (a later call loads them again)."""
        if self._llm is not None:
            self._finalizer()
        self._llm = self._emb_ctx = self._score_ctx = None
        self._batches, self._ctxs = {}, []
        self._score_prefix = self._score_last_logits = None

    def __repr__(self) -> str:
        return f"LlamaCppBackbone({self.name!r}, pooling={self.pooling!r}, normalize={self.normalize})"


#: Prompt tokens per chunk of the scoring prefix (see ``LlamaCppBackbone._eval_prefix``).
_PREFIX_BLOCK = 64


def _prefix_chunks(n: int, block: int) -> List[int]:
    """Starts of the chunks an ``n``-token prompt is evaluated in: ``0, block, 2·block …``, the last chunk
    ``block … 2·block − 1`` tokens long (or the whole prompt when shorter than ``block``)."""
    return list(range(0, max(1, n // block) * block, block))


def _shared_run(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common beginning of two token lists. O(that length) in numpy."""
    n = min(len(a), len(b))
    diff = np.nonzero(np.asarray(a[:n]) != np.asarray(b[:n]))[0]
    return int(diff[0]) if diff.size else n


def _groups(c_tok: List[List[int]], n_seq: int, room: int) -> List[List[int]]:
    """Continuations (indices, sorted by tokens) in groups of fewer than ``n_seq`` whose trie fits ``room``.

    Each group's trie goes into ONE decode call: splitting a tree batch over several calls gave slightly
    different numbers than one-at-a-time scoring with this llama.cpp."""
    groups: List[List[int]] = []
    cur: List[int] = []
    seen: set = set()
    for j in sorted(range(len(c_tok)), key=lambda j: c_tok[j]):
        new = {tuple(c_tok[j][: i + 1]) for i in range(len(c_tok[j]))} - seen
        if cur and (len(cur) >= n_seq - 1 or len(seen) + len(new) > room):
            groups.append(cur)
            cur, seen = [], set()
            new = {tuple(c_tok[j][: i + 1]) for i in range(len(c_tok[j]))}
        cur.append(j)
        seen |= new
    groups.append(cur)
    return groups


def _free(llm, batches: Dict[str, Any], ctxs: List[Any]) -> None:
    for b in batches.values():
        b.close()
    batches.clear()
    for c in ctxs:
        c.close()
    ctxs.clear()
    llm.close()

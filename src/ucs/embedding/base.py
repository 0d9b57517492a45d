"""The :class:`Embedder` contract and text-sanitising helpers shared by every backend."""

from __future__ import annotations

from typing import Any, Dict, Protocol, Sequence, runtime_checkable

import numpy as np

from ucs.utils.arrays import l2_normalize

__all__ = ["Embedder", "POOLINGS", "sanitize_text", "sanitize_texts", "l2_normalize", "unnormalized_twin"]

#: Pooling strategies the LLM backends understand.
POOLINGS = ("mean", "last", "first")


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into fixed-size vectors.

    ``embed(texts)`` returns a C-contiguous ``float32`` array of shape ``(len(texts), dim)``; row ``i``
    depends only on ``texts[i]`` (never on the batch it was computed in, up to floating-point noise).
    ``identity`` is a JSON-serialisable dict naming everything that changes the vectors — model
    name, weights hash or revision, layer, pooling, ℓ2 normalisation, maximum length — and is
    used as the embedding-cache key.

    Optional: ``batch_order(texts)`` returns the batches ``embed`` forms for ``texts`` (arrays of row
    indices, in processing order, partitioning ``range(len(texts))``), with the promise that embedding
    the texts of consecutive batches, concatenated in that order, gives those rows bit for bit. An
    embedder that offers it gets long passes checkpointed by :class:`~ucs.embedding.EmbeddingCache`.

    Optional: ``unnormalized()`` returns an embedder of another identity whose rows, passed through
    :func:`l2_normalize`, are this one's bit for bit (or ``None``); the cache then computes or reads that
    embedder's pass and normalises it, so an ℓ2 variant costs no second pass through the model.
    """

    @property
    def identity(self) -> Dict[str, Any]: ...  # pragma: no cover

    @property
    def dim(self) -> int: ...  # pragma: no cover

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...  # pragma: no cover


def unnormalized_twin(embedder: Any) -> Any:
    """The embedder's optional ``unnormalized()`` twin, or ``None`` when it declares none or one of the same
    identity (which could not be told apart in a cache)."""
    make = getattr(embedder, "unnormalized", None)
    twin = make() if callable(make) else None
    if twin is None or dict(twin.identity) == dict(embedder.identity):
        return None
    return twin


def sanitize_text(text: Any) -> str:
    """Return ``text`` as a valid UTF-8 ``str``.

    ``bytes`` are decoded as UTF-8 with invalid sequences replaced by U+FFFD; lone surrogates in a
    ``str`` are replaced the same way; ``None`` becomes ``""``. Anything else raises ``TypeError``.
    """
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text).decode("utf-8", errors="replace")
    if isinstance(text, str):
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            return text.encode("utf-8", errors="replace").decode("utf-8")
    if isinstance(text, np.str_):
        return sanitize_text(str(text))
    raise TypeError(f"texts must be str or bytes, got {type(text).__name__}")


def sanitize_texts(texts: Sequence[Any]) -> list:
    """Sanitise a sequence of texts (see :func:`sanitize_text`); a bare ``str`` is rejected."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a sequence of strings, not a single string; wrap it in a list")
    return [sanitize_text(t) for t in texts]

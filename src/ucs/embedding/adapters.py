"""Any object that speaks LangChain's embeddings protocol (``embed_documents``, ``embed_query``) as a ucs
embedder.

Nothing here imports LangChain: the protocol is duck-typed, so :class:`ucs.SelectorIndex` (and its ``load``)
accepts the same objects as the LangChain and DSPy integrations.

**Identity.** A cache entry and a saved index are keyed by the embedder's :attr:`DocumentsEmbedder.identity`,
so two different models must never share one. The identity names the class and the plain settings the object
exposes (pydantic ``model_dump()`` or its attributes: strings, numbers, booleans and JSON-able dicts/lists
such as ``model_kwargs``; never a field whose name looks like a credential). Where none of those names the
model (:data:`NAME_FIELDS`), it adds ``probe``: a fingerprint of the vectors of :data:`PROBE_TEXTS` (rounded
to 3 decimals after ℓ2 normalisation, so the float noise of another CPU does not change it). Cost: one
``embed_documents`` call of three short texts, once per adapter.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from typing import Any, Dict, Optional, Sequence

import numpy as np

__all__ = ["DocumentsEmbedder", "as_embedder", "is_documents_embedder", "NAME_FIELDS", "PROBE_TEXTS"]

#: Settings that name the model behind an embeddings object (the first non-empty string one identifies it).
NAME_FIELDS = (
    "model_name",
    "model",
    "model_id",
    "model_name_or_path",
    "model_path",
    "repo_id",
    "deployment",
    "deployment_name",
    "model_file",
)
#: Fixed texts whose vectors identify a model that names itself nowhere.
PROBE_TEXTS = ("ucs identity probe: the quick brown fox", "Where is my new card?", "0123456789")
_SECRET_HINTS = ("key", "token", "secret", "password", "credential", "auth")


def is_documents_embedder(obj: Any) -> bool:
    """Whether ``obj`` has LangChain's ``embed_documents`` and ``embed_query`` methods."""
    return callable(getattr(obj, "embed_documents", None)) and callable(getattr(obj, "embed_query", None))


def _plain(value: Any) -> Optional[Any]:
    """``value`` if it is JSON-able plain data (after ``json`` round trip), else ``None``."""
    if (
        value is None
        or isinstance(value, (bool, str))
        or (isinstance(value, numbers.Real) and np.isfinite(value))
    ):
        return value
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))
        except (TypeError, ValueError):
            return None
    return None


def _settings(obj: Any) -> Dict[str, Any]:
    dump = getattr(obj, "model_dump", None)
    try:
        fields = dump() if callable(dump) else dict(vars(obj))
    except Exception:  # noqa: BLE001 - an object without inspectable settings is identified by its vectors
        fields = {}
    out: Dict[str, Any] = {}
    for k, v in fields.items():
        if str(k).startswith("_") or any(h in str(k).lower() for h in _SECRET_HINTS):
            continue
        plain = _plain(v)
        if plain is not None or v is None:
            out[str(k)] = plain
    return out


class DocumentsEmbedder:
    """A ucs embedder (``embed``, ``identity``, ``dim``) around an object with
    ``embed_documents``/``embed_query``.

    ``embed`` calls ``embed_documents``; :meth:`embed_query` calls ``embed_query`` (models that embed queries
    differently keep doing so).
    """

    def __init__(self, embeddings: Any) -> None:
        if not is_documents_embedder(embeddings):
            raise ValueError(
                "embeddings must have embed_documents(texts) and embed_query(text) (LangChain's "
                f"Embeddings) or be a ucs embedder (embed + identity); got {type(embeddings).__name__}"
            )
        self.embeddings = embeddings
        self._dim: Optional[int] = None
        self._identity: Optional[Dict[str, Any]] = None

    @property
    def identity(self) -> Dict[str, Any]:
        """``{"model": "langchain:<module>.<Class>", "params": {...}}`` plus ``"probe"`` where no setting
        names the model (computed once)."""
        if self._identity is None:
            cls = type(self.embeddings)
            params = _settings(self.embeddings)
            ident: Dict[str, Any] = {
                "model": f"langchain:{cls.__module__}.{cls.__qualname__}",
                "params": params,
            }
            if not any(isinstance(params.get(f), str) and params[f].strip() for f in NAME_FIELDS):
                ident["probe"] = self.fingerprint()
            self._identity = ident
        return self._identity

    def fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) of the ℓ2-normalised vectors of :data:`PROBE_TEXTS`, rounded to 3
        places."""
        vectors = np.asarray(self.embeddings.embed_documents(list(PROBE_TEXTS)), dtype=np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        rounded = np.round(vectors, 3) + 0.0  # + 0.0 turns -0.0 into 0.0
        return hashlib.sha256(f"{rounded.shape}".encode() + rounded.tobytes()).hexdigest()[:16]

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embeddings.embed_query("dimension probe"))
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``embed_documents(texts)`` as a float32 array (n, d)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(self.embeddings.embed_documents(texts), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.embeddings.embed_query(text), dtype=np.float32)

    async def aembed_query(self, text: str) -> np.ndarray:
        aembed = getattr(self.embeddings, "aembed_query", None)
        if aembed is None:
            return self.embed_query(text)
        return np.asarray(await aembed(text), dtype=np.float32)


def as_embedder(embeddings: Any) -> Any:
    """A ucs embedder (returned as is) or a :class:`DocumentsEmbedder` around a LangChain-style
    ``Embeddings``."""
    if callable(getattr(embeddings, "embed", None)) and hasattr(embeddings, "identity"):
        return embeddings
    if is_documents_embedder(embeddings):
        return DocumentsEmbedder(embeddings)
    raise ValueError(
        "embeddings must be a LangChain Embeddings or a ucs embedder (embed + identity); got "
        f"{type(embeddings).__name__}"
    )

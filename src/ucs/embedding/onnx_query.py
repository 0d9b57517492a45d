"""Query embeddings through ONNX Runtime, for one-query serving latency.

sentence-transformers' own ONNX backend goes through Optimum, whose ONNX Runtime integration cannot be
installed beside transformers 5; this module does the same job with the two libraries underneath it. The
model's transformer is exported once with ``torch.onnx.export`` (the file cached under ``<cache>/onnx/``,
keyed by the model's revision and the torch and ONNX Runtime versions), run by
``onnxruntime.InferenceSession`` with ``threads`` intra-op threads, and pooled and normalised as the model's
own modules do (``Pooling`` in ``mean`` or ``cls`` mode, an optional ``Normalize``). Any other module layout,
or a prompt the model adds to queries, is not exported: :func:`onnx_encoder` returns the reason instead, and
the caller keeps torch.

Every encoder is checked against torch before it is used: the cosine similarity of its vectors and the torch
vectors of the same probe texts must be at least :data:`MIN_COSINE` (measured for all-MiniLM-L6-v2: 1.0 to
float rounding, 2.3–2.5× faster on one thread; ``benchmarks/index/RESULTS_latency.md``).

Pool embeddings never go through here: they stay on torch, so caches and evaluations are unchanged.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "MIN_COSINE",
    "PROBE_TEXTS",
    "GROUP_OVERHEAD_TOKENS",
    "OnnxQueryEncoder",
    "length_groups",
    "onnx_available",
    "onnx_encoder",
    "onnx_layout",
]

#: Least cosine similarity between an ONNX vector and the torch vector of the same text for the encoder to be
#: used.
MIN_COSINE = 0.999
#: Texts the check embeds both ways (short and long, with punctuation and digits, as queries are).
PROBE_TEXTS = (
    "how do I top up my card?",
    "My card still hasn't arrived after 2 weeks, what should I do now",
    "set an alarm for 7:30 tomorrow morning",
    "What's the exchange rate for EUR to USD — and is there a fee when I transfer 1,000 dollars abroad?",
)
#: Bumped when the exported graph or its inputs change, so an older export is never read back.
EXPORT_VERSION = 1
#: The fixed cost of one ONNX Runtime call in padded tokens: a call over ``n`` texts padded to ``L`` tokens
#: costs about ``2 ms + 0.13 ms · n · L`` for all-MiniLM-L6-v2 on one thread (1 text of 8 tokens 2.9 ms, 8 of
#: 45 tokens 42 ms), so one more call pays off once it saves about 16 padded tokens.
GROUP_OVERHEAD_TOKENS = 16
#: Most texts in one ONNX Runtime call (bounds its activations).
MAX_GROUP = 64


def onnx_available() -> bool:
    """Whether ONNX Runtime and the ONNX package (which ``torch.onnx.export`` writes with) are importable."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def onnx_layout(st: Any) -> Union[Tuple[str, bool], str]:
    """``(pooling, normalize)`` of a loaded ``SentenceTransformer`` whose query path this module can
    reproduce, or the reason it cannot (a string): modules ``Transformer → Pooling(mean|cls) [→ Normalize]``,
    no query prompt."""
    names = [type(m).__name__ for m in st]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"modules {names} (supported: Transformer, Pooling[, Normalize])"
    mode = getattr(st[1], "pooling_mode", None)
    if mode not in ("mean", "cls"):
        return f"pooling mode {mode!r} (supported: 'mean', 'cls')"
    if getattr(st, "default_prompt_name", None) or any((getattr(st, "prompts", None) or {}).values()):
        return "the model adds a prompt to its inputs"
    return str(mode), len(names) == 3


class OnnxQueryEncoder:
    """One exported transformer, its tokenizer and the model's pooling.

    Parameters
    ----------
    path : path of the ``.onnx`` file
    tokenizer : the model's (Hugging Face) tokenizer
    pooling : ``"mean"`` (over the attention mask) or ``"cls"`` (first token)
    normalize : ℓ2-normalise the pooled vectors
    max_length : tokens per text (longer texts are truncated, as sentence-transformers does)
    threads : ONNX Runtime intra-op threads

    Notes
    -----
    :meth:`encode` costs one forward pass of the ``n`` texts padded to the longest, ``O(n · L²)``.
    """

    def __init__(
        self,
        path: "str | os.PathLike[str]",
        tokenizer: Any,
        pooling: str,
        normalize: bool,
        max_length: int,
        threads: int = 1,
    ) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer, self.pooling, self.normalize = tokenizer, pooling, bool(normalize)
        self.max_length, self.threads, self.path = int(max_length), int(threads), Path(path)
        #: Whether a text's vector is the same, bit for bit, whatever other texts share its call (set by
        #: :func:`onnx_encoder` after checking the probe texts padded together against each alone).
        self.batch_invariant = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 vectors, in the order of ``texts``.

        Several texts are tokenized once, sorted by token count and run in groups (:func:`length_groups`),
        each padded from that one call (:meth:`_padded`), so that a short text is not padded to a long one's
        length and no text is tokenized twice. Where :attr:`batch_invariant` holds (checked
        by :func:`onnx_encoder`), each row equals the vector of its text encoded alone, bit for bit.
        """
        texts = list(texts)
        if len(texts) <= 1:
            return self._run(texts)
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)  # once, unpadded
        out: Optional[np.ndarray] = None
        for group in length_groups([len(i) for i in enc["input_ids"]]):
            vec = self._forward(self._padded(enc, group))
            if out is None:
                out = np.empty((len(texts), vec.shape[1]), dtype=np.float32)
            out[group] = vec
        assert out is not None
        return out

    def _padded(self, enc: Any, rows: Sequence[int]) -> Dict[str, np.ndarray]:
        """``rows`` of the unpadded tokenizer output ``enc``, padded by the tokenizer's own ``pad`` as
        ``tokenizer(..., padding=True)`` pads them (its side, pad token and token type): ``{name: (n, L)
        int64}``."""
        picked = {name: [enc[name][i] for i in rows] for name in enc}
        padded = self.tokenizer.pad(picked, padding=True, return_tensors="np")
        return {name: np.asarray(padded[name], dtype=np.int64) for name in padded}

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        """One ONNX Runtime call over ``texts`` padded to the longest: ``(len(texts), dim)`` float32."""
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        return self._forward({name: np.asarray(enc[name], dtype=np.int64) for name in enc})

    def _forward(self, feed: Dict[str, np.ndarray]) -> np.ndarray:
        """The pooled (and normalised) vectors of one padded batch ``feed`` (``{name: (n, L) int64}``, with
        ``attention_mask``): ``(n, dim)`` float32."""
        hidden = self.session.run(None, {name: feed[name] for name in self.inputs})[0]  # (n, L, d)
        if self.pooling == "cls":
            vec = hidden[:, 0, :]
        else:
            mask = np.asarray(feed["attention_mask"], dtype=np.float32)[:, :, None]
            vec = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        vec = np.asarray(vec, dtype=np.float32)
        if self.normalize:
            vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(vec, dtype=np.float32)


def length_groups(
    lengths: Sequence[int], overhead: int = GROUP_OVERHEAD_TOKENS, max_group: int = MAX_GROUP
) -> List[np.ndarray]:
    """Positions of texts with these token counts, in groups that each run as one padded call.

    The groups are runs of the texts sorted by length that minimise the padded tokens plus ``overhead`` per
    call (a call of ``n`` texts whose longest has ``L`` tokens costs ``overhead + n·L``), at most
    ``max_group`` texts a call. Exact by dynamic programming over the sorted lengths, O(n · max_group).

    Returns
    -------
    list of ndarray of int64
        Every position once; within a group, shortest first.
    """
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    sorted_len = np.asarray(lengths, dtype=np.int64)[order]
    n = len(order)
    best = np.zeros(n + 1)
    start = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):  # best[j]: the cheapest grouping of the j shortest texts
        i = np.arange(max(0, j - max_group), j)
        cost = best[i] + overhead + (j - i) * sorted_len[j - 1]
        pick = int(np.argmin(cost))
        best[j], start[j] = cost[pick], i[pick]
    groups, j = [], n
    while j > 0:
        groups.append(order[start[j] : j])
        j = int(start[j])
    return groups[::-1]


def _export(st: Any, path: Path) -> None:
    """Write the model's transformer to ``path`` (atomically: a temporary file, then a rename)."""
    import torch

    model, tok = st[0].auto_model, st[0].tokenizer
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tok.model_input_names]

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args))).last_hidden_state

    enc = tok([PROBE_TEXTS[1]], return_tensors="pt")
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=path.parent)
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # the tracer's notes on Python control flow it froze (shapes stay dynamic)
            torch.onnx.export(
                _Hidden(model).eval(),
                tuple(enc[n] for n in names),
                tmp,
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={**axes, "last_hidden_state": {0: "batch", 1: "tokens"}},
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _export_path(cache_dir: Path, revision: str) -> Path:
    import onnxruntime
    import torch

    key = f"{revision}|torch {torch.__version__}|onnxruntime {onnxruntime.__version__}|v{EXPORT_VERSION}"
    return cache_dir / "onnx" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.onnx"


def onnx_encoder(
    st: Any, revision: str, cache_dir: "str | os.PathLike[str]", threads: int = 1, torch_encode: Any = None
) -> Union[OnnxQueryEncoder, str]:
    """An :class:`OnnxQueryEncoder` for the loaded ``SentenceTransformer`` ``st``, checked against torch, or
    the reason there is none (a string: not installed, a layout this module cannot reproduce, an export that
    failed, or vectors that disagree with torch's).

    ``revision`` identifies the weights (the export's cache key); ``torch_encode(texts) -> (n, d)`` gives the
    torch vectors the check compares with. The export happens once per (weights, torch, ONNX Runtime) and
    takes about a second for MiniLM; a damaged cached file is exported again.
    """
    if not onnx_available():
        return "onnxruntime and onnx are not installed (pip install 'ucs[onnx]')"
    layout = onnx_layout(st)
    if isinstance(layout, str):
        return layout
    pooling, normalize = layout
    path = _export_path(Path(cache_dir), revision)
    enc: Optional[OnnxQueryEncoder] = None
    for attempt in range(2):
        try:
            if attempt or not path.is_file():
                _export(st, path)
            enc = OnnxQueryEncoder(path, st[0].tokenizer, pooling, normalize, int(st.max_seq_length), threads)
            break
        except Exception as exc:  # noqa: BLE001 - any exporter or runtime failure means "keep torch"
            if attempt:
                return f"the ONNX export failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    assert enc is not None
    if torch_encode is not None:
        a, b = enc.encode(PROBE_TEXTS), np.asarray(torch_encode(list(PROBE_TEXTS)), dtype=np.float64)
        cos = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
        if float(cos.min()) < MIN_COSINE:
            return f"its vectors differ from torch's (least cosine {float(cos.min()):.5f} < {MIN_COSINE})"
    together = enc._run(PROBE_TEXTS)  # padded to the longest probe: every shorter one runs beside padding
    enc.batch_invariant = all(
        np.array_equal(together[i], enc._run([t])[0]) for i, t in enumerate(PROBE_TEXTS)
    )
    return enc

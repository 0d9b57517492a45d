"""transformers backbone: any causal LM (hub id, local directory or GGUF file) as Embedder and LanguageModel.

* **Embeddings** from any layer (``"last"`` = the final-normed output HF returns, ``"mid"`` =
  ``num_layers // 2``, or an index into ``hidden_states``: 0 is the token-embedding output),
  pooled ``mean`` / ``last`` / ``first`` over the attention mask (correct under left or right
  padding), optional ℓ2; texts are sorted by length and batched, no KV cache is built.
* **Label scoring**: the prefix and the token trie of all continuations go through the model in
  **one** forward pass with a tree-shaped attention mask (each trie node sees the whole prefix and its
  own ancestors), and the LM head is applied only at the positions whose next-token distribution is
  needed.
* **Generation**: ``model.generate`` (greedy, or temperature / top-p sampling under a private RNG
  state), with stop strings.

GGUF files are dequantised to float32 by transformers (needs the ``gguf`` package); the result is
saved once as an ordinary safetensors checkpoint under the ucs cache, keyed by the file's SHA-256,
so later loads take a fraction of a second instead of tens of seconds. A manifest of the checkpoint's
files and their SHA-256 is verified on every load; a damaged checkpoint is moved aside and converted again.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ucs import defaults as D
from ucs.embedding.base import POOLINGS, l2_normalize, sanitize_text, sanitize_texts
from ucs.lm.base import ContinuationScores, ReducedScoresMixin, check_generation_args
from ucs.lm.prefix_tree import build_trie, move_trailing_spaces
from ucs.models.hf_prefix import PrefixBlocks, cache_arg as _cache_arg, supports_prefix_blocks
from ucs.utils.cpu import bf16_cpu_warning
from ucs.utils.optional import InvalidModelFileError, MissingDependencyError, extra_install, require
from ucs.utils.progress import advance

__all__ = ["TransformersBackbone", "pool_hidden"]

_INSTALL = extra_install("torch", "torch transformers gguf accelerate")


def pool_hidden(hidden, mask, pooling: str):
    """Pool token states ``hidden (b, t, d)`` under ``mask (b, t)`` (1 = real token) → ``(b, d)``.

    Works for left and right padding alike: ``last`` takes each row's last real token, ``first`` its
    first real token, ``mean`` the average over real tokens.
    """
    import torch

    m = mask.to(hidden.dtype)
    if pooling == "mean":
        return (hidden * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True).clamp_min(1.0)
    pos = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    if pooling == "last":
        idx = torch.where(mask.bool(), pos, torch.full_like(pos, -1)).max(1).values.clamp_min(0)
    elif pooling == "first":
        big = torch.full_like(pos, mask.shape[1])
        idx = torch.where(mask.bool(), pos, big).min(1).values.clamp_max(mask.shape[1] - 1)
    else:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), idx]


#: The list of a converted checkpoint's files and their SHA-256, written last.
MANIFEST = "ucs-manifest.json"


def write_manifest(folder: Path, source_sha: str) -> None:
    """Record the SHA-256 of every file in ``folder`` (and the GGUF's) in ``folder / MANIFEST``."""
    from ucs.utils.io import atomic_write_text
    from ucs.utils.weights import fingerprint

    files = {f.name: fingerprint(f) for f in sorted(folder.iterdir()) if f.is_file() and f.name != MANIFEST}
    atomic_write_text(folder / MANIFEST, json.dumps({"source_sha256": source_sha, "files": files}, indent=1))


def converted_ok(folder: Path, source_sha: str) -> bool:
    """Whether ``folder`` holds a converted checkpoint of the GGUF ``source_sha`` whose files all match
    their manifest. Absent: ``False``. Damaged or unverifiable (a changed, missing or extra file; no
    manifest): moved aside with a :class:`~ucs.utils.integrity.DamagedFileWarning` and ``False``, so the
    caller converts anew. Time: one SHA-256 pass over the files (once per process and file version)."""
    from ucs.utils.integrity import move_aside, report_damage
    from ucs.utils.weights import fingerprint

    if not folder.exists():
        return False
    try:
        man = json.loads((folder / MANIFEST).read_text())
        files = {f.name for f in folder.iterdir() if f.is_file() and f.name != MANIFEST}
        ok = (
            man.get("source_sha256") == source_sha
            and set(man["files"]) == files
            and all(fingerprint(folder / n) == h for n, h in man["files"].items())
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        moved = move_aside(folder)
        report_damage(
            f"converted model {folder} does not match its manifest; moved to {moved.name}, converting again"
        )
    return ok


def _is_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


class TransformersBackbone(ReducedScoresMixin):
    """A causal LM run with ``torch`` + ``transformers``; implements ``Embedder`` and ``LanguageModel``.

    Parameters
    ----------
    model : str or Path
        Hub id (``"HuggingFaceTB/SmolLM2-135M-Instruct"``), local model directory, or a ``.gguf`` file.
    name : str, optional
        Name recorded in :attr:`identity`.
    layer : {"last", "mid"} or int, default="last"
    pooling : {"mean", "last", "first"}, default="mean"
    normalize : bool, default=False
    max_length : int, default=512
        Embedding truncation length in tokens.
    batch_size : int, default=64
        Texts per embedding batch (batches are formed after sorting by length).
    context_length : int, optional
        Longest prompt for scoring/generation (left-truncated beyond it); defaults to
        ``min(model max positions, 4096)``.
    device : str, optional
        ``"cpu"``, ``"cuda"``, ``"cuda:1"`` …; ignored when ``device_map`` is given.
    device_map : str or dict, optional
        Passed to ``from_pretrained`` (``"auto"`` shards over GPUs; needs ``accelerate``).
    dtype : str, optional
        ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``"auto"``; default float32 on CPU, the
        checkpoint's dtype on GPU.
    revision : str, optional
        Hub revision (branch, tag or commit).
    trust_remote_code : bool, default=False
    cache_converted : bool, default=True
        Keep a float32 safetensors copy of GGUF models in the ucs cache.
    seed : int, default=0
        Default sampling seed for :meth:`generate`.
    prefix_cache_tokens : int, default=8192
        Prompt tokens whose attention keys and values label scoring keeps for the next prompts
        (:mod:`ucs.models.hf_prefix`; models whose layers all attend to the full context); ``0`` turns it off.

    Notes
    -----
    Embedding ``n`` texts: O(n · L · layers) compute with length-sorted batches (little padding);
    memory O(batch_size · L · d) activations. Scoring ``k`` continuations over a prefix of ``P``
    tokens with an ``m``-node trie: one forward pass over ``P + m`` positions (attention mask
    O((P + m)²)) plus the LM head at ``≤ m + 1`` positions; with a cached run of ``L`` prompt tokens
    (the instruction and label list every prompt of a dataset opens with) the pass covers ``P − L + m``.
    """

    engine = "transformers"
    #: ``generate`` answers its prompts one after another (the runner may ask a batch in parts).
    generates_one_at_a_time = True

    def __init__(
        self,
        model: "str | os.PathLike[str]",
        name: Optional[str] = None,
        layer: "str | int" = D.LAYER,
        pooling: str = D.POOLING,
        normalize: bool = False,
        max_length: int = D.MAX_LENGTH,
        batch_size: int = 64,
        context_length: Optional[int] = None,
        device: Optional[str] = None,
        device_map: Any = None,
        dtype: Optional[str] = None,
        revision: Optional[str] = None,
        trust_remote_code: bool = False,
        cache_converted: bool = True,
        seed: int = 0,
        prefix_cache_tokens: int = 8192,
    ) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if not (layer in ("last", "mid") or isinstance(layer, (int, np.integer))):
            raise ValueError(f"layer must be 'last', 'mid' or an integer index, got {layer!r}")
        for pname, val in (("max_length", max_length), ("batch_size", batch_size)):
            if not isinstance(val, (int, np.integer)) or val < 1:
                raise ValueError(f"{pname} must be a positive integer, got {val!r}")
        if context_length is not None and (not isinstance(context_length, int) or context_length < 2):
            raise ValueError(f"context_length must be an integer >= 2 or None, got {context_length!r}")
        self.model = str(model)
        self.name = name or (Path(self.model).name if Path(self.model).exists() else self.model)
        self.layer = layer
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.context_length_ = context_length
        self.device = device
        self.device_map = device_map
        self.dtype = dtype
        self.revision = revision
        self.trust_remote_code = trust_remote_code
        self.cache_converted = cache_converted
        self.seed = seed
        if (
            isinstance(prefix_cache_tokens, bool)
            or not isinstance(prefix_cache_tokens, (int, np.integer))
            or prefix_cache_tokens < 0
        ):
            raise ValueError(
                f"prefix_cache_tokens must be an integer >= 0 (0 turns the cache off); "
                f"got {prefix_cache_tokens!r}"
            )
        self.prefix_cache_tokens = int(prefix_cache_tokens)
        self._prefix = None
        self._model = None
        self._tok = None
        self._revision_id: Optional[str] = None
        self._twin_of: Optional["TransformersBackbone"] = None  # set on an unnormalized() twin

    # ------------------------------------------------------------------ loading
    def load(self) -> "TransformersBackbone":
        """Load tokenizer and model (idempotent); validates ``layer``; returns ``self``."""
        if self._model is not None:
            return self
        origin = self._twin_of
        if origin is not None:  # an unnormalized() twin: load once, in the backbone it came from, and share
            origin.load()
            self._model, self._tok = origin._model, origin._tok
            self._revision_id, self._layer_index = origin._revision_id, origin._layer_index
            return self
        torch = require("torch", _INSTALL, "The transformers engine")
        transformers = require("transformers", _INSTALL, "The transformers engine")
        path = Path(self.model).expanduser()
        kw: Dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        dtype = self._torch_dtype(torch)
        if dtype is not None:
            kw["dtype"] = dtype
        if self.device_map is not None:
            kw["device_map"] = self.device_map
        if path.is_file():
            if not _is_gguf(path):
                raise InvalidModelFileError(f"{path} is neither a model directory nor a GGUF file")
            from ucs.utils.weights import fingerprint

            sha = fingerprint(path)
            self._revision_id = "sha256:" + sha
            src, tok_src, extra = self._gguf_source(path, sha, transformers, kw)
        elif path.is_dir():
            from ucs.utils.weights import fingerprint

            self._revision_id = "sha256:" + fingerprint(path)
            src, tok_src, extra = str(path), str(path), {}
        elif path.exists() or os.sep in self.model and not self.model.count("/") == 1:
            raise FileNotFoundError(f"model path does not exist: {path}")
        else:
            src, tok_src, extra = self.model, self.model, {"revision": self.revision}
        try:
            self._tok = transformers.AutoTokenizer.from_pretrained(
                tok_src, **{**extra, **{k: v for k, v in kw.items() if k == "trust_remote_code"}}
            )
            self._model = transformers.AutoModelForCausalLM.from_pretrained(
                src, attn_implementation="sdpa", **extra, **kw
            )
        except OSError as exc:
            raise OSError(f"cannot load {self.model!r} with transformers: {exc}") from exc
        except ImportError as exc:
            raise MissingDependencyError(f"loading {self.model!r} needs another package: {exc}") from exc
        if self.device_map is None:
            dev = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._model.to(dev)
            slow = bf16_cpu_warning(dev, self.dtype)
            if slow:
                warnings.warn(slow, RuntimeWarning, stacklevel=2)
        self._model.eval()
        if self._revision_id is None:
            self._revision_id = (
                self.revision or getattr(self._model.config, "_commit_hash", None) or "unknown"
            )
        if self._tok.pad_token_id is None:
            self._tok.pad_token = self._tok.eos_token
        self._layer_index = self._resolve_layer()
        return self

    def _torch_dtype(self, torch):
        if self.dtype in (None,):
            on_gpu = (self.device or "").startswith("cuda") or self.device_map is not None
            return None if on_gpu else torch.float32
        if self.dtype == "auto":
            return "auto"
        try:
            return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[
                self.dtype
            ]
        except KeyError:
            raise ValueError(
                f"dtype must be float32, float16, bfloat16 or auto, got {self.dtype!r}"
            ) from None

    def _gguf_source(self, path: Path, sha: str, transformers, kw):
        """Return (model source, tokenizer source, extra kwargs) for a GGUF file, via the fp32 cache."""
        require("gguf", "gguf", "Loading a GGUF file with transformers")
        from ucs.utils.weights import models_cache_dir

        target = models_cache_dir() / "hf-from-gguf" / sha[:24]
        if converted_ok(target, sha):
            return str(target), str(target), {}
        gg = {"gguf_file": path.name}
        if not self.cache_converted:
            return str(path.parent), str(path.parent), gg
        self._convert_gguf(path, sha, target, transformers, gg)
        return str(target), str(target), {}

    @staticmethod
    def _convert_gguf(path: Path, sha: str, target: Path, transformers, gg: Dict[str, str]) -> None:
        """Dequantise the GGUF once into a safetensors checkpoint at ``target``, with a manifest of its files'
        SHA-256 that :func:`converted_ok` verifies on every later load; written aside and renamed into
        place."""
        tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), **gg)
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), dtype="float32", **gg)
        config = model.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        clean = transformers.AutoModelForCausalLM.from_config(config)
        clean.load_state_dict(model.state_dict(), strict=False)
        clean.tie_weights()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            clean.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            write_manifest(tmp, sha)
            try:
                os.replace(tmp, target)
            except OSError:
                if not converted_ok(target, sha):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @property
    def num_layers(self) -> int:
        self.load()
        cfg = self._model.config
        cfg = getattr(cfg, "text_config", cfg)
        return int(cfg.num_hidden_layers)

    def _resolve_layer(self) -> Optional[int]:
        """``None`` = the final-normed output; otherwise an index into ``hidden_states`` (0..L)."""
        n = self.num_layers
        if self.layer == "last":
            return None
        if self.layer == "mid":
            return n // 2
        idx = int(self.layer)
        if not -(n + 1) <= idx <= n:
            raise ValueError(
                f"layer {idx} is out of range for a model with {n} layers "
                f"(valid: 0..{n}, or -{n + 1}..-1; 0 is the token-embedding output)"
            )
        idx = idx % (n + 1)
        return None if idx == n else idx

    @property
    def context_length(self) -> int:
        self.load()
        if self.context_length_ is not None:
            return int(self.context_length_)
        cfg = getattr(self._model.config, "text_config", self._model.config)
        return int(min(getattr(cfg, "max_position_embeddings", 4096) or 4096, 4096))

    # ------------------------------------------------------------------ identity
    @property
    def identity(self) -> Dict[str, Any]:
        """Cache key; computed without loading weights for local files and directories."""
        if self._revision_id is None:
            path = Path(self.model).expanduser()
            if path.exists():
                from ucs.utils.weights import fingerprint

                self._revision_id = "sha256:" + fingerprint(path)
            else:
                self.load()
        layer = self.layer if isinstance(self.layer, str) else int(self.layer)
        return {
            "model": self.name,
            "revision": self._revision_id,
            "engine": self.engine,
            "layer": layer,
            "pooling": self.pooling,
            "l2": self.normalize,
            "max_length": self.max_length,
            "dtype": self.dtype or "default",
        }

    @property
    def dim(self) -> int:
        self.load()
        cfg = getattr(self._model.config, "text_config", self._model.config)
        return int(cfg.hidden_size)

    @property
    def _device(self):
        return next(self._model.parameters()).device

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str, add_special: bool = True) -> List[int]:
        self.load()
        return list(self._tok(sanitize_text(text), add_special_tokens=add_special)["input_ids"])

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def _fallback_token(self) -> int:
        t = self._tok.bos_token_id
        return int(t if t is not None else self._tok.eos_token_id)

    # ------------------------------------------------------------------ embeddings
    def _embedding_ids(self, texts: List[str]) -> "tuple[List[List[int]], np.ndarray]":
        """Token ids of ``texts`` (an empty text becomes the fallback token) and the order ``embed``
        processes them in: by token count, stably, so that batches pad little."""
        ids = self._tok(texts, add_special_tokens=True, truncation=True, max_length=self.max_length)[
            "input_ids"
        ]
        fb = self._fallback_token()
        ids = [x if len(x) else [fb] for x in ids]
        return ids, np.argsort([len(x) for x in ids], kind="stable")

    def unnormalized(self) -> "Optional[TransformersBackbone]":
        """This backbone without ℓ2 normalisation, or ``None`` when it does not normalise.

        :meth:`embed` normalises the pooled rows with :func:`~ucs.embedding.base.l2_normalize` after the model
        has run, so ``l2_normalize(twin.embed(texts))`` equals ``self.embed(texts)`` bit for bit and
        :class:`~ucs.embedding.EmbeddingCache` derives an ℓ2 pass from the plain one instead of running the
        model again. The twin is a shallow copy that shares the model: when neither has loaded yet, the twin's
        first :meth:`load` loads it into this backbone, once, for both.
        """
        if not self.normalize:
            return None
        twin = copy.copy(self)
        twin.normalize = False
        twin._twin_of = self
        return twin

    def batch_order(self, texts: Sequence[str]) -> List[np.ndarray]:
        """The batches :meth:`embed` forms for ``texts``, as arrays of row indices, in processing order.

        Embedding the texts of consecutive batches, concatenated in this order, gives those rows bit
        for bit as one call over all ``texts`` does (the batches, and so their padding, are the same),
        which lets :class:`~ucs.embedding.EmbeddingCache` checkpoint a long pass. O(total tokens).
        """
        texts = sanitize_texts(texts)
        if not texts:
            return []
        self.load()
        _, order = self._embedding_ids(texts)
        return [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Pooled hidden states of the configured layer, shape ``(len(texts), dim)`` float32."""
        import torch

        texts = sanitize_texts(texts)
        self.load()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids, order = self._embedding_ids(texts)
        pad = int(self._tok.pad_token_id)
        left = getattr(self._tok, "padding_side", "right") == "left"
        base = self._model.get_decoder() if hasattr(self._model, "get_decoder") else self._model.base_model
        dev = self._device
        with torch.inference_mode():
            for s in range(0, len(order), self.batch_size):
                rows = order[s : s + self.batch_size]
                L = max(len(ids[r]) for r in rows)
                inp = torch.full((len(rows), L), pad, dtype=torch.long)
                mask = torch.zeros((len(rows), L), dtype=torch.long)
                for i, r in enumerate(rows):
                    x = ids[r]
                    sl = slice(L - len(x), L) if left else slice(0, len(x))
                    inp[i, sl] = torch.tensor(x)
                    mask[i, sl] = 1
                inp, mask = inp.to(dev), mask.to(dev)
                want_all = self._layer_index is not None
                res = base(input_ids=inp, attention_mask=mask, use_cache=False, output_hidden_states=want_all)
                h = res.last_hidden_state if not want_all else res.hidden_states[self._layer_index]
                out[rows] = pool_hidden(h.float(), mask, self.pooling).cpu().numpy()
                advance(len(rows), kind="embed")
        return l2_normalize(out) if self.normalize else out

    # ------------------------------------------------------------------ scoring
    def score_continuations_detailed(self, prefix: str, continuations: Sequence[str]) -> ContinuationScores:
        """Log-probabilities of each continuation given ``prefix``, with token counts.

        One forward pass over the prefix followed by the continuations' token trie, with a tree
        attention mask; the LM head runs only where a next-token distribution is needed.
        """
        import torch

        conts = sanitize_texts(continuations)
        self.load()
        k = len(conts)
        if k == 0:
            return ContinuationScores(np.zeros(0), np.zeros(0, dtype=np.int64))
        prefix, conts = move_trailing_spaces(sanitize_text(prefix), conts)
        fb = self._fallback_token()
        p_tok = self.tokenize(prefix) or [fb]
        c_tok = [self.tokenize(c, add_special=False) or [fb] for c in conts]
        n_tok = np.array([len(c) for c in c_tok], dtype=np.int64)
        max_c = int(n_tok.max())
        ctx = self.context_length
        if max_c >= ctx:
            raise ValueError(f"a continuation has {max_c} tokens, more than context_length={ctx}")
        p_tok = p_tok[-max(1, ctx - max_c - 1) :]
        P = len(p_tok)
        trie = build_trie(c_tok)
        m = trie.n_nodes
        T = P + m
        # ancestor-or-self matrix of the trie, built level by level: anc[i] = anc[parent[i]] | {i}
        anc = np.zeros((m, m), dtype=bool)
        for i in range(m):
            par = trie.parent[i]
            if par >= 0:
                anc[i] = anc[par]
            anc[i, i] = True
        allowed = np.zeros((T, T), dtype=bool)
        allowed[:P, :P] = np.tril(np.ones((P, P), dtype=bool))
        allowed[P:, :P] = True
        allowed[P:, P:] = anc
        pos = np.concatenate([np.arange(P), P + trie.depth])
        need_rows = np.concatenate([[P - 1], P + np.nonzero(trie.has_children())[0]])
        dev = self._device
        store = self._prefix_store()
        L, past = store.prefix(p_tok) if store is not None else (0, None)
        masks = self._masks(allowed, pos, L)
        inp = torch.tensor([(p_tok + trie.tokens.tolist())[L:]], dtype=torch.long, device=dev)
        cache = {} if past is None else {_cache_arg(self._model): past}
        with torch.inference_mode():
            res = self._model(
                input_ids=inp,
                attention_mask={k_: v.to(dev) for k_, v in masks.items()}
                if isinstance(masks, dict)
                else masks.to(dev),
                position_ids=torch.tensor(pos[None, L:], device=dev),
                use_cache=past is not None,
                logits_to_keep=torch.tensor(need_rows - L, device=dev),
                **cache,
            )
            logp_rows = torch.log_softmax(res.logits[0].float(), dim=-1)
        row_of = {int(r): q for q, r in enumerate(need_rows)}
        src_row = np.array(
            [row_of[P - 1 if trie.parent[i] < 0 else P + int(trie.parent[i])] for i in range(m)]
        )
        node_lp = logp_rows[torch.tensor(src_row), torch.tensor(trie.tokens)].double().cpu().numpy()
        logp = np.array([node_lp[p].sum() for p in trie.paths], dtype=np.float64)
        return ContinuationScores(logprob=logp, n_tokens=n_tok)

    def _prefix_store(self) -> Optional[PrefixBlocks]:
        """The prefix-block cache of label scoring (built on first use, shared with an ``unnormalized`` twin),
        or ``None`` when it is off or the model has layers other than full or sliding-window attention."""
        owner = self._twin_of or self
        if owner._prefix is None and owner.prefix_cache_tokens and supports_prefix_blocks(self._model):
            owner._prefix = PrefixBlocks(self._model, owner.prefix_cache_tokens, masks=self._masks)
        return owner._prefix

    def _masks(self, allowed: np.ndarray, pos: np.ndarray, start: int = 0):
        """Boolean 4D masks (True = attend) for SDPA; a dict per layer type for sliding-window models.

        ``allowed`` (T, T) and ``pos`` (T,) cover every position; the masks are for the queries from ``start``
        on (shape (1, 1, T − start, T)), the keys before them coming from a cache."""
        import torch

        allowed = allowed[start:]
        full = torch.from_numpy(allowed)[None, None]
        cfg = getattr(self._model.config, "text_config", self._model.config)
        types = set(getattr(cfg, "layer_types", None) or [])
        if len(types) <= 1 and not getattr(cfg, "sliding_window", None):
            return full
        out = {t: full for t in types} if types else {}
        win = getattr(cfg, "sliding_window", None)
        if win:
            dist = pos[start:, None] - pos[None, :]
            sw = torch.from_numpy(allowed & (dist < win))[None, None]
            for t in types:
                if "sliding" in t:
                    out[t] = sw
        return out if out else full

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

        Sampling runs under a forked torch RNG seeded with ``seed + i`` for prompt ``i`` (default
        ``self.seed + i``); the global RNG state is left untouched.
        """
        import torch

        check_generation_args(max_new_tokens, temperature, top_p)
        prompts = sanitize_texts(prompts)
        self.load()
        base = self.seed if seed is None else seed
        keep = max(1, self.context_length - max_new_tokens)
        dev = self._device
        stops = [s for s in (stop or []) if s]
        out = []
        for i, p in enumerate(prompts):
            ids = (self.tokenize(p) or [self._fallback_token()])[-keep:]
            inp = torch.tensor([ids], device=dev)
            gen_kw: Dict[str, Any] = dict(
                max_new_tokens=max_new_tokens,
                attention_mask=torch.ones_like(inp),
                pad_token_id=self._tok.pad_token_id,
                top_k=None,
                min_p=None,
                repetition_penalty=None,
            )
            if temperature > 0:
                gen_kw.update(do_sample=True, temperature=float(temperature), top_p=float(top_p))
            else:
                gen_kw.update(do_sample=False, temperature=None, top_p=None)
            if stops:
                gen_kw.update(stop_strings=stops, tokenizer=self._tok)
            devices = [dev] if dev.type == "cuda" else []
            with torch.inference_mode(), torch.random.fork_rng(devices=devices):
                torch.manual_seed(int(base) + i)
                seq = self._model.generate(inp, **gen_kw)
            text = self._tok.decode(seq[0, len(ids) :], skip_special_tokens=True)
            if stops:
                cut = min((text.find(s) for s in stops if s in text), default=-1)
                if cut >= 0:
                    text = text[:cut]
            out.append(text)
        return out

    def __repr__(self) -> str:
        return (
            f"TransformersBackbone({self.name!r}, layer={self.layer!r}, pooling={self.pooling!r}, "
            f"normalize={self.normalize})"
        )

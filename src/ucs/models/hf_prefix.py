"""Key/value states of prompt prefixes, kept in fixed token blocks and reused across prompts (transformers
engine).

Every ICL prompt of a dataset opens with the same instruction and label list (594 of a BANKING77 prompt's ≈
890 SmolLM2 tokens; 677 for CLINC150), and many prompts share demonstrations after it. Scoring a prompt's
labels then recomputes that shared part for every prompt. :class:`PrefixBlocks` keeps the attention keys and
values of prompt tokens in blocks of :data:`BLOCK` tokens, keyed by **all** tokens up to the block's end, so a
new prompt reads its longest cached run of whole blocks and computes only the rest (the label trie's pass
needs it anyway).

Results do not depend on which prompts came before: block ``j`` of a prompt is always computed the same way
(one forward pass over exactly its ``BLOCK`` tokens, attending to blocks ``0 … j−1``), whether found in the
cache or computed now, and where the cached run stops depends only on the prompt's own length. Full and
sliding-window attention layers (Gemma-3) qualify: every layer's keys and values are kept for every position
and the window is set by the attention mask, as in the single pass; models with recurrent or linear-attention
layers run the single pass.

Memory: ``2 · layers · kv_heads · head_dim · 4`` bytes a token in float32 (SmolLM2-135M: 46 KB, a block 2.9
MB); at most ``max_tokens`` tokens are kept, least recently used blocks dropped first.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["BLOCK", "PrefixBlocks", "cache_arg", "supports_prefix_blocks"]

#: Tokens per cached block.
BLOCK = 64


def supports_prefix_blocks(model: Any) -> bool:
    """Whether every layer of ``model`` is full or sliding-window attention (keys and values of every
    position, the window set by the mask), not a recurrent or linear-attention state that a block cannot
    hold."""
    cfg = getattr(model.config, "text_config", model.config)
    types = set(getattr(cfg, "layer_types", None) or ["full_attention"])
    return types <= {"full_attention", "sliding_attention"}


class PrefixBlocks:
    """An LRU store of per-block key/value states of one model's prompt prefixes.

    Parameters
    ----------
    model : transformers causal LM
        Loaded, in evaluation mode; :func:`supports_prefix_blocks` must hold.
    max_tokens : int
        Tokens kept at most (whole blocks); ``0`` keeps none.
    masks : callable
        ``masks(allowed (T, T), positions (T,), start)`` → the model's attention mask(s) for the queries from
        ``start`` on (the backbone's own, so sliding-window layers get their window).

    Notes
    -----
    :meth:`prefix` of a ``P``-token prompt returns ``L = BLOCK · ⌊(P − 1) / BLOCK⌋`` cached positions (the
    last prompt token always stays in the caller's pass, whose logits it gives), computing the missing blocks
    one forward pass of ``BLOCK`` tokens each. Time O(missing blocks · BLOCK · L · layers); the copy of the
    cached run into one cache object O(L · layers · kv width).
    """

    def __init__(
        self, model: Any, max_tokens: int, masks: Callable[[np.ndarray, np.ndarray, int], Any]
    ) -> None:
        self.model = model
        self.masks = masks
        self.max_blocks = max(0, int(max_tokens) // BLOCK)
        self._blocks: "OrderedDict[bytes, List[Tuple[Any, Any]]]" = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def prefix(self, tokens: Sequence[int]) -> Tuple[int, Optional[Any]]:
        """``(L, cache)``: a transformers cache holding the first ``L`` positions of ``tokens``, or ``(0,
        None)``."""
        n_blocks = (len(tokens) - 1) // BLOCK if self.max_blocks else 0
        if n_blocks <= 0:
            return 0, None
        arr = np.asarray(tokens, dtype=np.int64)
        layers: List[List[Tuple[Any, Any]]] = []
        with self._lock:
            for j in range(n_blocks):
                key = arr[: (j + 1) * BLOCK].tobytes()
                block = self._blocks.get(key)
                if block is None:
                    block = self._compute(arr[j * BLOCK : (j + 1) * BLOCK], layers, j * BLOCK)
                    self._blocks[key] = block
                    self.misses += 1
                    while len(self._blocks) > self.max_blocks:
                        self._blocks.popitem(last=False)
                else:
                    self._blocks.move_to_end(key)
                    self.hits += 1
                layers.append(block)
        return n_blocks * BLOCK, _cache_of(layers)

    def _compute(
        self, block_tokens: np.ndarray, before: List[List[Tuple[Any, Any]]], start: int
    ) -> List[Tuple[Any, Any]]:
        """Keys and values of one block: a forward pass over its tokens attending to the blocks before it."""
        import torch

        past = _cache_of(before)
        end = start + BLOCK
        masks = self.masks(np.tril(np.ones((end, end), dtype=bool)), np.arange(end), start)
        with torch.inference_mode():
            self.model(
                input_ids=torch.tensor(block_tokens[None]),
                attention_mask=masks,
                position_ids=torch.arange(start, end)[None],
                use_cache=True,
                logits_to_keep=1,
                **{cache_arg(self.model): past},
            )
        return [(k[:, :, -BLOCK:].clone(), v[:, :, -BLOCK:].clone()) for k, v in _layers_of(past)]


def _cache_of(blocks: List[List[Tuple[Any, Any]]]) -> Any:
    """A ``DynamicCache`` holding ``blocks`` (each a per-layer list of ``(keys, values)``) one after the
    other."""
    import torch
    from transformers.cache_utils import DynamicCache

    if not blocks:
        return DynamicCache()
    per_layer = [
        (torch.cat([b[i][0] for b in blocks], dim=2), torch.cat([b[i][1] for b in blocks], dim=2))
        for i in range(len(blocks[0]))
    ]
    return DynamicCache(per_layer)


def _layers_of(cache: Any) -> List[Tuple[Any, Any]]:
    """Each layer's ``(keys, values)`` of a ``DynamicCache`` (transformers ≥ 4.56 and older layouts)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))  # pragma: no cover - older transformers


def cache_arg(model: Any) -> str:
    """The forward argument that takes a cache: ``cache`` (recent transformers) or ``past_key_values``."""
    return _cache_arg_of(type(model))


@functools.lru_cache(maxsize=None)
def _cache_arg_of(cls: type) -> str:
    import inspect

    params = inspect.signature(cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"

"""The child process of :mod:`ucs.models.probe`: the llama.cpp engine's three uses, once each, on one model.

``python -m ucs.models._probe_child MODEL.gguf`` loads the model, embeds two texts, scores two label
continuations of one prompt and generates four tokens, then prints one line and exits 0. A Python error exits
1; a native crash kills the process, which is what the parent looks for. Cost: one model load (about 1 s for
SmolLM2-135M).
"""

from __future__ import annotations

import sys

import numpy as np

from ucs.models.llamacpp import LlamaCppBackbone
from ucs.utils.cpu import cpu_model


def main(model_path: str) -> str:
    """Exercise the engine; returns the line to print, raises ``RuntimeError`` on non-finite outputs."""
    backbone = LlamaCppBackbone(model_path, context_length=512, batch_tokens=128)
    vectors = backbone.embed(["My card has not arrived yet.", "How do I change my PIN?"])
    scores = backbone.score_continuations(
        "Query: where is my new card?\nIntent:", [" card_arrival", " change_pin"]
    )
    text = backbone.generate(["Query: where is my new card?\nIntent:"], max_new_tokens=4)[0]
    if vectors.shape[0] != 2 or not np.isfinite(vectors).all() or not np.isfinite(scores).all():
        raise RuntimeError("the engine returned non-finite embeddings or scores")
    return (
        f"{cpu_model() or 'this CPU'}: embedded 2 texts ({vectors.shape[1]} dims), scored 2 labels, "
        f"generated {text!r}"
    )


if __name__ == "__main__":  # pragma: no cover - run as a child process by ucs.models.probe
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ucs.models._probe_child MODEL.gguf")
    print(main(sys.argv[1]))

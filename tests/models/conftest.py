"""Session-scoped real backbones (loaded once; the tests that use them are marked slow)."""

from __future__ import annotations

import pytest

TEXTS = [
    "I still have not received my new card.",
    "How do I top up my account with a cheque?",
    "",
    "my card was declined at the shop " * 100,
    "Why was I charged a fee for the exchange?",
]


@pytest.fixture(scope="session")
def smollm2_path():
    pytest.importorskip("llama_cpp")
    from ucs.utils.weights import smollm2_gguf_path
    from ucs.utils.optional import MissingDependencyError

    try:
        return smollm2_gguf_path()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def smollm2_llama(smollm2_path):
    from ucs.models import load_backbone

    m = load_backbone(
        "smollm2", engine="llama", n_threads=2, max_length=64, context_length=512, batch_tokens=256
    ).load()
    yield m
    m.close()


@pytest.fixture(scope="session")
def smollm2_hf(smollm2_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from ucs.models import load_backbone

    return load_backbone(
        "smollm2", engine="transformers", batch_size=8, max_length=64, context_length=512
    ).load()

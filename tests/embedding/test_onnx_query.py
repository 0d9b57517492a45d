"""Query embeddings through ONNX Runtime (ucs.embedding.onnx_query) against the torch path, with the real
MiniLM."""

import numpy as np
import pytest

from ucs.embedding import onnx_query as oq

pytest.importorskip("sentence_transformers")

TEXTS = [
    "how do I top up my card?",
    "my card payment was declined twice at the supermarket",
    "set an alarm for 7:30",
    "What's the exchange rate — and the fee — for 1,000 USD?",
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _minilm(**kw):
    from ucs.embedding.sbert import load_retrieval_embedder

    try:
        return load_retrieval_embedder("all-minilm-l6-v2", query_threads=1, **kw)
    except Exception as exc:  # pragma: no cover - depends on the installed weights
        pytest.skip(f"all-MiniLM-L6-v2 is unavailable: {exc}")


def _cos(a, b):
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_queries_equal_torch_ones_and_the_export_is_cached(cache):
    if not oq.onnx_available():
        pytest.skip("the onnx extra is not installed")
    e = _minilm()
    q = e.embed_queries(TEXTS)
    assert e.query_backend_ == "onnx" and e.query_backend_reason_ is None
    assert q.dtype == np.float32 and q.shape == (4, 384)
    torch_vecs = e.embed(TEXTS)
    assert _cos(q, torch_vecs).min() >= 0.99999
    np.testing.assert_allclose(q, torch_vecs, atol=2e-5)
    files = list((cache / "onnx").glob("*.onnx"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    again = _minilm()
    np.testing.assert_array_equal(again.embed_queries(TEXTS), q)  # the cached export, same vectors
    assert files[0].stat().st_mtime_ns == stamp and again.query_backend_ == "onnx"
    files[0].write_bytes(b"not an onnx file")  # a damaged export is made again, never used
    third = _minilm()
    np.testing.assert_array_equal(third.embed_queries(TEXTS), q)
    assert third.query_backend_ == "onnx" and files[0].stat().st_size > 1000


def test_a_batch_is_tokenized_once_and_padded_as_the_tokenizer_pads(cache):
    """encode pads the groups of one unpadded tokenizer call itself: the inputs equal the tokenizer's own
    padding, and every vector equals, bit for bit, its group run through the tokenizer's padding."""
    if not oq.onnx_available():
        pytest.skip("the onnx extra is not installed")
    e = _minilm()
    e.embed_queries(TEXTS[:1])
    enc = e._onnx[1]
    texts = TEXTS + ["hi", "card", "a much longer query about a transfer that never reached my other account"]
    unpadded = enc.tokenizer(texts, truncation=True, max_length=enc.max_length)
    for rows in ([0, 1, 2, 3], [4, 5], [6, 4, 0]):
        ours = enc._padded(unpadded, rows)
        theirs = enc.tokenizer(
            [texts[i] for i in rows],
            padding=True,
            truncation=True,
            max_length=enc.max_length,
            return_tensors="np",
        )
        assert set(ours) == set(enc.inputs) | {"attention_mask"}
        for name, arr in ours.items():
            assert arr.dtype == np.int64
            np.testing.assert_array_equal(arr, theirs[name])
    got = enc.encode(texts)
    want = np.empty_like(got)
    for group in oq.length_groups([len(i) for i in unpadded["input_ids"]]):
        want[group] = enc._run([texts[i] for i in group])
    np.testing.assert_array_equal(got, want)


def test_torch_is_kept_when_asked_when_missing_or_when_the_check_fails(cache, monkeypatch):
    e = _minilm(query_backend="torch")
    q = e.embed_queries(TEXTS[:2])
    assert e.query_backend_ == "torch" and not (cache / "onnx").exists()
    np.testing.assert_allclose(q, e.embed(TEXTS[:2]), atol=1e-5)

    monkeypatch.setattr(oq, "onnx_available", lambda: False)
    auto = _minilm()
    np.testing.assert_allclose(auto.embed_queries(TEXTS[:2]), q, atol=1e-5)
    assert auto.query_backend_ == "torch" and "pip install" in auto.query_backend_reason_
    with pytest.raises(
        RuntimeError, match="query_backend='onnx' cannot run .*not installed.*query_backend='torch'"
    ):
        _minilm(query_backend="onnx").embed_queries(TEXTS[:1])
    monkeypatch.undo()

    if oq.onnx_available():
        monkeypatch.setenv("UCS_CACHE_DIR", str(cache))
        monkeypatch.setattr(oq, "MIN_COSINE", 1.5)  # no vectors can pass: the check must refuse them
        strict = _minilm()
        np.testing.assert_allclose(strict.embed_queries(TEXTS[:2]), q, atol=1e-5)
        assert strict.query_backend_ == "torch" and "differ from torch" in strict.query_backend_reason_


def test_a_bad_backend_name_and_unsupported_layouts_are_refused_by_name():
    from ucs.embedding.sbert import SentenceTransformerEmbedder

    with pytest.raises(ValueError, match="query_backend must be one of auto, torch, onnx"):
        SentenceTransformerEmbedder("x", query_backend="tensorrt")

    def module(name, **attrs):
        return type(name, (), attrs)()

    class Model(list):
        prompts: dict = {}
        default_prompt_name = None

    assert oq.onnx_layout(Model([module("Transformer"), module("Pooling", pooling_mode="mean")])) == (
        "mean",
        False,
    )
    assert oq.onnx_layout(
        Model([module("Transformer"), module("Pooling", pooling_mode="cls"), module("Normalize")])
    ) == ("cls", True)
    assert "pooling mode 'max'" in oq.onnx_layout(
        Model([module("Transformer"), module("Pooling", pooling_mode="max")])
    )
    assert "modules" in oq.onnx_layout(
        Model([module("Transformer"), module("Pooling", pooling_mode="mean"), module("Dense")])
    )
    prompted = Model([module("Transformer"), module("Pooling", pooling_mode="mean")])
    prompted.prompts = {"query": "query: "}
    assert "prompt" in oq.onnx_layout(prompted)

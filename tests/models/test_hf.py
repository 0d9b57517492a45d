"""transformers backbone: pooling arithmetic (fast) and real SmolLM2 weights (slow)."""

import numpy as np
import pytest

from tests.models.conftest import TEXTS
from ucs.embedding import Embedder
from ucs.lm import LanguageModel

torch = pytest.importorskip("torch")

from ucs.models.hf import TransformersBackbone, pool_hidden  # noqa: E402

LABELS = [" card_arrival", " card_linking", " exchange_rate", " lost_or_stolen_card"]
PROMPT = (
    "Query: I still have not got my card\nLabel: card_arrival\n\n"
    "Query: where is the card you sent me?\nLabel:"
)


@pytest.mark.parametrize("pooling", ["mean", "last", "first"])
def test_pooling_is_the_same_under_left_and_right_padding(pooling):
    g = torch.Generator().manual_seed(0)
    lens = [3, 5, 1]
    T, d = 6, 4
    seqs = [torch.randn(n, d, generator=g) for n in lens]
    right = torch.zeros(3, T, d)
    left = torch.zeros(3, T, d)
    mr = torch.zeros(3, T, dtype=torch.long)
    ml = torch.zeros(3, T, dtype=torch.long)
    for i, s in enumerate(seqs):
        right[i, : len(s)] = s
        mr[i, : len(s)] = 1
        left[i, T - len(s) :] = s
        ml[i, T - len(s) :] = 1
    a, b = pool_hidden(right, mr, pooling), pool_hidden(left, ml, pooling)
    torch.testing.assert_close(a, b)
    ref = {
        "mean": torch.stack([s.mean(0) for s in seqs]),
        "last": torch.stack([s[-1] for s in seqs]),
        "first": torch.stack([s[0] for s in seqs]),
    }[pooling]
    torch.testing.assert_close(a, ref)


def test_parameter_validation(tmp_path):
    with pytest.raises(ValueError, match="pooling"):
        TransformersBackbone("x", pooling="max")
    with pytest.raises(ValueError, match="layer"):
        TransformersBackbone("x", layer="middle")
    with pytest.raises(ValueError, match="batch_size"):
        TransformersBackbone("x", batch_size=0)
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"\x00" * 16)
    from ucs.models import InvalidModelFileError

    with pytest.raises(InvalidModelFileError, match="neither a model directory nor a GGUF"):
        TransformersBackbone(bad).load()
    with pytest.raises(FileNotFoundError):
        TransformersBackbone(tmp_path / "nope" / "model").load()


@pytest.mark.slow
def test_embeddings_batching_padding_and_layers(smollm2_hf):
    m = smollm2_hf
    assert isinstance(m, Embedder) and isinstance(m, LanguageModel)
    x = m.embed(TEXTS)
    assert x.shape == (5, 576) and x.dtype == np.float32 and np.isfinite(x).all()
    # a row does not depend on its batch-mates (padding is masked out)
    for i in (0, 1, 4):
        np.testing.assert_allclose(m.embed([TEXTS[i]])[0], x[i], rtol=1e-4, atol=1e-4)
    mid = TransformersBackbone(m.model, layer="mid", pooling="last", normalize=True, max_length=64)
    y = mid.embed(TEXTS[:2])
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(y[0] / np.linalg.norm(y[0]), x[0] / np.linalg.norm(x[0]), atol=1e-2)
    assert mid.identity["layer"] == "mid" and m.identity["layer"] == "last"


@pytest.mark.slow
def test_layer_out_of_range(smollm2_hf):
    bad = TransformersBackbone(smollm2_hf.model, layer=31)
    with pytest.raises(ValueError, match="out of range"):
        bad.load()


@pytest.mark.slow
def test_tree_mask_scoring_equals_full_forward(smollm2_hf):
    m = smollm2_hf
    d = m.score_continuations_detailed(PROMPT, LABELS)
    naive = []
    for c in LABELS:
        p, t = m.tokenize(PROMPT), m.tokenize(c, add_special=False)
        with torch.inference_mode():
            lp = torch.log_softmax(m._model(torch.tensor([p + t])).logits[0].double(), -1)
        naive.append(sum(lp[len(p) - 1 + i, tok].item() for i, tok in enumerate(t)))
    np.testing.assert_allclose(d.logprob, naive, atol=2e-3)
    np.testing.assert_array_equal(d.n_tokens, [len(m.tokenize(c, add_special=False)) for c in LABELS])
    assert np.isfinite(m.score_continuations("word " * 2000, LABELS[:2])).all()  # left-truncated


@pytest.mark.slow
def test_agrees_with_llama_cpp(smollm2_hf, smollm2_llama):
    a, b = smollm2_hf.embed(TEXTS[:2]), smollm2_llama.embed(TEXTS[:2])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert (cos > 0.999).all()
    sa = smollm2_hf.score_continuations(PROMPT, LABELS)
    sb = smollm2_llama.score_continuations(PROMPT, LABELS)
    assert np.abs(sa - sb).max() < 1.0  # Q4_1 activations vs float32
    g = smollm2_hf.generate(["The capital of France is"], max_new_tokens=5, stop=["\n"])
    assert g == smollm2_llama.generate(["The capital of France is"], max_new_tokens=5, stop=["\n"])


@pytest.mark.slow
def test_generation(smollm2_hf):
    m = smollm2_hf
    g = m.generate(["1, 2, 3, 4,", ""], max_new_tokens=4, stop=[","])
    assert "," not in g[0] and "5" in g[0] and isinstance(g[1], str)
    state = torch.random.get_rng_state()
    s = m.generate(["Once upon a time"], max_new_tokens=6, temperature=1.0, seed=4)
    assert s == m.generate(["Once upon a time"], max_new_tokens=6, temperature=1.0, seed=4)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is untouched


def test_a_converted_checkpoint_is_used_only_when_it_matches_its_manifest(tmp_path):
    from ucs.models.hf import MANIFEST, converted_ok, write_manifest
    from ucs.utils.integrity import DamagedFileWarning

    folder = tmp_path / "conv"
    assert not converted_ok(folder, "abc")  # absent: convert, no warning
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "model.safetensors").write_bytes(bytes(range(200)))
    write_manifest(folder, "abc")
    assert converted_ok(folder, "abc")
    for damage in (
        lambda f: (f / "model.safetensors").write_bytes(bytes(range(1, 201))),
        lambda f: (f / MANIFEST).unlink(),
        lambda f: (f / "extra.bin").write_bytes(b"x"),
        lambda f: (f / "config.json").unlink(),
        None,
    ):
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text('{"a": 1}')
        (folder / "model.safetensors").write_bytes(bytes(range(200)))
        write_manifest(folder, "abc")
        if damage is None:  # a checkpoint of another GGUF
            with pytest.warns(DamagedFileWarning, match="moved to"):
                assert not converted_ok(folder, "abd")
            continue
        damage(folder)
        with pytest.warns(DamagedFileWarning, match="does not match its manifest"):
            assert not converted_ok(folder, "abc")
        assert not folder.exists() and any(p.name.startswith("conv.damaged-") for p in tmp_path.iterdir())


@pytest.mark.slow
def test_a_gguf_is_converted_once_and_later_loads_read_the_checkpoint(smollm2_path, monkeypatch, tmp_path):
    pytest.importorskip("gguf")
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path))
    first = TransformersBackbone(str(smollm2_path), dtype="float32").load()
    want = first.score_continuations(PROMPT, LABELS)

    def refuse(*args, **kwargs):
        raise AssertionError("converted the GGUF again")

    monkeypatch.setattr(TransformersBackbone, "_convert_gguf", staticmethod(refuse))
    second = TransformersBackbone(str(smollm2_path), dtype="float32").load()
    np.testing.assert_array_equal(second.score_continuations(PROMPT, LABELS), want)


@pytest.mark.slow
def test_bfloat16_on_a_cpu_without_native_kernels_warns(smollm2_path, monkeypatch):
    import warnings

    import ucs.utils.cpu as cpu
    from ucs.models import load_backbone

    monkeypatch.setattr(cpu, "cpu_details", lambda: {"kernel_flags": ["avx2", "fma"]})
    with pytest.warns(RuntimeWarning, match="without AVX-512-BF16 or AMX"):
        load_backbone("smollm2", engine="transformers", dtype="bfloat16").load()
    monkeypatch.setattr(cpu, "cpu_details", lambda: {"kernel_flags": ["avx2", "avx512_bf16"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        load_backbone("smollm2", engine="transformers", dtype="bfloat16").load()
        load_backbone("smollm2", engine="transformers", dtype="float32").load()


class _StopsAfter:
    """The real backbone, stopped (like Ctrl-C or the end of a session) after ``calls`` embed calls."""

    def __init__(self, model, calls):
        self.model, self.calls, self.n = model, calls, 0
        self.identity, self.dim, self.batch_order = model.identity, model.dim, model.batch_order

    def embed(self, texts):
        if self.n >= self.calls:
            raise KeyboardInterrupt
        self.n += 1
        return self.model.embed(texts)


@pytest.mark.slow
def test_interrupted_pool_pass_resumes_bit_for_bit(smollm2_hf, shared_data, tmp_path):
    """A checkpointed, interrupted and resumed pass over real BANKING77 texts equals one uninterrupted
    call."""
    import csv

    from ucs.embedding import EmbeddingCache

    with open(shared_data / "banking77" / "train.csv", encoding="utf-8") as f:
        texts = [row[0] for row in list(csv.reader(f))[1:61]]
    reference = smollm2_hf.embed(texts)
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path, checkpoint_rows=16).embed(_StopsAfter(smollm2_hf, 2), texts)
    resumed = _StopsAfter(smollm2_hf, 99)
    out = EmbeddingCache(tmp_path, checkpoint_rows=16).embed(resumed, texts)
    assert resumed.n == 2  # parts of 16, 16, 16 and 12 rows (batches of 8): two were left to compute
    assert np.array_equal(out, reference)


@pytest.mark.slow
def test_l2_pass_is_derived_from_the_plain_pass_bit_for_bit(smollm2_hf, shared_data, tmp_path):
    """An ℓ2 backbone over real BANKING77 texts: the cache serves it from the plain pass, equal to its own
    embed."""
    import csv

    from ucs.embedding import EmbeddingCache
    from ucs.testing import check_embedder

    with open(shared_data / "banking77" / "train.csv", encoding="utf-8") as f:
        texts = [row[0] for row in list(csv.reader(f))[1:41]]
    l2 = TransformersBackbone(smollm2_hf.model, normalize=True, max_length=64)
    twin = l2.unnormalized()
    assert twin.load()._model is l2._model is not None  # the twin's first load loads the model once, for both
    assert check_embedder(l2, ["unnormalized"]) == ["unnormalized"]
    direct = l2.embed(texts)
    cache = EmbeddingCache(tmp_path, checkpoint_rows=16)
    assert np.array_equal(cache.embed(l2, texts), direct)
    assert (cache.hits, cache.misses) == (0, 1)  # one model pass: the plain twin's
    plain = TransformersBackbone(smollm2_hf.model, max_length=64)
    assert plain.unnormalized() is None
    assert not np.array_equal(cache.embed(plain, texts), direct)
    assert (cache.hits, cache.misses) == (1, 1)  # the plain matrix is the entry the ℓ2 pass stored
    assert len(list(tmp_path.rglob("*.npy"))) == 1

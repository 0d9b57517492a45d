import json

import numpy as np
import pytest

from ucs.embedding import EmbeddingCache, cached_embed
from ucs.testing.doubles import DummyEmbedder


def test_second_run_does_not_touch_the_model(tmp_path):
    texts = [f"text {i}" for i in range(20)]
    e = DummyEmbedder(dim=5, seed=0)
    first = cached_embed(e, texts, tmp_path)
    e2 = DummyEmbedder(dim=5, seed=0)
    second = cached_embed(e2, texts, tmp_path)
    assert e.n_calls_ == 1 and e2.n_calls_ == 0
    np.testing.assert_array_equal(first, second)
    files = sorted(p.suffix for p in tmp_path.rglob("*") if p.is_file())
    assert files == [".json", ".npy"]


def test_key_depends_on_identity_and_texts(tmp_path):
    cache = EmbeddingCache(tmp_path)
    a, b = DummyEmbedder(seed=0), DummyEmbedder(seed=1)
    assert cache.key_for(a, ["x"]) != cache.key_for(b, ["x"])
    assert cache.key_for(a, ["x"]) != cache.key_for(a, ["y"])
    assert cache.key_for(a, ["x", "y"]) != cache.key_for(a, ["xy"])
    cache.embed(a, ["x"])
    cache.embed(b, ["x"])
    cache.embed(a, ["x"])
    assert (cache.hits, cache.misses) == (1, 2)


def test_corrupt_entry_is_recomputed(tmp_path):
    cache = EmbeddingCache(tmp_path)
    e = DummyEmbedder(seed=0)
    ref = cache.embed(e, ["a", "b"])
    npy = next(tmp_path.rglob("*.npy"))
    arr = np.load(npy)
    arr[0, 0] += 1.0
    np.save(npy, arr)
    out = cache.embed(e, ["a", "b"])
    assert e.n_calls_ == 2
    np.testing.assert_array_equal(out, ref)
    man = next(tmp_path.rglob("*.json"))
    man.write_text("{not json")
    cache.embed(e, ["a", "b"])
    assert e.n_calls_ == 3
    assert json.loads(man.read_text())["shape"] == [2, 16]


def test_pickled_object_array_is_never_loaded(tmp_path):
    cache = EmbeddingCache(tmp_path)
    e = DummyEmbedder(seed=0)
    cache.embed(e, ["a"])
    npy = next(tmp_path.rglob("*.npy"))
    np.save(npy, np.array([object()], dtype=object), allow_pickle=True)
    cache.embed(e, ["a"])
    assert e.n_calls_ == 2


def test_wrong_row_count_raises(tmp_path):
    class Bad(DummyEmbedder):
        def embed(self, texts):
            return super().embed(list(texts) + ["extra"])

    with pytest.raises(ValueError, match="rows"):
        cached_embed(Bad(), ["a"], tmp_path)


class _Interrupted(DummyEmbedder):
    """Stops (like Ctrl-C or the end of a session) after ``calls`` embed calls."""

    def __init__(self, calls, **kw):
        super().__init__(**kw)
        self.calls = calls

    def embed(self, texts):
        if self.n_calls_ >= self.calls:
            raise KeyboardInterrupt
        return super().embed(texts)


TEXTS = [("word " * (1 + (5 * i) % 17)) + str(i) for i in range(50)]


def test_long_pass_is_checkpointed_and_equals_one_call(tmp_path):
    e = DummyEmbedder(dim=6, batch_size=4)
    out = EmbeddingCache(tmp_path, checkpoint_rows=10).embed(e, TEXTS)
    np.testing.assert_array_equal(out, DummyEmbedder(dim=6).embed(TEXTS))
    assert e.n_calls_ == 5  # parts of 12, 12, 12, 12 and 2 rows (whole batches of 4)
    assert not list(tmp_path.rglob("*.parts")), "the parts outlive the finished entry"


def test_interrupted_pass_resumes_from_its_parts(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path, checkpoint_rows=10).embed(_Interrupted(2, dim=6, batch_size=4), TEXTS)
    parts = next(tmp_path.rglob("*.parts"))
    assert len(list(parts.glob("*.npy"))) == 2
    e = DummyEmbedder(dim=6, batch_size=4)
    out = EmbeddingCache(tmp_path, checkpoint_rows=10).embed(e, TEXTS)
    assert e.n_texts_embedded_ == len(TEXTS) - 24  # the two finished parts are read, not recomputed
    np.testing.assert_array_equal(out, DummyEmbedder(dim=6).embed(TEXTS))
    assert not parts.exists()


def _interrupt_after_two_parts(root):
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(root, checkpoint_rows=10).embed(_Interrupted(2, dim=6, batch_size=4), TEXTS)
    return next(root.rglob("*.parts"))


def test_damaged_part_is_recomputed(tmp_path):
    first = _interrupt_after_two_parts(tmp_path) / "00000.npy"
    arr = np.load(first)
    arr[0, 0] += 1.0
    np.save(first, arr)
    e = DummyEmbedder(dim=6, batch_size=4)
    out = EmbeddingCache(tmp_path, checkpoint_rows=10).embed(e, TEXTS)
    assert e.n_texts_embedded_ == len(TEXTS) - 12  # part 1 is read, the damaged part 0 recomputed
    np.testing.assert_array_equal(out, DummyEmbedder(dim=6).embed(TEXTS))


def test_parts_of_other_batches_are_not_used(tmp_path):
    _interrupt_after_two_parts(tmp_path)
    e = DummyEmbedder(dim=6, batch_size=5)  # other batches, so other rows in each part
    out = EmbeddingCache(tmp_path, checkpoint_rows=10).embed(e, TEXTS)
    assert e.n_texts_embedded_ == len(TEXTS)
    np.testing.assert_array_equal(out, DummyEmbedder(dim=6).embed(TEXTS))


def test_short_pass_is_one_call(tmp_path):
    e = DummyEmbedder(dim=6, batch_size=4)
    EmbeddingCache(tmp_path, checkpoint_rows=len(TEXTS)).embed(e, TEXTS)
    assert e.n_calls_ == 1 and not list(tmp_path.rglob("*.parts"))


def test_embedder_without_batch_order_is_one_call(tmp_path):
    class NoOrder(DummyEmbedder):
        batch_order = None

    e = NoOrder(dim=6, batch_size=4)
    EmbeddingCache(tmp_path, checkpoint_rows=10).embed(e, TEXTS)
    assert e.n_calls_ == 1


def test_batch_order_must_partition_the_rows(tmp_path):
    class Skips(DummyEmbedder):
        def batch_order(self, texts):
            return super().batch_order(texts)[1:]

    with pytest.raises(ValueError, match="partition"):
        EmbeddingCache(tmp_path, checkpoint_rows=10).embed(Skips(batch_size=4), TEXTS)


@pytest.mark.parametrize("rows", [0, -1, 2.5, "10"])
def test_checkpoint_rows_must_be_a_positive_integer(tmp_path, rows):
    with pytest.raises(ValueError, match="checkpoint_rows"):
        EmbeddingCache(tmp_path, checkpoint_rows=rows)


class _L2WithTwin(DummyEmbedder):
    """An ℓ2 embedder that declares its unnormalised twin, as the transformers backbone does."""

    def unnormalized(self):
        return DummyEmbedder(dim=self._dim, seed=self.seed, normalize=False) if self.normalize else None


def test_l2_embedder_is_served_from_its_unnormalised_twin(tmp_path):
    texts = [f"text {i}" for i in range(20)]
    cache = EmbeddingCache(tmp_path)
    plain = cache.embed(DummyEmbedder(dim=5, seed=0, normalize=False), texts)
    l2 = _L2WithTwin(dim=5, seed=0, normalize=True)
    got = cache.embed(l2, texts)
    assert l2.n_calls_ == 0 and (cache.hits, cache.misses) == (1, 1)  # the plain entry, no model call
    assert np.array_equal(got, DummyEmbedder(dim=5, seed=0, normalize=True).embed(texts))
    assert not np.array_equal(got, plain)
    assert len(list(tmp_path.rglob("*.npy"))) == 1  # the ℓ2 matrix is not stored a second time
    # a twin with the same identity is not a twin (no recursion)
    same = _L2WithTwin(dim=5, seed=0, normalize=False)
    assert np.array_equal(cache.embed(same, texts), plain)

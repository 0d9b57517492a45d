import numpy as np
from sklearn.metrics import adjusted_rand_score

from ucs.distributed.synthetic import PlantedEmbedder, make_planted_texts


def test_rows_depend_only_on_their_text():
    texts, topics = make_planted_texts(500, 20, random_state=1)
    e = PlantedEmbedder(dim=32, seed=2)
    full = e.embed(texts)
    assert full.shape == (500, 32) and full.dtype == np.float32
    np.testing.assert_array_equal(np.concatenate([e.embed(texts[:123]), e.embed(texts[123:])]), full)
    np.testing.assert_array_equal(PlantedEmbedder(dim=32, seed=2).embed(texts[::-1]), full[::-1])
    assert not np.array_equal(PlantedEmbedder(dim=32, seed=3).embed(texts), full)
    assert e.identity != PlantedEmbedder(dim=32, seed=3).identity


def test_planted_topics_are_recoverable():
    from sklearn.cluster import KMeans

    texts, topics = make_planted_texts(2000, 10, zipf_a=0.5, random_state=0)
    E = PlantedEmbedder(dim=64, noise=0.6).embed(texts)
    pred = KMeans(10, n_init=4, random_state=0).fit_predict(E)
    assert adjusted_rand_score(topics, pred) > 0.9
    counts = np.bincount(topics, minlength=10)
    assert counts[0] > counts[-1]  # Zipf sizes


def test_planted_texts_built_shard_by_shard_equal_the_whole_pool():
    from ucs.distributed.synthetic import make_planted_texts, planted_texts, planted_topics

    texts, topics = make_planted_texts(1000, n_clusters=30, random_state=3)
    assert np.array_equal(planted_topics(1000, n_clusters=30, random_state=3), topics)
    assert planted_texts(topics[:400]) + planted_texts(topics[400:], start=400) == texts

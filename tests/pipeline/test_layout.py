"""ArtifactLayout: every path of a pipeline's caches, stores and run folder, in one place."""

from __future__ import annotations

import numpy as np

from ucs.evaluation.runner import selection_path
from ucs.pipeline.layout import ArtifactLayout


def test_roots_default_to_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "c"))
    lay = ArtifactLayout()
    assert lay.cache_dir == tmp_path / "c" and lay.store_dir == lay.cache_dir and lay.out_dir is None
    assert (
        lay.answers_dir == tmp_path / "c" / "answers" and lay.embeddings_dir == tmp_path / "c" / "embeddings"
    )
    assert lay.coverage_file("dpp+ucs", 42, 10) is None and list(lay.runner_selections("dpp", 42)) == []


def test_cluster_folder_is_keyed_by_the_spec_content(tmp_path):
    lay = ArtifactLayout(tmp_path)
    a = lay.cluster_dir({"emb": "x", "params": {"q": 0.01, "k": 20}})
    assert a == lay.cluster_dir({"params": {"k": 20, "q": 0.01}, "emb": "x"}) != lay.cluster_dir({"emb": "y"})
    assert lay.cluster_labels(a, 0.01).name == "labels_q0.01.npy" and lay.cluster_meta(a).name == "meta.json"


def test_run_folder_files_follow_the_file_name_rules(tmp_path):
    lay = ArtifactLayout(tmp_path / "c", tmp_path / "s", tmp_path / "o")
    assert lay.scores_dir == tmp_path / "s" / "scores"
    assert (
        lay.coverage_file("dpp+ucs", 42, 10)
        == tmp_path / "o" / "pipeline" / "coverage" / "dpp_plus_ucs__seed42__10q.json"
    )
    queries = ["a", "b", "c"]
    p = selection_path(tmp_path / "o", "dpp+ucs", 42, queries)
    p.parent.mkdir(parents=True)
    np.save(p, np.zeros((3, 2), dtype=np.int64))
    assert list(lay.runner_selections("dpp+ucs", 42)) == [(3, p)]
    assert list(lay.runner_selections("dpp", 42)) == []


def test_coverage_log_reads_back_what_it_wrote_and_falls_back_to_the_runner(tmp_path):
    from types import SimpleNamespace

    from ucs.pipeline.coverage_log import CoverageLog

    calls = []

    def coverage(method, seed, indices):
        calls.append(np.asarray(indices).shape)
        return {"unique_clusters": np.full(len(indices), 2.0), "phi": np.full(len(indices), 1.5)}

    lay = ArtifactLayout(tmp_path / "c", None, tmp_path / "o")
    log = CoverageLog(coverage, lambda: 10)
    sel = SimpleNamespace(indices=np.array([[0, 1], [2, 3]]), to_json=lambda: "{}")
    log.record(lay, "dpp", 42, sel, 2)
    again = CoverageLog(coverage, lambda: 10)  # a new process: reads the file
    assert again.table(lay, ["dpp"], [42], 2) == log.table(lay, ["dpp"], [42], 2)
    p = selection_path(tmp_path / "o", "votek", 42, ["a", "b", "c"])
    p.parent.mkdir(parents=True, exist_ok=True)
    np.save(p, np.array([[4, 5]], dtype=np.int64))
    table = again.table(lay, ["votek"], [42], 2)  # never selected here: from the runner's cached selection
    assert table["votek"]["42"]["unique_clusters"] == 2.0 and calls[-1] == (1, 2)
    assert again.table(lay, ["topk"], [42], 2) == {}

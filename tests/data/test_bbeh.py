from __future__ import annotations

import numpy as np
import pytest

from ucs.data import MissingDataError, load_bbeh, load_dataset

TASKS = {"causal_understanding": 3, "object_properties": 46, "shuffled_objects": 7}


@pytest.mark.slow
@pytest.mark.parametrize("task, n_answers", TASKS.items())
def test_bbeh_paper_split_is_80_20(shared_data, task, n_answers):
    ds = load_dataset(task, shared_data)
    assert ds.name == f"bbeh_{task}" and ds.task == "reasoning"
    assert (len(ds.pool), len(ds.test)) == (160, 40)
    assert ds.n_labels == n_answers
    assert len(set(ds.pool.texts) | set(ds.test.texts)) == 200
    assert not set(ds.pool.texts) & set(ds.test.texts)


@pytest.mark.slow
def test_bbeh_authors_split_and_seed(shared_data):
    a = load_bbeh("bbeh_shuffled_objects", shared_data, pool_fraction=2 / 3)
    assert (len(a.pool), len(a.test)) == (133, 67)
    b = load_bbeh("shuffled_objects", shared_data, split_seed=42)
    c = load_bbeh("shuffled_objects", shared_data, split_seed=42)
    d = load_bbeh("shuffled_objects", shared_data, split_seed=7)
    assert b.test.texts == c.test.texts
    assert b.test.texts != d.test.texts
    assert b.info["test_source_indices"] == sorted(b.info["test_source_indices"])
    # the split partitions the 200 examples
    idx = np.concatenate([b.info["pool_indices"], b.info["test_source_indices"]])
    assert sorted(idx.tolist()) == list(range(200))


def test_bbeh_errors(tmp_path):
    with pytest.raises(ValueError, match="task must be one of"):
        load_bbeh("word_sorting", tmp_path)
    with pytest.raises(MissingDataError, match="bbeh_causal_understanding"):
        load_bbeh("causal_understanding", tmp_path)
    p = tmp_path / "bbeh" / "causal_understanding"
    p.mkdir(parents=True)
    (p / "task.json").write_text('{"examples": [{"input": "q", "target": 3}]}')
    with pytest.raises(ValueError, match=r"examples\[0\]"):
        load_bbeh("causal_understanding", tmp_path)


def test_bbeh_alternative_layout(tmp_path):
    p = tmp_path / "bbeh" / "causal_understanding"
    p.mkdir(parents=True)
    import json

    ex = [{"input": f"question {i}", "target": "Yes" if i % 2 else "No"} for i in range(10)]
    (p / "task.json").write_text(json.dumps({"examples": ex, "canary": "x"}))
    ds = load_bbeh("causal_understanding", tmp_path)
    assert (len(ds.pool), len(ds.test)) == (8, 2)
    assert ds.label_names == ("No", "Yes")

import pytest

from ucs.pipeline import PipelineConfig
from ucs.pipeline.presets import COMMON, TUNED_DBSCAN_Q, TUNED_LAMBDA, get_preset, tuned


def test_tables_are_complete():
    assert len(TUNED_DBSCAN_Q) == 27 and len(TUNED_LAMBDA) == 27


@pytest.mark.parametrize(
    "key, q, lam",
    [
        (("qwen2.5-7b-it", "mdl", "banking77"), 0.15, 0.01),
        (("qwen2.5-7b-it", "votek", "hwu64"), 0.01, 5.0),
        (("gemma-2-9b-it", "votek", "hwu64"), 0.5, 0.05),
        (("gemma-2-9b-it", "dpp", "clinc150"), 0.10, 0.10),
        (("llama-3.2-3b-it", "dpp", "banking77"), 0.01, 0.50),
    ],
)
def test_published_values(key, q, lam):
    assert tuned(*key) == {"dbscan_q": q, "lam": lam}
    assert tuned(key[0], key[1] + "+ucs", key[2]) == {"dbscan_q": q, "lam": lam}


def test_untuned_combination_falls_back_to_common():
    assert tuned("smollm2", "dpp", "banking77") == {
        "dbscan_q": COMMON["clusterer"]["dbscan_q"],
        "lam": COMMON["prior"]["lam"],
    }
    with pytest.raises(ValueError, match="selector"):
        tuned("smollm2", "topk", "banking77")


def test_presets():
    assert get_preset("paper").settings["clusterer"]["coding"] == "omp"
    assert get_preset("default").settings == {}  # the default preset is PipelineConfig() itself
    assert PipelineConfig().clusterer["coding"] == "ridge"
    p = get_preset("cpu").with_overrides(test_size=20, clusterer={"n_atoms": 8})
    assert p.settings["test_size"] == 20 and p.settings["clusterer"] == {"n_atoms": 8}
    with pytest.raises(ValueError, match="has no setting 'nope'"):
        PipelineConfig().with_settings(p.with_overrides(nope=1).settings)
    with pytest.raises(ValueError, match="preset must be one of"):
        get_preset("gpu")

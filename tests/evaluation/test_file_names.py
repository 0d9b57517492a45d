"""The two file-name rules for method names, on the names the pipeline uses."""

from ucs.evaluation.file_names import method_file_stem, selection_file_stem
from ucs.pipeline.config import METHODS


def test_method_file_stems_of_every_pipeline_method():
    assert method_file_stem("dpp+ucs") == "dpp_plus_ucs" and method_file_stem("votek") == "votek"
    assert selection_file_stem("dpp+ucs") == "dpp_ucs" and selection_file_stem("a/b c") == "a_b_c"
    for rule in (method_file_stem, selection_file_stem):
        stems = [rule(m) for m in METHODS]
        assert len(set(stems)) == len(METHODS)  # no two methods share a file
        assert all(s.replace("_", "").isalnum() for s in stems)

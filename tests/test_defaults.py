"""One definition of each default: the known default literals appear in exactly one module of ``src/ucs``.

Signature defaults, dataclass fields, module constants, keyword arguments and command-line option defaults
are searched (``name = value``, ``name: type = value``, ``name: type = typer.Option(value``); docstrings
(``name : int, default=128``) and the paper's tables in :mod:`ucs.pipeline.presets` (``"name": value``)
are not code restatements and do not match.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "ucs"

#: (names a setting goes by, its default literal).
DEFAULTS = [
    (("dbscan_q",), r"0\.01"),
    (("pca_dim",), r"128"),
    (("n_atoms", "dict_n_atoms"), r"64"),
    (("dbscan_k",), r"20"),
    (("ridge_alpha", "dict_ridge_alpha"), r"10\.0"),
    (("lam",), r"0\.1"),
    (("hdbscan_min_cluster_size",), r"5"),
    (("backend",), r'"fast"'),
    (("knn",), r'"exact"'),
    (("fit_sample_size", "fit_sample"), r"100_000"),
    (("shard_size", "text_shard_size"), r"10_000"),
    (("shard_size", "row_shard_size"), r"100_000"),
    (("layer",), r'"last"'),
    (("pooling",), r'"mean"'),
]
#: Lists of allowed values, written out.
TUPLES = {
    "score designs": r"\(\s*\"full\",\s*\"seen_only\",\s*\"unseen_only\",\s*\"ratio\"\s*\)",
    "corpus priors": r"\(\s*\"good_turing\",\s*\"spectrum_rarity\",\s*\"inverse_size\"\s*\)",
}
_TYPE = r"(?:\s*:\s*[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?)?"


def _pattern(names: tuple, literal: str) -> re.Pattern:
    name = "|".join(names)
    value = rf"(?:typer\.Option\(\s*)?{literal}(?![\w.])"
    return re.compile(rf"\b(?:{name})\b{_TYPE}\s*=\s*{value}", re.IGNORECASE)


def _modules(pattern: re.Pattern) -> list:
    return sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("names,literal", DEFAULTS, ids=[n[0] for n, _ in DEFAULTS])
def test_each_default_literal_is_written_in_one_module(names, literal):
    found = _modules(_pattern(names, literal))
    assert found == ["defaults.py"], (
        f"{names[0]} = {literal} is restated in {found}; import it from ucs.defaults"
    )


@pytest.mark.parametrize("what", sorted(TUPLES))
def test_each_list_of_allowed_values_is_written_once(what):
    found = _modules(re.compile(TUPLES[what]))
    assert len(found) == 1, f"the {what} are written out in {found}; import the one list"


def test_the_search_finds_a_restatement():
    """The patterns catch the forms they are meant to catch (else the tests above could not fail)."""
    pat = _pattern(("dbscan_q",), r"0\.01")
    for line in (
        "dbscan_q: float = 0.01,",
        "dbscan_q=0.01",
        "DBSCAN_Q = 0.01",
        'q: float = typer.Option(0.01, "--q")'.replace("q:", "dbscan_q:"),
    ):
        assert pat.search(line), line
    for line in ("dbscan_q : float in (0, 1), default=0.01", '"dbscan_q": 0.01,', "dbscan_q=0.015"):
        assert not pat.search(line), line

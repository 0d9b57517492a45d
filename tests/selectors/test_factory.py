"""The one selector factory: method names resolve through the registry to the classes' own parameters."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors import (
    BSRSelector,
    CoverSelector,
    DPPSelector,
    LabelAwareSelector,
    MDLSelector,
    MMRSelector,
    RandomSelector,
    TopKSelector,
    UCSPrior,
    VoteKSelector,
)
from ucs.selectors.factory import (
    BASE_SELECTORS,
    METHODS,
    NO_UCS_FORM,
    canonical_method,
    has_ucs_form,
    make_selector,
    parse_method,
    selector_class,
)
from ucs.testing import DummyLM


def test_every_base_name_is_a_registered_class_declaring_it():
    classes = {
        "random": RandomSelector,
        "topk": TopKSelector,
        "dpp": DPPSelector,
        "mdl": MDLSelector,
        "votek": VoteKSelector,
        "cover": CoverSelector,
        "mmr": MMRSelector,
        "labelaware": LabelAwareSelector,
        "bsr": BSRSelector,
    }
    assert set(BASE_SELECTORS) == set(classes)
    for name, cls in classes.items():
        assert selector_class(name) is cls


def test_method_vocabulary_follows_the_classes():
    assert NO_UCS_FORM == ("random", "cover", "mmr", "labelaware", "bsr")
    assert METHODS == (
        "random",
        "topk",
        "topk+ucs",
        "dpp",
        "dpp+ucs",
        "mdl",
        "mdl+ucs",
        "votek",
        "votek+ucs",
        "cover",
        "mmr",
        "labelaware",
        "bsr",
    )
    assert [has_ucs_form(b) for b in BASE_SELECTORS] == [
        False,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert parse_method(" DPP_sgt ") == ("dpp", True) and canonical_method("votek-ucs") == "votek+ucs"
    for bad in ("cover+ucs", "random_ucs", "kmeans", "", None):
        with pytest.raises(ValueError, match="method"):
            parse_method(bad)


def test_a_subclass_inheriting_a_name_does_not_take_it_over():
    class LoggingDPP(DPPSelector):  # registers itself, inherits name "dpp"
        pass

    assert selector_class("dpp") is DPPSelector
    assert type(make_selector("dpp")) is DPPSelector


def test_make_selector_equals_the_hand_built_selector():
    rng = np.random.default_rng(0)
    pool, queries, ids = rng.normal(size=(50, 6)), rng.normal(size=(4, 6)), rng.integers(0, 7, 50)
    prior = UCSPrior(ids, lam=0.5)
    pairs = [
        (
            make_selector("dpp+ucs", prior=prior, candidate_num=20, scale_factor=0.2),
            DPPSelector(candidate_num=20, scale_factor=0.2, prior=prior),
        ),
        (make_selector("votek", random_state=7, k=4), VoteKSelector(k=4, random_state=7)),
        (make_selector("random", random_state=3), RandomSelector(random_state=3)),
        (make_selector("topk", random_state=3), TopKSelector()),  # deterministic: the seed is not a parameter
    ]
    for built, want in pairs:
        assert repr(built) == repr(want)
        a = built.fit(pool, cluster_ids=ids).select(queries, 5).indices
        b = want.fit(pool, cluster_ids=ids).select(queries, 5).indices
        np.testing.assert_array_equal(a, b)
    mdl = make_selector("mdl", scorer=DummyLM(seed=1), label_set=["a", "b"], random_state=9, select_time=2)
    assert isinstance(mdl, MDLSelector) and mdl.random_state == 9 and mdl.select_time == 2


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_selector("dpp+ucs"), "prior=UCSPrior"),
        (lambda: make_selector("cover", prior=UCSPrior(np.zeros(3, int))), "no UCS form"),
        (lambda: make_selector("dpp", k=3), "DPPSelector has no parameter 'k'"),
        (lambda: make_selector("knn"), "unknown method 'knn'"),
    ],
)
def test_make_selector_refuses_with_the_fix(call, match):
    with pytest.raises(ValueError, match=match):
        call()

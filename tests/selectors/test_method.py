"""A method is parsed once into a MethodSpec; the prior is built in one place; λ and MMR's λ are checked
once."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ucs.pipeline import PipelineConfig
from ucs.selectors import BSRSelector, DPPSelector, MDLSelector, MethodSpec, UCSPrior, VoteKSelector
from ucs.selectors.factory import (
    BASE_SELECTORS,
    METHODS,
    NO_UCS_FORM,
    canonical_method,
    make_selector,
    parse_method,
    selector_class,
)
from ucs.selectors.mmr import check_lambda_mult
from ucs.selectors.prior import LAM_MAX, check_lam


@pytest.mark.parametrize(
    "name,base,ucs",
    [
        ("dpp", "dpp", False),
        ("dpp+ucs", "dpp", True),
        (" DPP_sgt ", "dpp", True),
        ("votek-ucs", "votek", True),
        ("MDL_UCS", "mdl", True),
        ("TopK", "topk", False),
        ("cover", "cover", False),
        ("bsr", "bsr", False),
    ],
)
def test_every_accepted_spelling_parses_to_its_canonical_spec(name, base, ucs):
    spec = MethodSpec.parse(name)
    assert (spec.base, spec.ucs) == (base, ucs) == parse_method(name)
    assert str(spec) == spec.name == canonical_method(name) == (f"{base}+ucs" if ucs else base)


def test_every_method_round_trips_through_its_name():
    for m in METHODS:
        spec = MethodSpec.parse(m)
        assert str(spec) == m and MethodSpec.parse(str(spec)) == spec == MethodSpec(spec.base, spec.ucs)
        assert MethodSpec.parse(spec) is spec  # a parsed method passes through
        assert pickle.loads(pickle.dumps(spec)) == spec and hash(spec) == hash(MethodSpec.parse(m.upper()))
    assert {MethodSpec.parse(m).base for m in METHODS if MethodSpec.parse(m).ucs}.isdisjoint(NO_UCS_FORM)


@pytest.mark.parametrize(
    "bad,message",
    [
        ("cover+ucs", "unknown method 'cover\\+ucs'; choose from random, topk"),
        ("random_ucs", "unknown method 'random_ucs'"),
        ("kmeans", "unknown method 'kmeans'"),
        ("", "a method name must be a non-empty string such as 'dpp\\+ucs'; got ''"),
        ("  ", "non-empty string"),
        (None, "non-empty string.*None"),
        (3, "non-empty string.*3"),
    ],
)
def test_an_unknown_method_is_refused_by_name_the_same_way_everywhere(bad, message):
    with pytest.raises(ValueError, match=message):
        MethodSpec.parse(bad)
    with pytest.raises(ValueError, match=message):
        parse_method(bad)
    if not (isinstance(bad, str) and not bad.strip()):  # a list's blank entries are skipped
        with pytest.raises(ValueError, match="selector.method: .*" + message):
            PipelineConfig(selector={"method": ["dpp", bad]})


def test_a_spec_is_checked_when_built_directly():
    for base, ucs in (("cover", True), ("nope", False), ("mmr", True)):
        with pytest.raises(ValueError, match="unknown method"):
            MethodSpec(base, ucs)
    with pytest.raises(ValueError, match="ucs must be True or False"):
        MethodSpec("dpp", 1)


def test_a_spec_reads_its_selectors_declared_needs():
    mdl, bsr, votek = MethodSpec.parse("mdl+ucs"), MethodSpec.parse("bsr"), MethodSpec.parse("votek+ucs")
    assert mdl.selector_class is MDLSelector and mdl.needs_scorer and mdl.needs_query_texts
    assert bsr.selector_class is BSRSelector and bsr.needs_token_embedder and bsr.stored_state == "bsr_tokens"
    assert votek.selector_class is VoteKSelector and not votek.query_dependent and not votek.needs_scorer
    assert MethodSpec.parse("dpp").param_names() == tuple(DPPSelector._param_names())


def test_make_selector_takes_a_spec_as_it_takes_its_name():
    ids = np.arange(30) % 4
    a = make_selector(MethodSpec("dpp", True), prior=UCSPrior(ids), candidate_num=10)
    b = make_selector("DPP_sgt", prior=UCSPrior(ids), candidate_num=10)
    assert repr(a) == repr(b)
    with pytest.raises(ValueError, match="method 'dpp\\+ucs' is a UCS form"):
        make_selector(MethodSpec("dpp", True))


def test_the_configuration_parses_its_methods_once_and_keeps_their_names():
    cfg = PipelineConfig(
        selector={"method": ["DPP_sgt", "votek", "dpp+ucs"]}, lam_by_selector={"votek_ucs": 2}
    )
    assert cfg.selector["method"] == ("dpp+ucs", "votek")  # the results' keys: canonical strings
    assert cfg.method_specs == (MethodSpec("dpp", True), MethodSpec("votek", False))
    assert cfg.lam_for(MethodSpec("votek", True)) == cfg.lam_for("votek") == 2.0
    assert cfg.prior_params(MethodSpec("votek", True))["lam"] == 2.0


# ------------------------------------------------------------------ the prior's one builder
def test_build_layers_params_then_the_options_a_user_set():
    ids = np.array([0, 0, 1, 2])
    prior = UCSPrior.build(ids, {"lam": 0.5, "estimator": "binomial", "t": 2.0}, lam=3.0, design=None)
    assert prior.cluster_ids is ids and prior.lam == 3.0 and prior.estimator == "binomial"
    assert prior.design == UCSPrior(ids).design and prior.estimator_params == {"t": 2.0}
    # a saved config rebuilds the same prior; a None inside params is a value, not "unset"
    again = UCSPrior.build(None, {**prior.config(), "corpus_smoothing": None})
    assert np.array_equal(again.cluster_ids, ids) and again.corpus_smoothing is None and again.lam == 3.0
    assert repr(prior.clone(lam=0.0)) == repr(UCSPrior(ids, estimator="binomial", lam=0.0, t=2.0))
    with pytest.raises(TypeError):
        UCSPrior.build(None, {"lam": 1.0})  # no cluster ids anywhere


def test_build_stores_and_validate_checks_once():
    prior = UCSPrior.build(np.arange(4), lam=-1.0)  # like the constructor: stored, checked at fit
    with pytest.raises(ValueError, match="lam must be >= 0"):
        prior.validate()


# ------------------------------------------------------------------ one check of each weight
@pytest.mark.parametrize(
    "lam,message",
    [
        (-0.5, "must be >= 0"),
        (float("nan"), "must be a finite number"),
        (float("inf"), "must be a finite number"),
        (True, "must be a finite number"),
        ("1", "must be a finite number"),
        (LAM_MAX * 2, "must be <= 1e\\+06"),
    ],
)
def test_lambda_has_one_check_that_names_the_setting(lam, message):
    with pytest.raises(ValueError, match="^lam " + message):
        check_lam(lam)
    with pytest.raises(ValueError, match="^lam " + message):
        UCSPrior(np.arange(3), lam=lam).validate()
    with pytest.raises(ValueError, match="^prior.lam " + message):
        PipelineConfig(prior={"lam": lam})
    check_lam(0.0)
    check_lam(LAM_MAX)


def test_a_per_selector_lambda_and_a_tuning_grid_are_checked_by_the_same_rule():
    from ucs.experiments.tune import _check_grid

    with pytest.raises(ValueError, match=r"^lam_by_selector\['votek'\] must be <= 1e\+06"):
        PipelineConfig(lam_by_selector={"votek+ucs": LAM_MAX * 10})
    cfg = PipelineConfig(selector={"method": ["dpp", "dpp+ucs"]})
    assert _check_grid(cfg, None, [0.1], [0.0, 2.0]) == ((MethodSpec("dpp", True),), (0.1,), (0.0, 2.0))
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="^each λ of lam_grid must be"):
            _check_grid(cfg, None, [0.1], [0.5, bad])


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_mmr_lambda_has_one_check_that_names_the_setting(value):
    with pytest.raises(ValueError, match=r"^lambda_mult must be in \[0, 1\] \(a real number\); got"):
        check_lambda_mult(value)
    with pytest.raises(ValueError, match=r"^lambda_mult must be in \[0, 1\] \(a real number\); got"):
        make_selector("mmr", lambda_mult=value).fit(np.eye(4))
    with pytest.raises(
        ValueError, match=r"^selector.params.mmr.lambda_mult must be in \[0, 1\] \(a real number\); got"
    ):
        PipelineConfig(selector={"params": {"mmr": {"lambda_mult": value}}})
    for ok in (0, 0.5, 1.0):
        check_lambda_mult(ok)


#: (selector, parameter, bad value): each setting the pipeline's configuration carries for a selector.
_BAD_SETTINGS = [
    ("topk", "candidate_num", 0),
    ("topk", "floor", -1),
    ("mmr", "fetch_k", 0),
    ("mmr", "lambda_mult", 2.0),
    ("labelaware", "mode", "sideways"),
    ("labelaware", "max_per_label", 0),
    ("dpp", "scale_factor", 0.0),
    ("dpp", "candidate_num", 1.5),
    ("votek", "k", 0),
    ("mdl", "select_time", 0),
    ("mdl", "candidate_num", -3),
    ("bsr", "candidate_num", 0),
]


@pytest.mark.parametrize("base, name, value", _BAD_SETTINGS)
def test_a_selector_setting_is_checked_once_by_its_class(base, name, value):
    """The configuration runs the class's own check (``Selector.check_params``), not one of its own: the
    message is the class's, prefixed with the key the user wrote, and fit refuses the same value."""
    cls = selector_class(base)
    with pytest.raises(ValueError) as direct:
        cls.check_params({name: value})
    assert str(direct.value).startswith(f"{name} ")
    with pytest.raises(ValueError) as configured:
        PipelineConfig(selector={"params": {base: {name: value}}})
    assert str(configured.value) == f"selector.params.{base}.{direct.value}"


def test_check_params_accepts_the_defaults_and_leaves_supplied_objects_to_fit():
    for base in BASE_SELECTORS:
        selector_class(base).check_params({})
    selector_class("bsr").check_params({"candidate_num": None})  # Set-BSR: all candidates
    with pytest.raises(ValueError, match="^scorer must provide score_continuations"):
        make_selector("mdl").fit(np.eye(4), labels=list("abab"), texts=list("wxyz"))


def test_cover_declares_that_it_needs_cluster_ids():
    assert [b for b in BASE_SELECTORS if selector_class(b).needs_cluster_ids] == ["cover"]

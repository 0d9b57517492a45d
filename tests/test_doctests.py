"""The Examples sections of the public classes run as doctests, and every listed class has one.

Each Example is tiny and deterministic (seeded numpy arrays; the test doubles of :mod:`ucs.testing` where an
embedder or a language model is needed), so a docstring that drifts from the code fails here.
"""

from __future__ import annotations

import doctest
import importlib
import re

import pytest

#: module -> the public names whose docstring must hold a runnable ``Examples`` section.
DOCUMENTED = {
    "ucs.index.index": ("SelectorIndex",),
    "ucs.clustering.estimator": ("LatentClusterer",),
    "ucs.estimators.coverage": ("UnseenCoverage",),
    "ucs.estimators.spectrum": ("spectrum",),
    "ucs.estimators.unseen": ("make_estimator",),
    "ucs.selectors.topk": ("TopKSelector",),
    "ucs.selectors.mmr": ("MMRSelector",),
    "ucs.selectors.dpp": ("DPPSelector",),
    "ucs.selectors.votek": ("VoteKSelector",),
    "ucs.selectors.mdl": ("MDLSelector",),
    "ucs.selectors.bsr": ("BSRSelector",),
    "ucs.selectors.random": ("RandomSelector",),
    "ucs.selectors.labelaware": ("LabelAwareSelector",),
    "ucs.selectors.cover": ("CoverSelector",),
    "ucs.experiments.compare": ("compare",),
}

_EXAMPLES = re.compile(r"^\s*Examples\n\s*--------\n(?:.*\n)*?\s*>>> ", re.M)


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_the_listed_names_have_an_examples_section(module):
    mod = importlib.import_module(module)
    missing = [name for name in DOCUMENTED[module] if not _EXAMPLES.search(getattr(mod, name).__doc__ or "")]
    assert not missing, f"{module}: no numpy-style 'Examples' section with a '>>>' line in {missing}"


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_the_examples_run(module, tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))  # the index's embedding cache stays in tmp
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    tests = [t for t in finder.find(mod, module) if t.examples]
    assert tests, f"{module} has no doctest"
    for test in tests:
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} doctest examples of {module} failed (output above)"

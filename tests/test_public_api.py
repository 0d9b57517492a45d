"""``import ucs`` exposes the main classes and functions, lazily."""

from __future__ import annotations

import subprocess
import sys

import ucs


def test_every_public_name_resolves_to_its_definition():
    for name in ucs.__all__:
        value = getattr(ucs, name)
        assert value is not None, name
        if name != "__version__":
            assert getattr(value, "__name__", name) == name  # the object itself, not a module or an alias
    assert ucs.LatentClusterer is __import__("ucs.clustering", fromlist=["x"]).LatentClusterer
    assert set(dir(ucs)) >= set(ucs.__all__)


def test_an_unknown_name_is_an_attribute_error():
    try:
        ucs.not_a_name  # noqa: B018
    except AttributeError as exc:
        assert "not_a_name" in str(exc)
    else:
        raise AssertionError("ucs.not_a_name should raise AttributeError")


def test_import_ucs_stays_light():
    code = (
        "import sys, ucs; heavy = [m for m in ('sklearn', 'scipy', 'torch', 'llama_cpp', 'ucs.clustering') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

"""The llama.cpp engine probe: a crash in a child process becomes a cached answer, an error that names the
rebuild, or a fall-back to the transformers engine; never a dead process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings

import pytest

from ucs.models import load_backbone, probe
from ucs.models.probe import CHILD_ENV, PROBE_ENV, check_llama_engine, engine_key, probe_llama_engine
from ucs.utils.optional import EngineCrashedError, EngineFallbackWarning

CRASHING = "ucs.testing.crashing_engine"


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty probe cache (on disk and in the process) and the probe enabled."""
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(PROBE_ENV, raising=False)
    monkeypatch.setattr(probe, "_SEEN", {})
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(64))
    return model


def test_a_crashing_engine_is_found_in_a_child_and_cached(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv(CHILD_ENV, CRASHING)
    result = probe_llama_engine(fresh)
    assert result.crashed and "SIGSEGV" in result.detail
    assert "--rebuild-llama" in result.message() and "\n" not in result.message()
    cached = tmp_path / "cache" / "engine-probe" / f"{engine_key()}.json"
    assert cached.is_file()
    # read back from the cache, not probed again: a child that cannot even start would say "failed"
    monkeypatch.setenv(CHILD_ENV, "ucs.no_such_module")
    monkeypatch.setattr(probe, "_SEEN", {})
    assert probe_llama_engine(fresh).crashed
    with pytest.raises(EngineCrashedError, match="crashes on this CPU"):
        check_llama_engine(fresh)
    monkeypatch.setenv(PROBE_ENV, "0")
    check_llama_engine(fresh)  # skipped on request


def test_a_failure_that_is_not_a_crash_is_not_cached_and_a_damaged_cache_is_ignored(
    fresh, monkeypatch, tmp_path
):
    monkeypatch.setenv(CHILD_ENV, "ucs.no_such_module")
    result = probe_llama_engine(fresh)
    assert result.status == "failed" and "No module named" in result.detail
    folder = tmp_path / "cache" / "engine-probe"
    assert not folder.exists() or not any(folder.iterdir())
    check_llama_engine(fresh)  # could not tell: the in-process load reports what is wrong
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{engine_key()}.json").write_text('{"status": "ok", "detail": "x", "key": "another"}')
    monkeypatch.setenv(CHILD_ENV, CRASHING)
    assert probe_llama_engine(fresh).crashed  # a record of another key is not trusted


def test_the_key_changes_with_the_cpu(monkeypatch):
    before = engine_key()
    monkeypatch.setattr(probe, "machine_signature", lambda: "Another CPU f6m143 avx2+amx_int8")
    assert engine_key() != before


def test_the_default_engine_falls_back_to_transformers_and_an_explicit_one_names_the_rebuild(
    fresh, monkeypatch, smollm2_path
):
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    monkeypatch.setenv(CHILD_ENV, CRASHING)
    with pytest.warns(EngineFallbackWarning, match="using the transformers engine"):
        backbone = load_backbone("smollm2", max_length=32)
    assert type(backbone).__name__ == "TransformersBackbone"
    explicit = load_backbone("smollm2", engine="llama")
    with pytest.raises(EngineCrashedError, match="--rebuild-llama"):
        explicit.load()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a)
        )
        assert type(load_backbone("smollm2")).__name__ == "LlamaCppBackbone"  # nothing to fall back to


def test_the_cli_says_it_in_one_line_with_exit_2(fresh, tmp_path, smollm2_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("where is my card\n", encoding="utf-8")
    env = dict(__import__("os").environ, **{CHILD_ENV: CRASHING, "UCS_CACHE_DIR": str(tmp_path / "cache")})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ucs.cli",
            "embed",
            str(texts),
            "--out",
            str(tmp_path / "e.npy"),
            "--engine",
            "llama",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("Error: the llama.cpp engine (llama-cpp-python) crashes on this CPU"), lines
    assert "rebuild it with `bash scripts/install.sh --rebuild-llama`" in lines[1]
    assert "Traceback" not in proc.stderr and len(lines) == 2


def test_the_real_engine_runs_here(smollm2_path, tmp_path, monkeypatch):
    """The probe of the installed llama.cpp build, as install.sh's smoke test runs it (real model, child
    process)."""
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "ucs.models.probe", "--refresh"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "embedded 2 texts" in proc.stdout and "scored 2 labels" in proc.stdout

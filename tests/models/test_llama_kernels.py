"""Which llama.cpp build a process loads: the AVX-512 libraries only where the CPU has AVX-512 and they
verify."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest

import ucs.models.llama_kernels as lk

pytest.importorskip("llama_cpp")
VERSION = metadata.version("llama-cpp-python")
ALL = " ".join(lk.AVX512_FLAGS)


@pytest.fixture
def sidecar(tmp_path, monkeypatch):
    """An installed AVX-512 build in a temporary site-packages (from a wheel made here), on a CPU with
    AVX-512."""
    for name in (lk.LIB_PATH_ENV, lk.KERNELS_ENV):  # recorded, so that what a test sets is undone
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    folder = tmp_path / "site" / "ucs_llama_kernels" / "avx512"
    monkeypatch.setattr(lk, "sidecar_dir", lambda: folder)
    monkeypatch.setattr(lk, "_cpu_flags", lambda cpuinfo="": frozenset(ALL.split()))
    wheel = tmp_path / f"llama_cpp_python-{VERSION}-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"llama_cpp_python-{VERSION}.dist-info/METADATA", "Name: llama-cpp-python\n")
        zf.writestr("llama_cpp/lib/libllama.so", b"llama bytes")
        zf.writestr("llama_cpp/lib/libggml-cpu.so", b"kernel bytes")
        zf.writestr("llama_cpp/__init__.py", "")
    assert lk.install_kernels(wheel, "-DGGML_AVX512=ON") == folder
    return folder


def test_an_installed_build_is_chosen_on_a_cpu_with_avx512(sidecar):
    build = json.loads((sidecar / "build.json").read_text())
    assert build["version"] == VERSION and build["flags"] == "-DGGML_AVX512=ON"
    assert build["files"]["libggml-cpu.so"] == hashlib.sha256(b"kernel bytes").hexdigest()
    assert sorted(p.name for p in sidecar.iterdir()) == ["build.json", "libggml-cpu.so", "libllama.so"]
    assert lk.decide() == (sidecar, "this CPU has AVX-512 and the AVX-512 build is verified")
    assert lk.kernel_library_dir() == sidecar


def test_a_cpu_without_every_subset_keeps_the_portable_build(sidecar, monkeypatch):
    monkeypatch.setattr(lk, "_cpu_flags", lambda cpuinfo="": frozenset(ALL.replace("avx512vl", "").split()))
    folder, why = lk.decide()
    assert folder is None and why == "this CPU lacks avx512vl"


def test_a_damaged_or_stale_build_is_not_loaded(sidecar):
    (sidecar / "libggml-cpu.so").write_bytes(b"kernel bytez")
    folder, why = lk.decide()
    assert folder is None and "libggml-cpu.so does not match its SHA-256" in why
    (sidecar / "libggml-cpu.so").write_bytes(b"kernel bytes")
    build = json.loads((sidecar / "build.json").read_text())
    build["version"] = "0.0.1"
    (sidecar / "build.json").write_text(json.dumps(build))
    folder, why = lk.decide()
    assert folder is None and f"built for llama-cpp-python 0.0.1, {VERSION} is installed" in why


def test_a_process_that_chose_it_still_says_why(sidecar, monkeypatch):
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)  # not imported yet in this process
    assert lk.select_kernels() == "avx512" and os.environ[lk.LIB_PATH_ENV] == str(sidecar)
    assert lk.decide() == (sidecar, "this CPU has AVX-512 and the AVX-512 build is verified")


def test_the_user_decides_first(sidecar, monkeypatch):
    monkeypatch.setenv(lk.KERNELS_ENV, "portable")
    assert lk.decide() == (None, "UCS_LLAMA_KERNELS=portable")
    monkeypatch.delenv(lk.KERNELS_ENV)
    monkeypatch.setenv(lk.LIB_PATH_ENV, "/opt/my-llama")
    assert lk.decide()[0] == lk.Path("/opt/my-llama") and lk.select_kernels() == "user"


def test_a_wheel_of_another_version_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(lk, "sidecar_dir", lambda: tmp_path / "ucs_llama_kernels" / "avx512")
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("llama_cpp_python-0.0.1.dist-info/METADATA", "")
        zf.writestr("llama_cpp/lib/libllama.so", b"x")
    with pytest.raises(ValueError, match=f"is llama-cpp-python 0.0.1; {VERSION} is installed"):
        lk.install_kernels(wheel)
    assert not (tmp_path / "ucs_llama_kernels" / "avx512").exists()


_CHILD = """
import os, sys
from ucs.models import load_backbone
lm = load_backbone("smollm2", weights="f32").load()
import llama_cpp.llama_cpp as ll
print(str(ll._base_path))
s = lm.score_continuations("Question: how do I top up my card?\\nAnswer:", [" top up", " card arrival", " \
refund"])
print(repr([float(x) for x in s]))
"""


def _child(env_kernels):
    env = dict(os.environ, UCS_LLAMA_KERNELS=env_kernels)
    env.pop(lk.LIB_PATH_ENV, None)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    path, scores = out.stdout.strip().splitlines()[-2:]
    return path, eval(scores)


@pytest.mark.slow
def test_the_installed_avx512_build_loads_and_scores_as_the_portable_one():
    """The real libraries: where scripts/install.sh installed the AVX-512 build (a CPU with AVX-512), a
    process loads it, and its label scores equal the portable build's up to float rounding (other accumulation
    orders)."""
    folder, why = lk.decide()
    if folder is None:
        pytest.skip(f"the AVX-512 build is not in use here: {why}")
    fast_path, fast = _child("auto")
    slow_path, slow = _child("portable")
    assert fast_path == str(folder) and slow_path.endswith(os.path.join("llama_cpp", "lib"))
    assert fast == pytest.approx(slow, rel=2e-3)  # other accumulation orders through 30 layers: ≈ 0.006 nats
    assert max(range(3), key=fast.__getitem__) == max(range(3), key=slow.__getitem__)


def test_children_load_the_build_this_process_loaded(monkeypatch):
    """A worker must answer as its parent does: a parent that imported the portable build (e.g. the user
    imported llama_cpp first) tells its children to keep it, and one that loaded the AVX-512 build names that
    folder."""
    import llama_cpp.llama_cpp as ll

    for name in (lk.LIB_PATH_ENV, lk.KERNELS_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    env = lk.child_environment()
    if lk._is_sidecar(ll._base_path):
        assert env == {lk.LIB_PATH_ENV: str(ll._base_path), lk.KERNELS_ENV: None}
    else:
        assert env == {lk.LIB_PATH_ENV: None, lk.KERNELS_ENV: "portable"}
    lk.apply_environment(env)
    assert lk.decide()[0] == (None if env[lk.KERNELS_ENV] else ll._base_path)

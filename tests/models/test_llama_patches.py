"""ucs's patches to llama-cpp-python's sources (scripts/llama-patches/<version>/), which scripts/install.sh
applies before it builds: one folder per locked version, and nothing else, so a lock refresh that moves
llama-cpp-python cannot drop a patch silently; each patch explains itself and touches only llama.cpp's
sources. That a patch applies is checked where it matters, by install.sh on the hash-checked sdist (CI)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "scripts" / "llama-patches"


def _locked_versions() -> set:
    found = set()
    for lock in (ROOT / "locks").glob("*.txt"):
        found |= set(re.findall(r"^llama-cpp-python==([^ ;\\\n]+)", lock.read_text(encoding="utf-8"), re.M))
    return found


def test_each_locked_llama_version_has_its_patches_and_no_other_version_does():
    locked = _locked_versions()
    assert locked, "no lock pins llama-cpp-python"
    folders = {p.name for p in PATCHES.iterdir() if p.is_dir()}
    assert folders == locked, (
        f"scripts/llama-patches/ holds {sorted(folders)}, the locks pin {sorted(locked)}: port the patches "
        "to the newly locked version (or remove them) in the same change"
    )
    for version in folders:
        assert list((PATCHES / version).glob("*.patch")), f"scripts/llama-patches/{version}/ holds no patch"


def test_each_patch_explains_itself_and_touches_only_llama_cpp_sources():
    for patch in PATCHES.glob("*/*.patch"):
        text = patch.read_text(encoding="utf-8")
        header = text.split("\n--- a/", 1)[0]
        assert "Why:" in header and "What" in header and "Measured:" in header, patch
        touched = re.findall(r"^\+\+\+ b/(\S+)", text, re.M)
        assert touched and all(path.startswith("vendor/llama.cpp/") for path in touched), (patch, touched)
        assert re.findall(r"^--- a/(\S+)", text, re.M) == touched


def test_install_sh_applies_the_patches_and_keys_the_wheel_cache_on_them():
    install = (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert 'ls "$PWD/scripts/llama-patches/$1/"*.patch' in install
    assert 'git -C "$src" apply -p1 "$patch"' in install
    assert 'cat "${patches[@]}" | sha256sum' in install  # a changed patch is a new wheel, never a stale one
    assert '"${UCS_LLAMA_PATCHES:-on}" = off' in install

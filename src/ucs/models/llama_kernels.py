"""Which build of llama.cpp's native libraries a process loads: the portable one, or the AVX-512 one beside
it.

``scripts/install.sh`` installs llama-cpp-python built for AVX2 (every x86-64 CPU since 2013). On a machine
whose CPU has AVX-512 it also builds the same version with ``-DGGML_AVX512=ON`` and installs its native
libraries beside the package, in ``<site-packages>/ucs_llama_kernels/avx512/``, with a ``build.json`` that
records the version, the CMake flags and each file's SHA-256 (:func:`install_kernels`). Before ``llama_cpp``
is first imported,
:func:`select_kernels` points llama-cpp-python at that folder (its ``LLAMA_CPP_LIB_PATH``) when

* this CPU has every AVX-512 subset the build was compiled for (:data:`AVX512_FLAGS`),
* the folder's version is the installed llama-cpp-python's, and every file's SHA-256 matches ``build.json``;

otherwise the portable libraries load. The choice is made per process at run time, as a BLAS library
dispatches by CPU, so one environment serves every machine of a mixed cluster. Float32 matrix products run at
numpy's rate with the AVX-512 build and at about 70 % of it with the portable one
(``benchmarks/models/RESULTS_label_scoring.md``). Scores differ between the two by float rounding only;
identities do not record the build.

``UCS_LLAMA_KERNELS=portable`` keeps the portable build; a ``LLAMA_CPP_LIB_PATH`` set by the user is left
alone. ``python -m ucs.models.llama_kernels`` prints which build a process would load and why.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Tuple

__all__ = [
    "AVX512_FLAGS",
    "KERNELS_ENV",
    "apply_environment",
    "child_environment",
    "install_kernels",
    "kernel_library_dir",
    "remove_kernels",
    "select_kernels",
]

KERNELS_ENV = "UCS_LLAMA_KERNELS"
LIB_PATH_ENV = "LLAMA_CPP_LIB_PATH"
#: The CPU flags the AVX-512 build needs (``-DGGML_AVX512=ON``: ``-mavx512f -mavx512cd -mavx512vl -mavx512dq
#: -mavx512bw``), as /proc/cpuinfo spells them.
AVX512_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_SIDECAR = "ucs_llama_kernels"
_LEVEL = "avx512"
_BUILD = "build.json"


def _package_dir() -> Optional[Path]:
    """The installed ``llama_cpp`` package folder, found without importing it."""
    spec = importlib.util.find_spec("llama_cpp")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def sidecar_dir() -> Optional[Path]:
    """Where the AVX-512 libraries live beside the installed package (whether or not they are there)."""
    pkg = _package_dir()
    return None if pkg is None else pkg.parent / _SIDECAR / _LEVEL


def _cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset:
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=4)
def _verified(folder: str, stamp: Tuple) -> Optional[str]:
    """``None`` when ``folder`` holds a complete, unaltered build of the installed version; else why not.
    ``stamp`` (each file's name, size and mtime) makes a changed folder verified afresh."""
    path = Path(folder)
    try:
        build = json.loads((path / _BUILD).read_text(encoding="utf-8"))
        files: Dict[str, str] = dict(build["files"])
        version = str(build["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"{path / _BUILD} is missing or unreadable"
    try:
        installed = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return "llama-cpp-python is not installed"
    if version != installed:
        return f"it was built for llama-cpp-python {version}, {installed} is installed"
    if not files or "libllama.so" not in files:
        return f"{path / _BUILD} lists no libllama.so"
    for name, digest in files.items():
        try:
            actual = hashlib.sha256((path / name).read_bytes()).hexdigest()
        except OSError:
            return f"{path / name} is missing"
        if actual != digest:
            return f"{path / name} does not match its SHA-256 in {_BUILD} (damaged or replaced)"
    return None


def _stamp(folder: Path) -> Tuple:
    try:
        return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()))
    except OSError:
        return ()


def decide() -> Tuple[Optional[Path], str]:
    """``(folder, why)``: the folder of native libraries a new process would load (``None``: the package's
    own, portable ones) and the reason, in words. Reads only files; loads nothing."""
    if os.environ.get(LIB_PATH_ENV) and not _is_sidecar(Path(os.environ[LIB_PATH_ENV])):
        return Path(os.environ[LIB_PATH_ENV]), f"{LIB_PATH_ENV} is set"
    if os.environ.get(KERNELS_ENV, "auto").strip().lower() == "portable":
        return None, f"{KERNELS_ENV}=portable"
    folder = sidecar_dir()
    if folder is None or not folder.is_dir():
        return None, "no AVX-512 build is installed (scripts/install.sh adds one on a CPU with AVX-512)"
    missing = [f for f in AVX512_FLAGS if f not in _cpu_flags()]
    if missing:
        return None, f"this CPU lacks {', '.join(missing)}"
    why_not = _verified(str(folder), _stamp(folder))
    if why_not is not None:
        return None, f"the AVX-512 build is not used: {why_not}"
    return folder, "this CPU has AVX-512 and the AVX-512 build is verified"


def select_kernels() -> str:
    """Point llama-cpp-python at the build :func:`decide` picks, unless ``llama_cpp`` is already imported
    (then the loaded build stays). Returns ``"avx512"``, ``"portable"`` or ``"user"``
    (``LLAMA_CPP_LIB_PATH``)."""
    if os.environ.get(LIB_PATH_ENV):
        return _LEVEL if _is_sidecar(Path(os.environ[LIB_PATH_ENV])) else "user"
    if "llama_cpp" in sys.modules:
        return "portable"
    folder, _ = decide()
    if folder is None:
        return "portable"
    os.environ[LIB_PATH_ENV] = str(
        folder
    )  # read once, when llama_cpp is imported; child processes inherit it
    return _LEVEL


def _is_sidecar(path: Path) -> bool:
    """Whether ``path`` is the AVX-512 folder (set by :func:`select_kernels` here or in a parent process)."""
    folder = sidecar_dir()
    return folder is not None and path.resolve() == folder.resolve()


def child_environment() -> Dict[str, Optional[str]]:
    """What a child process needs in its environment to load the build this process loaded (or, before any
    load here, the one :func:`select_kernels` picks), so that workers answer bit for bit as this process does;
    ``None`` values are to be removed (:func:`apply_environment`)."""
    loaded = sys.modules.get("llama_cpp.llama_cpp")
    if loaded is None:
        select_kernels()
        return {LIB_PATH_ENV: os.environ.get(LIB_PATH_ENV), KERNELS_ENV: os.environ.get(KERNELS_ENV)}
    base = Path(str(getattr(loaded, "_base_path", "")))
    pkg = _package_dir()
    if pkg is not None and base.resolve() == (pkg / "lib").resolve():
        return {LIB_PATH_ENV: None, KERNELS_ENV: "portable"}
    return {LIB_PATH_ENV: str(base), KERNELS_ENV: None}


def apply_environment(env: Dict[str, Optional[str]]) -> None:
    """Set (or, for ``None``, remove) each variable of :func:`child_environment`'s result in this process."""
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def kernel_library_dir() -> Optional[Path]:
    """The folder of native libraries a new process would load; ``None`` when llama-cpp-python is absent."""
    folder, _ = decide()
    if folder is not None:
        return folder
    pkg = _package_dir()
    return None if pkg is None else pkg / "lib"


def install_kernels(wheel: "str | os.PathLike[str]", flags: str = "") -> Path:
    """Install the native libraries of ``wheel`` (llama-cpp-python, the installed version, built for AVX-512)
    beside the installed package, with their SHA-256 in ``build.json``; replaces an earlier build. Returns the
    folder. Raises ``ValueError`` for a wheel of another version or without libraries."""
    folder = sidecar_dir()
    if folder is None:
        raise ValueError("llama-cpp-python is not installed: install it before its AVX-512 libraries")
    installed = metadata.version("llama-cpp-python")
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        files = _unpack(Path(wheel), installed, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / _BUILD).write_text(
        json.dumps(
            {"version": installed, "flags": flags, "requires": list(AVX512_FLAGS), "files": files},
            indent=1,
            sort_keys=True,
        ),
        encoding="utf-8",
    )
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return folder


def _unpack(wheel: Path, installed: str, into: Path) -> Dict[str, str]:
    """Write ``wheel``'s ``llama_cpp/lib/*`` into ``into``; returns each file's SHA-256 by name."""
    files: Dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        dist = next((n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA")), "")
        version = dist[: -len(".dist-info")].rpartition("-")[2] if dist else None
        if version != installed:
            raise ValueError(f"{wheel} is llama-cpp-python {version}; {installed} is installed")
        for name in zf.namelist():
            if name.startswith("llama_cpp/lib/") and not name.endswith("/"):
                data = zf.read(name)
                (into / Path(name).name).write_bytes(data)
                files[Path(name).name] = hashlib.sha256(data).hexdigest()
    if "libllama.so" not in files:
        raise ValueError(f"{wheel} holds no llama_cpp/lib/libllama.so")
    return files


def remove_kernels() -> None:
    """Remove the AVX-512 libraries (the portable build stays)."""
    folder = sidecar_dir()
    if folder is not None:
        shutil.rmtree(folder.parent, ignore_errors=True)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m ucs.models.llama_kernels [--install WHEEL [--flags F] | --remove]``: which build loads,
    why."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m ucs.models.llama_kernels", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--install", metavar="WHEEL", help="install this AVX-512 wheel's libraries beside the package"
    )
    parser.add_argument("--flags", default="", help="the CMake flags it was built with (recorded)")
    parser.add_argument("--remove", action="store_true", help="remove the AVX-512 libraries")
    args = parser.parse_args(argv)
    try:
        if args.install:
            print(f"AVX-512 libraries installed in {install_kernels(args.install, args.flags)}")
        if args.remove:
            remove_kernels()
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        print(f"llama_kernels: {exc}", file=sys.stderr)
        return 2
    folder, why = decide()
    print(f"llama.cpp loads {'the portable libraries' if folder is None else folder}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

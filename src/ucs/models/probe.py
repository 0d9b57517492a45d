"""Whether the native llama.cpp engine runs on this machine: a probe in a child process, once per build and
CPU.

A llama.cpp library compiled for another processor (or for instructions that a virtual machine advertises but
cannot run) does not raise an exception: it kills the process with SIGSEGV or SIGILL, and with it a test run
or a long evaluation. So before the engine is first used, :func:`check_llama_engine` runs
:mod:`ucs.models._probe_child` in a child process — load the model, embed two texts, score two labels,
generate four tokens — and caches the outcome in ``<cache>/engine-probe/<key>.json``, where ``key`` hashes the
llama-cpp-python version, the SHA-256 of its native libraries and :func:`ucs.utils.cpu.machine_signature`. A
rebuilt library or another CPU is probed afresh. Only "runs" and "crashed" are cached; any other failure (a
damaged model file, a time-out) is left for the in-process load to report as it always does.

Cost: one child process per (build, CPU), about 2 s with SmolLM2-135M; afterwards one small file read per
process.

``python -m ucs.models.probe [--model PATH] [--refresh]`` prints one line and exits 0 (runs), 3 (crashed) or
1 (could not tell); ``scripts/install.sh`` runs it as its smoke test. ``UCS_LLAMA_PROBE=0`` skips the probe
(the child itself runs with it). ``UCS_LLAMA_PROBE_CHILD`` names another module to run as the child (tests use
a double that crashes on purpose).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional

from ucs.defaults import default_cache_dir
from ucs.models.llama_kernels import kernel_library_dir
from ucs.utils.cpu import machine_signature
from ucs.utils.optional import LLAMA_REBUILD, EngineCrashedError

__all__ = ["ProbeResult", "check_llama_engine", "engine_key", "probe_llama_engine", "PROBE_ENV", "CHILD_ENV"]

PROBE_ENV = "UCS_LLAMA_PROBE"
CHILD_ENV = "UCS_LLAMA_PROBE_CHILD"
_CHILD = "ucs.models._probe_child"
_SEEN: Dict[str, "ProbeResult"] = {}


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe: ``status`` is ``"ok"``, ``"crashed"`` or ``"failed"`` (could not tell)."""

    status: str
    detail: str
    key: str

    @property
    def crashed(self) -> bool:
        return self.status == "crashed"

    def message(self) -> str:
        """One line for a user."""
        if self.status == "ok":
            return f"llama.cpp engine runs on this CPU ({self.detail})"
        if self.crashed:
            return (
                f"the llama.cpp engine (llama-cpp-python) crashes on this CPU ({self.detail}): "
                f"rebuild it with {LLAMA_REBUILD}"
            )
        return f"could not tell whether the llama.cpp engine runs on this CPU: {self.detail}"


def _library_files() -> List[Path]:
    """The native libraries a new process would load (:mod:`ucs.models.llama_kernels`: the portable build or
    the AVX-512 one beside it), found without importing llama-cpp-python, sorted."""
    lib = kernel_library_dir()
    return sorted(p for p in lib.glob("*") if p.is_file()) if lib is not None and lib.is_dir() else []


def engine_key() -> str:
    """Hex key of (llama-cpp-python version, its native libraries' SHA-256, this CPU's signature).

    The libraries are hashed once per process and state (path, size, modification time), so a load after the
    first costs a ``stat`` per library, not a pass over tens of MB.
    """
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "not installed"
    files = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in _library_files())
    return _key(version, files, machine_signature())


@functools.lru_cache(maxsize=8)
def _key(version: str, files: tuple, machine: str) -> str:
    h = hashlib.sha256(version.encode())
    for path, _, _ in files:
        h.update(Path(path).name.encode())
        h.update(hashlib.sha256(Path(path).read_bytes()).digest())
    h.update(machine.encode())
    return h.hexdigest()[:32]


def _cache_path(key: str) -> Path:
    return default_cache_dir() / "engine-probe" / f"{key}.json"


def _read_cached(key: str) -> Optional[ProbeResult]:
    """The cached result for ``key``; ``None`` when absent or not a well-formed record of that key."""
    try:
        data = json.loads(_cache_path(key).read_text(encoding="utf-8"))
        result = ProbeResult(str(data["status"]), str(data["detail"]), str(data["key"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return result if result.key == key and result.status in ("ok", "crashed") else None


def _write_cached(result: ProbeResult) -> None:
    path = _cache_path(result.key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(result)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache only costs a probe next time
        pass


def _run_child(model_path: Path, key: str, timeout: float) -> ProbeResult:
    """Run the probe child on ``model_path``; a signal (or a negative exit status) is a crash."""
    env = dict(os.environ, **{PROBE_ENV: "0"})
    module = os.environ.get(CHILD_ENV) or _CHILD
    try:
        proc = subprocess.run(
            [sys.executable, "-m", module, str(model_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult("failed", f"the probe took longer than {timeout:.0f} s", key)
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return ProbeResult("crashed", f"a child process using it was killed by {name}", key)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return ProbeResult("failed", f"the probe exited with status {proc.returncode}: {last}", key)
    return ProbeResult(
        "ok", proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "probe passed", key
    )


def probe_llama_engine(
    model_path: "str | os.PathLike[str]", *, refresh: bool = False, timeout: float = 600.0
) -> ProbeResult:
    """Probe the llama.cpp engine with ``model_path`` (a GGUF file) in a child process, or read the cached
    result.

    ``refresh`` ignores (and replaces) a cached result. Returns a :class:`ProbeResult`; never raises for a
    crash.
    """
    key = engine_key()
    if not refresh:
        if key in _SEEN:
            return _SEEN[key]
        cached = _read_cached(key)
        if cached is not None:
            _SEEN[key] = cached
            return cached
    result = _run_child(Path(model_path), key, timeout)
    if result.status != "failed":
        _SEEN[key] = result
        _write_cached(result)
    return result


def probe_enabled() -> bool:
    return os.environ.get(PROBE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def check_llama_engine(model_path: "str | os.PathLike[str]") -> None:
    """Raise :class:`~ucs.utils.optional.EngineCrashedError` (naming the rebuild command) if the engine
    crashes on this machine; a no-op when it runs, when the probe could not tell, or when
    ``UCS_LLAMA_PROBE=0``."""
    if not probe_enabled():
        return
    result = probe_llama_engine(model_path)
    if result.crashed:
        raise EngineCrashedError(result.message())


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m ucs.models.probe [--model PATH] [--refresh]``: one line; exit 0 runs, 3 crashed, 1
    unknown."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ucs.models.probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a GGUF file (default: the packaged SmolLM2-135M)")
    parser.add_argument("--refresh", action="store_true", help="probe again even if a result is cached")
    args = parser.parse_args(argv)
    if args.model:
        model = Path(args.model)
    else:
        from ucs.utils.weights import smollm2_gguf_path

        try:
            model = smollm2_gguf_path()
        except ImportError as exc:
            print(f"probe: {exc}", file=sys.stderr)
            return 1
    result = probe_llama_engine(model, refresh=args.refresh)
    print(result.message(), file=sys.stdout if result.status == "ok" else sys.stderr)
    return {"ok": 0, "crashed": 3}.get(result.status, 1)


if __name__ == "__main__":  # pragma: no cover - exercised through subprocesses
    sys.exit(main())

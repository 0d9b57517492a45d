"""What the processor is and which low-precision kernels it has.

bfloat16 arithmetic is native on CPUs with AVX-512-BF16 or AMX and emulated elsewhere: the same model then
gives slightly different embeddings and answers, and runs 3-7 times slower than float32 where it is emulated
(benchmarks/models/RESULTS.md). Manifests record these facts; the transformers backbone warns when bfloat16
would be emulated.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from typing import Any, Mapping, Optional

__all__ = [
    "KERNEL_FLAGS",
    "available_cores",
    "NATIVE_BF16_FLAGS",
    "cpu_model",
    "cpu_details",
    "describe_machine",
    "machine_signature",
    "native_bf16",
    "bf16_cpu_warning",
]


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count()`` where that is unsupported),
    at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`), or ``""``.

    Recorded in manifests because low-precision kernels differ between CPUs: bfloat16 embeddings of the same
    texts differ slightly between processors, and the latent clusters built from them can differ visibly.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or ""


#: Instruction sets whose presence changes low-precision (bfloat16, int8) kernels, hence results.
KERNEL_FLAGS = (
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


def cpu_details(cpuinfo: "str | os.PathLike[str]" = "/proc/cpuinfo") -> dict[str, Any]:
    """Family, model and stepping ids of the first processor and which of :data:`KERNEL_FLAGS` it has.

    A model name such as "AMD EPYC" covers processors with and without AVX-512-BF16, whose bfloat16
    kernels give different embeddings; these fields tell such machines apart. ``{}`` where the file is
    missing (not Linux); ids absent from the file are omitted. Reads the file once, O(its size).
    """
    out: dict[str, Any] = {}
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor's block ends here
                name, _, value = (part.strip() for part in line.partition(":"))
                if name in ("cpu family", "model", "stepping") and value.isdigit():
                    out[name.replace("cpu ", "")] = int(value)
                elif name == "flags":
                    have = set(value.split())
                    out["kernel_flags"] = [f for f in KERNEL_FLAGS if f in have]
    except OSError:
        return {}
    return out


#: Any of these makes bfloat16 matrix products native rather than emulated.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def native_bf16(details: Optional[dict] = None) -> Optional[bool]:
    """Whether this CPU (or ``details`` from :func:`cpu_details`) computes bfloat16 natively; ``None`` when
    its flags are unknown (not Linux)."""
    details = cpu_details() if details is None else details
    if "kernel_flags" not in details:
        return None
    return any(f in details["kernel_flags"] for f in NATIVE_BF16_FLAGS)


def bf16_cpu_warning(device: str, dtype: Optional[str], details: Optional[dict] = None) -> Optional[str]:
    """The warning to give when a model is asked to run in bfloat16 on a CPU that would emulate it, else
    ``None`` (another dtype, a GPU, a CPU with native bfloat16, or unknown flags)."""
    if dtype != "bfloat16" or not str(device).startswith("cpu"):
        return None
    details = cpu_details() if details is None else details
    if native_bf16(details) is not False:
        return None
    flags = " ".join(details.get("kernel_flags", [])) or "none of them"
    return (
        f"dtype='bfloat16' on a CPU without AVX-512-BF16 or AMX (its kernel flags: {flags}): torch emulates "
        "bfloat16 there, which measured 3-7x slower than float32 on such a CPU "
        "(benchmarks/models/RESULTS.md), "
        "and its results differ from a native-bfloat16 machine's. Use dtype='float32' (--set dtype=float32) "
        "unless you must resume bfloat16 work; results of the two dtypes are cached apart."
    )


@lru_cache(maxsize=1)
def machine_signature() -> str:
    """A short name of this CPU kind for provenance, e.g. ``"AMD EPYC f25m1s1 avx2+fma+f16c"``: its model
    name, family/model/stepping ids and :data:`KERNEL_FLAGS` (what decides low-precision arithmetic). Read
    once per process."""
    d = cpu_details()
    ids = "".join(f"{k[0]}{d[k]}" for k in ("family", "model", "stepping") if k in d)
    flags = "+".join(d.get("kernel_flags", [])) if "kernel_flags" in d else ""
    return " ".join(x for x in (cpu_model() or platform.machine() or "unknown CPU", ids, flags) if x)


def describe_machine(platform: Mapping[str, Any]) -> str:
    """One line for a manifest's ``platform`` (:func:`ucs.evaluation.manifest.platform_info`): CPU model and
    count, and its ids and kernel flags where recorded, e.g. ``"AMD EPYC × 2 (family 25 model 1; kernel flags
    avx2)"``."""
    d = platform.get("cpu_details") or {}
    ids = " ".join(f"{k} {d[k]}" for k in ("family", "model", "stepping") if k in d)
    flags = ("kernel flags " + (" ".join(d["kernel_flags"]) or "none")) if "kernel_flags" in d else ""
    extra = "; ".join(x for x in (ids, flags) if x) or "no CPU details recorded"
    return f"{platform.get('cpu') or 'unknown CPU'} × {platform.get('cpu_count', '?')} ({extra})"

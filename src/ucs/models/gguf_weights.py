"""Float copies of a quantised GGUF model, made once and cached, for llama.cpp's faster float kernels.

A quantised file (SmolLM2's Q4_1, Gemma-3's Q4_K_M) is small, but on a CPU without the quantised types' fast
paths llama.cpp multiplies it slowly: in prompt processing (every token of a prompt and of a label trie at
once), the shipped SmolLM2 Q4_1 file scores a BANKING77 prompt 1.5× slower than the same weights stored as
float32, which go through the float matrix kernels (``benchmarks/models/RESULTS_label_scoring.md``). The
float copy holds exactly the numbers the quantised file decodes to (``f32``; ``f16`` rounds them to half
precision), so what changes is the arithmetic of the activations (float instead of 8-bit), not the model.

Weights ``w`` of a file of ``P`` parameters: ``"file"`` uses the file as it is; ``"f32"`` a copy of ``4·P``
bytes (SmolLM2 135M: 540 MB; Gemma-3 270M: 1.1 GB), ``"f16"`` of ``2·P`` bytes. The copy is written once per
source file (keyed by its SHA-256) under ``<models cache>/gguf/`` through a temporary file and one rename,
with a sidecar ``.json`` holding the source's and the copy's SHA-256; every later use checks the copy against
it (O(bytes) once per process) and converts again when it does not match. Conversion: ``llama_model_quantize``
with requantisation allowed, a few seconds.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict

from ucs.models.llama_kernels import select_kernels
from ucs.utils.native_output import quiet

__all__ = ["WEIGHTS", "check_weights", "float_copy"]

#: ``"file"``: the model file as given; ``"f32"`` / ``"f16"``: a float copy of it (module docstring).
WEIGHTS = ("file", "f32", "f16")

#: llama.cpp's ``LLAMA_FTYPE_ALL_F32`` and ``LLAMA_FTYPE_MOSTLY_F16``.
_FTYPES: Dict[str, int] = {"f32": 0, "f16": 1}


def check_weights(weights: str) -> str:
    """``weights`` when it is one of :data:`WEIGHTS`; else ``ValueError`` naming them."""
    if weights not in WEIGHTS:
        raise ValueError(
            f"weights must be one of {', '.join(WEIGHTS)} (file: the GGUF file as given; f32/f16: a "
            f"float copy of it, faster to score with on CPUs); got {weights!r}"
        )
    return weights


def _copy_path(src: Path, sha: str, weights: str) -> Path:
    from ucs.utils.weights import models_cache_dir

    return models_cache_dir() / "gguf" / f"{src.stem}.{sha[:16]}.{weights}.gguf"


def _verified(path: Path, sha: str, weights: str) -> bool:
    """Whether ``path`` is the complete copy its sidecar describes, made from the source ``sha``."""
    from ucs.utils.weights import fingerprint

    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        return False
    try:
        info = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(info, dict)
        and info.get("source_sha256") == sha
        and info.get("weights") == weights
        and info.get("size") == path.stat().st_size
        and info.get("sha256") == fingerprint(path)
    )


def float_copy(src: "str | os.PathLike[str]", weights: str) -> Path:
    """The path of ``src`` stored as ``weights`` (``src`` itself for ``"file"``), converted on first use.

    Raises ``ValueError`` for unknown ``weights``, and :class:`~ucs.utils.optional.InvalidModelFileError`
    when llama.cpp cannot convert the file. Time: O(file) to check a cached copy; the first call converts."""
    from ucs.utils.optional import InvalidModelFileError
    from ucs.utils.weights import fingerprint

    src = Path(src)
    if check_weights(weights) == "file":
        return src
    sha = fingerprint(src)
    out = _copy_path(src, sha, weights)
    if _verified(out, sha, weights):
        return out
    select_kernels()
    import llama_cpp

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".part", dir=out.parent)
    os.close(fd)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = _FTYPES[weights]
        params.allow_requantize = True
        params.nthread = 1
        sys.stdout.flush()
        with quiet((1, 2)):
            rc = llama_cpp.llama_model_quantize(str(src).encode(), tmp.encode(), ctypes.byref(params))
        if rc != 0:
            raise InvalidModelFileError(
                f"llama.cpp could not write {src} as {weights} (code {rc}); use weights='file'"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    info = {
        "source": src.name,
        "source_sha256": sha,
        "weights": weights,
        "size": out.stat().st_size,
        "sha256": fingerprint(out),
    }
    from ucs.utils.io import atomic_write_json

    atomic_write_json(out.with_suffix(".json"), info)
    return out

"""Float copies of a quantised GGUF file: made once, checked on every use, rebuilt when damaged."""

import json

import numpy as np
import pytest

from ucs.models.gguf_weights import check_weights, float_copy
from ucs.models.llamacpp import LlamaCppBackbone
from tests.models.test_llamacpp import LABELS, PROMPT


def test_unknown_weights_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="weights must be one of file, f32, f16"):
        check_weights("q2")
    with pytest.raises(ValueError, match="weights must be one of"):
        LlamaCppBackbone("x.gguf", weights="float")


@pytest.mark.slow
def test_a_float_copy_is_made_once_verified_and_rebuilt_when_damaged(smollm2_path, tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path))
    assert float_copy(smollm2_path, "file") == smollm2_path
    path = float_copy(smollm2_path, "f16")
    meta = json.loads(path.with_suffix(".json").read_text())
    assert (
        path.read_bytes()[:4] == b"GGUF" and meta["weights"] == "f16" and meta["size"] == path.stat().st_size
    )
    assert path.stat().st_size > 2 * smollm2_path.stat().st_size  # 2 bytes a parameter against Q4_1's ≈ 0.6
    stamp = path.stat().st_mtime_ns
    assert float_copy(smollm2_path, "f16") == path and path.stat().st_mtime_ns == stamp  # reused
    with open(path, "r+b") as fh:  # one flipped byte in the middle: detected, converted again
        fh.seek(path.stat().st_size // 2)
        b = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([b[0] ^ 0xFF]))
    again = float_copy(smollm2_path, "f16")
    assert again == path and path.stat().st_mtime_ns != stamp
    assert json.loads(path.with_suffix(".json").read_text())["sha256"] == meta["sha256"]


@pytest.mark.slow
def test_the_float32_copy_scores_the_same_model(smollm2_path, tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path))
    q = LlamaCppBackbone(smollm2_path, n_threads=1, context_length=512, batch_tokens=256)
    f = LlamaCppBackbone(smollm2_path, n_threads=1, context_length=512, batch_tokens=256, weights="f32")
    a, b = q.score_continuations(PROMPT, LABELS), f.score_continuations(PROMPT, LABELS)
    assert int(np.argmax(a)) == int(np.argmax(b))
    assert np.abs(a - b).max() < 1.0  # float against 8-bit activations (0.8 nats at most on BANKING77)
    assert f.identity["weights"] == "f32" and "weights" not in q.identity
    assert f.identity["revision"] == q.identity["revision"]  # the source file's hash
    q.close()
    f.close()

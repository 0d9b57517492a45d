import numpy as np
import pytest

from ucs.embedding import l2_normalize, sanitize_text, sanitize_texts


def test_sanitize_handles_bad_bytes_and_surrogates():
    assert sanitize_text(b"caf\xc3\xa9") == "café"
    assert sanitize_text(b"\xff\xfeok") == "\ufffd\ufffdok"
    assert sanitize_text("a\udcffb") == "a?b"
    assert sanitize_text(None) == ""
    with pytest.raises(TypeError, match="str or bytes"):
        sanitize_text(3)
    with pytest.raises(TypeError, match="sequence"):
        sanitize_texts("abc")


def test_l2_normalize_keeps_zero_rows():
    x = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(x, [[0.6, 0.8], [0.0, 0.0]])
    assert x.dtype == np.float32

import numpy as np
import pytest
from typer.testing import CliRunner


@pytest.mark.slow
def test_embed_command_uses_the_cache(tmp_path, smollm2_path):
    from ucs.cli import app

    src = tmp_path / "texts.txt"
    src.write_text("where is my card\nI want a refund\n", encoding="utf-8")
    args = ["embed", str(src), "--out", str(tmp_path / "e.npy"), "--cache-dir", str(tmp_path / "c"),
            "--max-length", "32"]
    r1 = CliRunner().invoke(app, args)
    assert r1.exit_code == 0, r1.output
    assert "miss" in r1.output
    r2 = CliRunner().invoke(app, args)
    assert r2.exit_code == 0 and "hit" in r2.output
    x = np.load(tmp_path / "e.npy")
    assert x.shape == (2, 576)

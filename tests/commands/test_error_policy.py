"""The error policy's wrapper on a command of its own: signals, bugs and the parameter it names."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import typer
from typer.testing import CliRunner

from ucs.commands._errors import guard_app


def _app():
    app = typer.Typer()

    @app.command("run")
    def run(out: Path = typer.Option(Path("x"), "--out"), what: str = typer.Option("term", "--what")) -> None:
        if what == "term":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        if what == "bug":
            raise RuntimeError("a bug, not a user error")
        if what == "perm":
            raise PermissionError(13, "Permission denied", str(out / "records.jsonl"))

    @app.command("other")
    def other() -> None:
        pass

    guard_app(app)
    return app


def test_sigterm_stops_a_command_like_ctrl_c():
    res = CliRunner().invoke(_app(), ["run"])
    assert res.exit_code == 130 and "rerun the same command to continue" in res.output
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is restored afterwards


def test_a_bug_is_not_dressed_up_as_a_user_error():
    res = CliRunner().invoke(_app(), ["run", "--what", "bug"])
    assert isinstance(res.exception, RuntimeError)


def test_a_permission_error_names_the_option_holding_the_path(tmp_path):
    res = CliRunner().invoke(_app(), ["run", "--what", "perm", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert res.output.startswith("Error: --out: permission denied:")

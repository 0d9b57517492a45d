"""Progress of long stages: silent by default, plain lines at a steady pace in a log, a rich bar on a
terminal."""

from __future__ import annotations

import io
import re

import pytest

from ucs.utils import progress as P


def lines(buf: io.StringIO) -> list:
    return buf.getvalue().splitlines()


def test_silent_unless_enabled():
    buf = io.StringIO()
    with P.stage("embedding", 10, kind="embed", stream=buf) as st:
        P.advance(10, kind="embed")
    assert buf.getvalue() == "" and st.done == 10


def test_plain_lines_every_step_of_the_total(monkeypatch):
    monkeypatch.setattr(P, "LOG_MIN_GAP_S", 0.0)  # no pacing by time: one line per 5 % step
    monkeypatch.setattr(P, "LOG_INTERVAL_S", 1e9)
    buf = io.StringIO()
    with P.progress_enabled(), P.stage("scoring", 200, kind="mdl", stream=buf):
        for _ in range(200):
            P.advance(1, kind="mdl")
    out = lines(buf)
    assert out[0] == "[ucs] scoring: started (200 to do)"
    assert re.fullmatch(r"\[ucs\] scoring: 200/200 done in \d+s", out[-1])
    middle = out[1:-1]
    assert len(middle) == 19  # 5 %, 10 %, ... 95 %: one line per step, not one per unit
    assert middle[0].startswith("[ucs] scoring: 10/200 (5%) elapsed") and ", eta " in middle[0]


def test_lines_are_paced_in_time(monkeypatch):
    """With the default minimum gap, a fast stage writes only its first and last line."""
    buf = io.StringIO()
    with P.progress_enabled(), P.stage("evaluating", 1000, stream=buf):
        for _ in range(1000):
            P.advance(1)
    assert len(lines(buf)) == 2


def test_advance_moves_only_the_innermost_stage_of_its_kind():
    with P.progress_enabled(False), P.stage("evaluate", 4, kind="evaluate") as outer:
        with P.stage("mdl", 3, kind="mdl") as inner:
            P.advance(1, kind="mdl")
            P.advance(1, kind="evaluate")
            P.advance(1, kind="embed")  # no such stage open: nothing moves
            assert (inner.done, outer.done) == (1, 1)


def test_unknown_total_and_the_final_count():
    buf = io.StringIO()
    with P.progress_enabled(), P.stage("clustering 10 items", stream=buf) as st:
        pass
    assert lines(buf) == ["[ucs] clustering 10 items: started", "[ucs] clustering 10 items: done in 0s"]
    assert st.total is None
    with P.progress_enabled(), P.stage("embedding", 7, stream=io.StringIO()) as st:
        pass  # work done without unit reports (an embedder that does not report) counts as complete
    assert st.done == 7


def test_a_failing_stage_is_closed(monkeypatch):
    buf = io.StringIO()
    with pytest.raises(RuntimeError), P.progress_enabled(), P.stage("x", 5, kind="k", stream=buf):
        raise RuntimeError("boom")
    assert P._STACK == [] and re.fullmatch(r"\[ucs\] x: 0/5 stopped after \d+s", lines(buf)[-1])


def test_terminal_shows_a_rich_bar():
    buf = io.StringIO()
    with P.progress_enabled(), P.stage("embedding 50 texts", 50, kind="embed", stream=buf, terminal=True):
        with P.stage("inner", 2, kind="inner", stream=buf, terminal=True):  # nested: one live display
            P.advance(2, kind="inner")
        P.advance(50, kind="embed")
    out = buf.getvalue()
    assert "embedding 50 texts: 50/50 done in" in out and "inner: 2/2 done in" in out and "[ucs]" not in out
    assert P._RICH == {}


@pytest.mark.parametrize("s,text", [(None, "?"), (5.2, "5s"), (75, "1m15s"), (3725, "1h02m")])
def test_format_seconds(s, text):
    assert P.format_seconds(s) == text


def test_only_the_innermost_stage_keeps_the_log_moving(monkeypatch):
    monkeypatch.setattr(P, "LOG_INTERVAL_S", 0.0)
    buf = io.StringIO()
    with P.progress_enabled(), P.stage("evaluating", 10, stream=buf) as outer:
        with P.stage("MDL scoring", 5, kind="mdl", stream=buf) as inner:
            n = len(lines(buf))
            outer.heartbeat()  # an inner stage is open: the outer one stays quiet
            assert len(lines(buf)) == n
            inner.heartbeat()
            assert lines(buf)[-1].startswith("[ucs] MDL scoring: 0/5 (0%) elapsed")


def test_time_in_inner_stages_is_left_out_of_the_outer_rate(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(P.time, "monotonic", lambda: clock[0])
    with P.progress_enabled(False), P.stage("evaluating", 100, kind="evaluate") as outer:
        with P.stage("MDL scoring", 5, kind="mdl"):
            clock[0] += 600.0  # ten minutes of MDL before the first prompt
        clock[0] += 10.0
        P.advance(10, kind="evaluate")  # 10 prompts in 10 s of the stage's own time
        assert outer.inner_s == 600.0 and outer.eta() == pytest.approx(90.0)
        assert outer.line().endswith("eta 1m30s + inner stages")


def test_reused_units_are_done_but_left_out_of_the_rate(monkeypatch):
    """A resumed run reads 60 units back in no time, then computes at 1 unit per 10 s: the ETA is that
    rate."""
    clock = [0.0]
    monkeypatch.setattr(P.time, "monotonic", lambda: clock[0])
    with P.progress_enabled(False), P.stage("MDL scoring", 100, kind="mdl") as st:
        P.advance(60, kind="mdl", reused=60)
        assert st.done == 60 and st.eta() is None  # nothing computed yet: no rate to promise
        clock[0] += 20.0
        P.advance(2, kind="mdl")
        assert st.eta() == pytest.approx(38 * 10.0)  # not 20 s / 62 units
        P.advance(1, kind="mdl", reused=5)  # a report never counts more reused units than units
        assert st.reused == 61

"""The HTTP backbone's orchestration against a tiny local stub server: retries (429, 5xx, timeouts, refused
connections), the connect timeout, the no-logprobs error, the API key and a URL's password kept out of every
message, log line, CLI output and file (even when the server repeats them), the model spec and its malformed
forms, and the echo parser on hand-written answers. The numbers themselves are tested against a real server in
test_http_server.py.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

pytest.importorskip("httpx", reason="the HTTP backbone needs the 'http' extra: pip install -e '.[http]'")

from ucs.models import load_backbone  # noqa: E402
from ucs.models.http import HttpBackbone, WrongChoicesError, parse_endpoint  # noqa: E402
from ucs.models.http_client import EndpointError, EndpointUnreachableError  # noqa: E402
from ucs.models.http_spec import CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT  # noqa: E402
from ucs.models.http_logprobs import (
    MisalignedLogprobsError,
    PromptLogprobsUnavailableError,  # noqa: E402
    continuation_logprob,
)
from ucs.testing.http_double import CompletionsDouble  # noqa: E402

KEY = "sk-test-SECRET-1234567890"


class Stub:
    """A local server answering each POST with the next scripted ``(status, body, delay_s)``; records the
    requests. A callable ``body`` is called with the request's headers (a server that repeats them)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self, body_in):
                stub.requests.append((self.path, dict(self.headers), body_in))
                status, body, delay = stub.script.pop(0) if len(stub.script) > 1 else stub.script[0]
                body = body(dict(self.headers)) if callable(body) else body
                time.sleep(delay)
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self._answer(json.loads(self.rfile.read(n) or b"{}"))

            def do_GET(self):
                self._answer(None)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub_factory():
    made = []

    def make(script):
        made.append(Stub(script))
        return made[-1]

    yield make
    for s in made:
        s.close()


def _completion(text):
    return {"choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "length"}]}


def _model(url, **kw):
    kw.setdefault("backoff", 0.01)
    return HttpBackbone(url + "#stub-model", **kw)


def test_429_then_200_is_retried(stub_factory):
    s = stub_factory([(429, {"error": "slow down"}, 0), (200, _completion(" ok"), 0)])
    m = _model(s.url)
    assert m.generate(["hi"], max_new_tokens=2) == [" ok"]
    assert len(s.requests) == 2
    m.close()


def test_5xx_is_retried_then_raised_with_the_status(stub_factory):
    s = stub_factory([(503, {"error": "busy"}, 0), (200, _completion("x"), 0)])
    m = _model(s.url)
    assert m.generate(["hi"]) == ["x"]
    s2 = stub_factory([(500, {"error": "boom"}, 0)])
    m2 = _model(s2.url, max_retries=2)
    with pytest.raises(EndpointError, match="HTTP 500 after 3 attempts") as info:
        m2.generate(["hi"])
    assert info.value.status == 500 and len(s2.requests) == 3
    m.close(), m2.close()


def test_a_client_error_is_not_retried(stub_factory):
    s = stub_factory([(400, {"error": "bad request"}, 0)])
    m = _model(s.url)
    with pytest.raises(EndpointError, match="HTTP 400"):
        m.generate(["hi"])
    assert len(s.requests) == 1
    m.close()


def test_a_timeout_is_retried(stub_factory):
    s = stub_factory([(200, _completion("late"), 1.5), (200, _completion("fast"), 0)])
    m = _model(s.url, timeout=0.5)
    assert m.generate(["hi"]) == ["fast"]
    assert len(s.requests) == 2
    m.close()


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_is_retried_then_reported(stub_factory):
    # once the server has answered, a refused connection (a server restarting) gets every retry
    s = stub_factory([(200, _completion("x"), 0)])
    m = _model(s.url, max_retries=2)
    assert m.generate(["hi"]) == ["x"]
    s.close()
    t0 = time.perf_counter()
    with pytest.raises(EndpointUnreachableError, match="after 3 attempts"):
        m.generate(["hi"])
    assert time.perf_counter() - t0 >= 0.01 + 0.02  # two backoff waits
    m.close()


def test_nothing_listening_fails_fast():
    # before any answer, a refused connection is retried once: not the whole backoff (0.5+1+2+4+8 s)
    m = HttpBackbone(f"http://127.0.0.1:{_free_port()}/v1#m")
    t0 = time.perf_counter()
    with pytest.raises(EndpointUnreachableError, match="after 2 attempts") as info:
        m.generate(["hi"])
    assert time.perf_counter() - t0 < 0.5 + 2.0
    assert "ConnectError" in str(info.value) and "connect timeout 5 s" in str(info.value)
    m.close()


def _unanswered_port(stack):
    """A port whose connections are never accepted: a listener with backlog 0, its queue filled by sockets
    kept open, so the kernel drops further connection requests and a client waits for its connect timeout."""
    lsn = socket.socket()
    stack.append(lsn)
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(0)
    for _ in range(8):
        c = socket.socket()
        c.setblocking(False)
        stack.append(c)
        c.connect_ex(lsn.getsockname())
    time.sleep(0.2)
    return lsn.getsockname()[1]


def test_the_connect_timeout_bounds_a_connection_that_hangs():
    held = []
    try:
        port = _unanswered_port(held)
        m = HttpBackbone(f"http://127.0.0.1:{port}/v1#m?connect_timeout=0.5", backoff=0.05)
        t0 = time.perf_counter()
        with pytest.raises(EndpointUnreachableError, match="ConnectTimeout"):
            m.generate(["hi"])
        # two attempts of 0.5 s and one backoff of 0.05 s, far from the read timeout of 600 s
        assert 0.9 <= time.perf_counter() - t0 < 1.05 + 2.0
        m.close()
    finally:
        for sock in held:
            sock.close()


def test_the_connect_timeout_comes_from_the_keyword_the_spec_or_the_environment(monkeypatch):
    monkeypatch.delenv(CONNECT_TIMEOUT_ENV, raising=False)

    def connect(spec, **kw):
        return load_backbone(spec, **kw)._transport.connect_timeout

    assert connect("http://h:1/v1#m") == DEFAULT_CONNECT_TIMEOUT
    assert connect("http://h:1/v1#m?connect_timeout=2") == 2.0
    assert connect("http://h:1/v1#m?connect_timeout=2", connect_timeout=3) == 3.0
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV, "1.5")
    assert connect("http://h:1/v1#m") == 1.5
    assert connect("http://h:1/v1#?connect_timeout=2") == 2.0
    m = load_backbone("http://h:1/v1#m?timeout=1200&connect_timeout=2")
    assert (m._transport.timeout, m._transport.connect_timeout, m.model) == (1200.0, 2.0, "m")
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=CONNECT_TIMEOUT_ENV):
        load_backbone("http://h:1/v1#m")


def test_an_endpoint_without_prompt_logprobs_names_generate_mode(stub_factory):
    # what Ollama's and TGI's OpenAI routes do: a completion, no logprobs
    s = stub_factory([(200, _completion(" Paris"), 0)])
    m = _model(s.url)
    with pytest.raises(PromptLogprobsUnavailableError, match="--mode generate") as info:
        m.score_continuations_detailed("The capital of France is", [" Paris", " Rome"])
    assert "\n" not in str(info.value)
    m.close()


def test_the_key_is_sent_but_never_shown(stub_factory, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    s = stub_factory([(200, _completion("x"), 0)])
    m = load_backbone(s.url + "#stub-model", api_key_env="MY_KEY_VAR", backoff=0.01)
    m.generate(["hi"])
    assert s.requests[0][1].get("Authorization") == f"Bearer {KEY}"
    from ucs.evaluation.plan import model_identity

    shown = [repr(m), str(m.identity), json.dumps(model_identity(m, None)), repr(m._transport), str(vars(m))]
    assert all(KEY not in text for text in shown)
    assert m.identity == {"model": "stub-model", "host": s.url.split("/")[2], "engine": "http", "l2": False}
    m.close()


def test_the_model_comes_from_the_models_route(stub_factory):
    s = stub_factory([(200, {"data": [{"id": "served-model"}]}, 0)])
    m = HttpBackbone(s.url)
    assert m.identity["model"] == "served-model"
    s2 = stub_factory([(200, {"data": [{"id": "a"}, {"id": "b"}]}, 0)])
    with pytest.raises(ValueError, match=r"#<model>"):
        HttpBackbone(s2.url).load()
    m.close()


def test_model_spec_spelling():
    assert parse_endpoint("http://127.0.0.1:8080/v1#llama3:8b") == ("http://127.0.0.1:8080/v1", "llama3:8b")
    assert parse_endpoint("https://api.example.com/v1/") == ("https://api.example.com/v1", None)
    assert parse_endpoint("http://[::1]:8080/v1#m?connect_timeout=2") == ("http://[::1]:8080/v1", "m")
    with pytest.raises(ValueError, match="no host"):
        parse_endpoint("http:///v1")
    m = load_backbone("http://h:1/v1#m", engine="llama", layer="last", pooling="mean", n_gpu_layers=3)
    assert isinstance(m, HttpBackbone) and m.model == "m"


def test_the_pipeline_resolves_an_endpoint_backbone():
    from ucs.pipeline import PipelineConfig, load_backbone_for

    m = load_backbone_for(PipelineConfig(backbone="http://127.0.0.1:9/v1#served"))
    assert isinstance(m, HttpBackbone) and m.identity["host"] == "127.0.0.1:9"


MALFORMED = [
    ("http://127.0.0.1:99999/v1#m", "port must be a number from 1 to 65535, got '99999'"),
    ("http://127.0.0.1:abc/v1#m", "got 'abc'"),
    ("http://127.0.0.1:0/v1#m", "got '0'"),
    ("http:///v1#m", "names no host"),
    ("http://:8080/v1#m", "names no host"),
    ("ftp://127.0.0.1:8080/v1#m", "starts with http:// or https://"),
    ("htp://127.0.0.1:8080/v1#m", "starts with http:// or https://"),
    ("http:/127.0.0.1:8080/v1#m", "starts with http:// or https://"),
    ("http://[::1/v1#m", "is not a URL"),
    ("http://my host:8080/v1#m", "is not a host name"),
    ("http://h:8080/v1?model=m", "takes no query string"),
    ("http://h:8080/v1#m?retries=3", "unknown option 'retries'"),
    ("http://h:8080/v1#m?connect_timeout=0", "connect_timeout must be a number of seconds > 0"),
    ("http://h:8080/v1#m?timeout=soon", "timeout must be a number of seconds > 0"),
    ("http://h:8080/v1#m?batch=0", "batch must be a whole number >= 1, got '0'"),
    ("http://h:8080/v1#m?batch=2.5", "batch must be a whole number >= 1, got '2.5'"),
]


@pytest.mark.parametrize("spec, says", MALFORMED)
def test_a_malformed_spec_is_a_clear_error_naming_the_option(spec, says):
    with pytest.raises(ValueError, match=re.escape(says)) as info:
        load_backbone(spec)
    assert str(info.value).startswith("--model ") and "\n" not in str(info.value)
    secret = "al1ce:S3CRET-PW"
    with pytest.raises(ValueError) as info:
        load_backbone(spec.replace("://", f"://{secret}@", 1) if "://" in spec else spec)
    assert "S3CRET" not in str(info.value)


# ---------------------------------------------------------------- credentials never shown
PASSWORD = "Hunter2-PASSWORD-xyz"


def _echo_header(headers):
    """An error answer that repeats the request's credentials, as some servers and proxies do."""
    auth = headers.get("Authorization", "")
    return {"error": f"invalid api key: {auth}", "headers": headers, "raw": f"Authorization: {auth}"}


def _secrets(auth_header):
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    return [KEY, KEY[8:], PASSWORD, basic, auth_header.split()[-1] if auth_header else KEY]


@pytest.mark.parametrize("status", [401, 500, 200])
@pytest.mark.parametrize("given", ["key", "password"])
def test_a_server_repeating_the_credentials_never_shows_them(
    stub_factory, monkeypatch, caplog, status, given
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = _echo_header if status != 200 else (lambda h: {"no": "choices", "echo": _echo_header(h)})
    s = stub_factory([(status, body, 0)])
    url = s.url.replace("http://", f"http://alice:{PASSWORD}@") if given == "password" else s.url
    m = HttpBackbone(url + "#stub-model", max_retries=2, backoff=0.01)
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(ValueError) as info:
        warnings.simplefilter("always")
        m.generate(["hi"])
    sent = s.requests[0][1]["Authorization"]
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert sent == (f"Bearer {KEY}" if given == "key" else f"Basic {basic}")  # the URL's user wins
    assert len(s.requests) == (3 if status == 500 else 1)
    shown = [
        str(info.value),
        repr(info.value),
        caplog.text,
        *(str(w.message) for w in caught),
        repr(m),
        str(m.identity),
        repr(m._transport),
    ]
    assert "***" in str(info.value)
    for text in shown:
        assert not any(secret in text for secret in _secrets(sent)), text
    m.close()


def test_a_configuration_written_with_a_masked_url_runs_again(stub_factory, monkeypatch):
    from ucs.pipeline import PipelineConfig

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    s = stub_factory([(200, _completion("x"), 0)])
    url = s.url.replace("http://", f"http://alice:{PASSWORD}@") + "#stub-model"
    written = PipelineConfig(backbone=url).to_json()
    assert PASSWORD not in written and "http://***@127.0.0.1" in written
    again = PipelineConfig.from_json(written)
    m = load_backbone(again.backbone, backoff=0.01)
    assert m.generate(["hi"]) == ["x"] and s.requests[0][1]["Authorization"] == f"Bearer {KEY}"
    assert PipelineConfig(backbone=url).key_dict() == again.key_dict()  # the same resume key
    m.close()


def test_a_urls_password_is_masked_in_the_unreachable_error(caplog):
    caplog.set_level(logging.DEBUG)
    m = HttpBackbone(f"http://alice:{PASSWORD}@127.0.0.1:{_free_port()}/v1#m", backoff=0.01)
    with pytest.raises(EndpointUnreachableError) as info:
        m.generate(["hi"])
    assert "retrying" in caplog.text and "http://127.0.0.1" in str(info.value)
    assert PASSWORD not in str(info.value) + caplog.text and "alice" not in str(info.value) + caplog.text
    m.close()


def test_the_cli_never_shows_or_writes_the_credentials(stub_factory, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from ucs.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UCS_DEBUG", raising=False)
    s = stub_factory([(401, _echo_header, 0)])
    url = s.url.replace("http://", f"http://alice:{PASSWORD}@") + "#stub-model"
    out = tmp_path / "run"
    argv = [
        "evaluate",
        "--dataset",
        "sample",
        "--model",
        url,
        "--retrieval",
        "backbone",
        "--selectors",
        "random",
        "--runs",
        "1",
        "--test-size",
        "4",
        "--mode",
        "generate",
        "--out",
        str(out),
    ]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert s.requests and "***" in res.output, res.output
    texts = [res.output] + [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    sent = s.requests[0][1]["Authorization"]
    for text in texts:
        assert not any(secret in text for secret in _secrets(sent)), text[:500]


# ---------------------------------------------------------------- the echo parser on hand-written answers
def _choice(text, tokens, offsets, lps):
    return {"text": text, "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": lps}}


def test_parser_reads_the_continuation_after_the_prefix():
    prompt = "Label: card"
    c = _choice(prompt + "\n", ["Label", ":", " card", "\n"], [0, 5, 6, 11], [None, -1.0, -2.5, -0.1])
    assert continuation_logprob(c, prompt, len("Label:"), "x") == (-2.5, 1)


def test_parser_counts_a_straddling_token_in_the_continuation():
    # the server merged the prefix's ":" with the continuation's first characters
    prompt = "a:b c"
    c = _choice(prompt + "!", ["a", ":b", " c", "!"], [0, 1, 3, 5], [None, -1.0, -2.0, -0.5])
    assert continuation_logprob(c, prompt, 2, "x") == (-3.0, 2)


def test_parser_reanchors_offsets_that_leave_out_special_tokens():
    # llama-cpp-python renders <|im_start|> as "" and counts offsets without it
    prompt = "<|im_start|>user\nhi<|im_end|>\nLabel: card"
    text = prompt + "\n"
    toks = ["user", "\n", "hi", "", "\n", "Label", ":", " card", "\n"]
    offs = [0, 4, 5, 7, 7, 8, 13, 14, 19]
    c = _choice(text, toks, offs, [None, -1, -1, -1, -1, -1, -1, -4.0, -0.2])
    assert continuation_logprob(c, prompt, len(prompt) - 5, "x") == (-4.0, 1)


def test_parser_rejects_an_echo_without_the_generated_token():
    # llama-cpp-python's misaligned echo: the generated "." is in the text but has no entry
    prompt = "The capital is Paris"
    c = _choice(prompt + ".", ["The", " capital", " is", " Paris"], [0, 3, 11, 14], [None, -1.0, -1.0, -1.0])
    with pytest.raises(MisalignedLogprobsError, match="--mode generate"):
        continuation_logprob(c, prompt, len("The capital is"), "x")


def test_parser_accepts_an_end_of_sequence_answer():
    prompt = "Label: card"
    c = _choice(prompt, ["Label", ":", " card"], [0, 5, 6], [None, -1.0, -2.5])
    assert continuation_logprob(c, prompt, len("Label:"), "x") == (-2.5, 1)


# ---------------------------------------------------------------- scoring in lists of prompts (vLLM's form)
PREFIXES = [f"Request {i}: my card has not arrived yet\nLabel:" for i in range(3)]
LABELS = [
    " card_arrival",
    " balance",
    " lost_or_stolen_card",
    " transfer into account",
    " top up",
    " refund",
    " exchange rate",
]


def _scores(model):
    return [model.score_continuations_detailed(p, LABELS) for p in PREFIXES]


def _one_per_label():
    """The reference: the same double scored one request per label."""
    with CompletionsDouble() as d:
        m = HttpBackbone(d.url + "#double?batch=1", backoff=0.01)
        out = _scores(m)
        assert m.takes_lists is None and d.prompts == d.requests  # no list was ever sent
        m.close()
    return out


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.logprob, y.logprob)
        np.testing.assert_array_equal(x.n_tokens, y.n_tokens)


def test_a_list_taking_server_scores_a_prompts_labels_in_one_request_with_the_same_scores():
    ref = _one_per_label()
    with CompletionsDouble() as d:
        m = HttpBackbone(d.url + "#double", backoff=0.01)
        first = m.score_continuations_detailed(PREFIXES[0], LABELS)
        # the first prefix: its warm-up, one list of all labels, the two requests of the alignment check
        assert (d.requests, m.requests_sent, m.takes_lists) == (4, 4, True)
        rest = [m.score_continuations_detailed(p, LABELS) for p in PREFIXES[1:]]
        assert d.requests == 4 + len(PREFIXES[1:])  # then one request per prompt: no warm-up, no probe
        assert m.prompts_scored == len(PREFIXES) and m.requests_sent == d.requests
        m.close()
    _same(ref, [first, *rest])
    assert all(np.all(np.isfinite(r.logprob)) for r in ref) and len({float(r.logprob[0]) for r in ref}) == 3


def test_choices_are_matched_to_prompts_by_index_in_chunks_of_the_batch_option():
    ref = _one_per_label()
    with CompletionsDouble(reverse_choices=True) as d:
        m = load_backbone(d.url + "#double?batch=3", backoff=0.01)
        assert m.max_prompts_per_request == 3
        out = _scores(m)
        # 7 labels: lists of 3, 2 and 2; the first prefix adds its warm-up and the 2 probe requests
        assert d.requests == (1 + 3 + 2) + 3 * len(PREFIXES[1:])
        m.close()
    _same(ref, out)
    assert load_backbone("http://h:1/v1#m?batch=8", max_prompts_per_request=2).max_prompts_per_request == 2


def test_a_server_refusing_lists_is_scored_one_request_per_label_after_one_try(caplog):
    ref = _one_per_label()
    caplog.set_level(logging.INFO, logger="ucs.models.http")
    with CompletionsDouble(lists=False) as d:
        m = HttpBackbone(d.url + "#double", backoff=0.01)
        out = _scores(m)
        k = len(LABELS)
        # first prefix: warm-up, the refused list (answered 500, not retried), k singles, 2 probe requests;
        # every later prefix: warm-up and k singles, as before lists
        assert d.requests == (1 + 1 + k + 2) + (1 + k) * len(PREFIXES[1:])
        assert m.takes_lists is False and m.requests_sent == d.requests
        m.close()
    _same(ref, out)
    said = [r.getMessage() for r in caplog.records if "list of prompts" in r.getMessage()]
    assert len(said) == 1 and "HTTP 500" in said[0] and "one request per label" in said[0]


def _dropping_last_choice(double):
    answer = double.answer

    def wrong(path, body):
        status, out = answer(path, body)
        if isinstance(body, dict) and isinstance(body.get("prompt"), list) and out.get("choices"):
            out["choices"] = out["choices"][:-1]
        return status, out

    return wrong


def test_a_list_answered_with_missing_choices_is_refused_never_scored():
    ref = _one_per_label()
    with CompletionsDouble() as d:
        d.answer = _dropping_last_choice(d)
        m = HttpBackbone(d.url + "#double", backoff=0.01)
        out = _scores(m)  # the first list is answered wrongly: the backbone falls back
        assert m.takes_lists is False
        m.close()
    _same(ref, out)
    with CompletionsDouble() as d:
        m = HttpBackbone(d.url + "#double", backoff=0.01)
        m.score_continuations_detailed(PREFIXES[0], LABELS)
        d.answer = _dropping_last_choice(d)  # a server known to take lists answers one wrongly later
        with pytest.raises(
            WrongChoicesError, match=f"list of {len(LABELS)} prompts with {len(LABELS) - 1} choices"
        ):
            m.score_continuations_detailed(PREFIXES[1], LABELS)
        m.close()


def test_the_warm_up_is_sent_when_asked_and_a_single_label_goes_alone():
    with CompletionsDouble() as d:
        m = HttpBackbone(d.url + "#double", backoff=0.01, warm_prefix=True)
        _scores(m)
        assert d.requests == 4 + 2 * len(PREFIXES[1:])  # warm-up + one list per prefix
        m.close()
    with CompletionsDouble(lists=False) as d:
        m = HttpBackbone(d.url + "#double", backoff=0.01)
        m.score_continuations_detailed(PREFIXES[0], [" balance"])
        assert m.takes_lists is None  # one label proves nothing about lists
        assert d.requests == 1 + 1 + 2
        m.close()


def test_split_into_near_equal_chunks():
    from ucs.models.http import _split

    items = [str(i) for i in range(77)]
    assert [len(c) for c in _split(items, 64)] == [39, 38]
    assert [len(c) for c in _split(items, 128)] == [77]
    assert [len(c) for c in _split(items[:7], 3)] == [3, 2, 2] and sum(_split(items, 5), []) == items

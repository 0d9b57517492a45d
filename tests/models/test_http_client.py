"""The HTTP backbone's orchestration against a tiny local stub server: retries (429, 5xx, timeouts, refused
connections), the no-logprobs error, the API key kept out of repr / identity / manifests, the model spec, and the
echo parser on hand-written answers. The numbers themselves are tested against a real server in test_http_server.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("httpx", reason="the HTTP backbone needs the 'http' extra: pip install -e '.[http]'")

from ucs.models import load_backbone  # noqa: E402
from ucs.models.http import HttpBackbone, parse_endpoint  # noqa: E402
from ucs.models.http_client import EndpointError, EndpointUnreachableError  # noqa: E402
from ucs.models.http_logprobs import (MisalignedLogprobsError, PromptLogprobsUnavailableError,  # noqa: E402
                                      continuation_logprob)

KEY = "sk-test-SECRET-1234567890"


class Stub:
    """A local server answering each POST with the next scripted ``(status, body, delay_s)``; records requests."""

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


def test_a_refused_connection_is_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    m = _model(f"http://127.0.0.1:{port}/v1", max_retries=2)
    t0 = time.perf_counter()
    with pytest.raises(EndpointUnreachableError, match="after 3 attempts"):
        m.generate(["hi"])
    assert time.perf_counter() - t0 >= 0.01 + 0.02  # two backoff waits
    m.close()


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
    with pytest.raises(ValueError, match="endpoint URL"):
        parse_endpoint("http:///v1")
    m = load_backbone("http://h:1/v1#m", engine="llama", layer="last", pooling="mean", n_gpu_layers=3)
    assert isinstance(m, HttpBackbone) and m.model == "m"


def test_the_pipeline_resolves_an_endpoint_backbone():
    from ucs.pipeline import PipelineConfig, load_backbone_for

    m = load_backbone_for(PipelineConfig(backbone="http://127.0.0.1:9/v1#served"))
    assert isinstance(m, HttpBackbone) and m.identity["host"] == "127.0.0.1:9"


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

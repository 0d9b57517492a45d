"""The one redaction function: what it masks, what it leaves, and the secrets registered with it."""

from __future__ import annotations

import pytest

from ucs.utils import redact as R
from ucs.utils.redact import MASK, redact, redact_obj, register_secret, register_secret_env

CASES = [
    # (text, must not appear, must appear)
    (
        "invalid api key: Bearer sk-abcdefghij0123456789",
        ["sk-abc", "0123456789"],
        ["invalid api key: Bearer ***"],
    ),
    ("Authorization: Bearer tok_9f8e7d6c5b4a", ["tok_9f8e"], ["Authorization: ***"]),
    ('{"headers": {"authorization": "Bearer abc.def.ghi123"}}', ["abc.def"], ['"authorization": "***"']),
    ("{'Authorization': 'Basic YWxpY2U6czNjcmV0', 'Host': 'h'}", ["YWxpY2U6"], ["'Host': 'h'"]),
    ("proxy-authorization=Basic Zm9vOmJhcg==", ["Zm9vOmJhcg"], ["proxy-authorization=***"]),
    ("the key sk-proj-AbC_dEf-1234567890abcdef was refused", ["AbC_dEf"], ["the key *** was refused"]),
    ("anthropic sk-ant-api03-XXXXXXXXXXXXXXXXXXXX", ["api03"], ["anthropic ***"]),
    (
        "no answer from http://alice:hunter2x@127.0.0.1:8080/v1/completions",
        ["alice", "hunter2x"],
        ["http://***@127.0.0.1:8080/v1/completions"],
    ),
    ("https://token-only@api.example.com/v1#m", ["token-only"], ["https://***@api.example.com/v1#m"]),
    ("http://u:p@ss@host/v1", ["p@ss", "ss@host"], ["http://***@host/v1"]),
    ("GET https://api.example.com/v1?api_key=abc123&x=1", ["abc123"], ["?api_key=***&x=1"]),
]
KEPT = [
    "basic settings",
    "the bearer of bad news",
    "/home/me/sk-learn/data.csv",
    "http://127.0.0.1:8080/v1#m",
    "HTTP 500 after 3 attempts: boom",
    "model llama3:8b at host:port",
    "Bearer ***",
    "",
]


@pytest.mark.parametrize("text, hidden, shown", CASES)
def test_secrets_are_masked(text, hidden, shown):
    out = redact(text)
    assert all(h not in out for h in hidden), out
    assert all(s in out for s in shown), out
    assert redact(out) == out  # idempotent


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_registered_secrets_of_any_shape_are_masked(monkeypatch):
    monkeypatch.setattr(R, "_SECRETS", set())
    odd = "Zq!x odd-shaped 42"
    register_secret(odd)
    register_secret("pw")  # too short to mask by value: it would garble every "pw" in a message
    assert redact(f"server said {odd}; pw ok") == f"server said {MASK}; pw ok"
    assert redact(f"server said {odd}", registered=False) == f"server said {odd}"


def test_the_api_key_variables_are_read_at_each_call(monkeypatch):
    monkeypatch.setattr(R, "_ENV_NAMES", {"OPENAI_API_KEY"})
    monkeypatch.setenv("OPENAI_API_KEY", "plainkey-without-prefix")
    monkeypatch.setenv("MY_VENDOR_KEY", "vendor-key-777")
    assert redact("echo plainkey-without-prefix") == f"echo {MASK}"
    assert redact("echo vendor-key-777") == "echo vendor-key-777"
    register_secret_env("MY_VENDOR_KEY")
    assert redact("echo vendor-key-777") == f"echo {MASK}"
    monkeypatch.setenv("MY_VENDOR_KEY", "rotated-key-888")
    assert redact("echo rotated-key-888 vendor-key-777") == f"echo {MASK} vendor-key-777"


def test_a_secret_containing_another_is_masked_whole(monkeypatch):
    monkeypatch.setattr(R, "_SECRETS", set())
    register_secret("abcdef")
    register_secret("abcdef-ghijkl")
    assert redact("x abcdef-ghijkl y") == f"x {MASK} y"


def test_json_like_values_are_redacted_leaf_by_leaf():
    obj = {"backbone": "http://a:secret9@h/v1#m", "n": 3, "list": ("Bearer abcdefgh12", 1.5), "no": None}
    want = {"backbone": "http://***@h/v1#m", "n": 3, "list": ("Bearer ***", 1.5), "no": None}
    assert redact_obj(obj) == want

"""``ucs serve``'s app (:mod:`ucs.index.service`) through FastAPI's TestClient, and the real command on
127.0.0.1."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from ucs.index import SelectorIndex  # noqa: E402
from ucs.index.service import ServedIndex, create_app  # noqa: E402
from ucs.selectors.base import ORDERS  # noqa: E402
from ucs.testing import DummyEmbedder  # noqa: E402

TOKEN = "s3rve-t0ken-abcdefghijklmnop"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _examples(n: int = 40):
    return [
        {"text": f"utterance {i}", "label": f"l{i % 4}", "lang": "de" if i % 2 else "en"} for i in range(n)
    ]


@pytest.fixture(autouse=True)
def _served_are_closed(monkeypatch):
    """Every ServedIndex a test starts is closed after it, so its worker thread ends with the test (a live
    thread that set OpenBLAS's thread count keeps later tests' limits from taking effect)."""
    made = []

    class Closed(ServedIndex):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(sys.modules[__name__], "ServedIndex", Closed)
    yield
    for served in made:
        served.close()


@pytest.fixture()
def folder(tmp_path):
    d = tmp_path / "index"
    SelectorIndex(DummyEmbedder(dim=16), "topk", input_keys=["text"], output_key="label").fit(
        _examples()
    ).save(d)
    return d


def _client(folder: Path, token=TOKEN) -> TestClient:
    return TestClient(
        create_app(ServedIndex(folder, embedder=DummyEmbedder(dim=16), reload_interval_s=0), token=token)
    )


def _local(folder: Path) -> SelectorIndex:
    return SelectorIndex.load(folder, embedder=DummyEmbedder(dim=16))


def test_select_matches_the_index(folder):
    res = _client(folder).post("/v1/select", json={"query": "utterance 5", "k": 3}).json()
    want = _local(folder).select("utterance 5", 3)
    (row,) = res["results"]
    assert res["version"] == 1 and res["method"] == "topk"
    assert row["indices"] == want.indices.tolist() and row["examples"] == want.examples
    assert row["cluster_ids"] == want.cluster_ids.tolist()
    assert row["scores"] == pytest.approx(want.scores.tolist())
    assert row["phi"] == pytest.approx(want.phi) and row["n_matched"] is None


def test_select_queries_order_where_dedupe(folder):
    c, local = _client(folder), _local(folder)
    body = {
        "queries": ["utterance 1", "utterance 2"],
        "k": 4,
        "order": "similar_first",
        "where": {"lang": "de"},
        "dedupe": 0.99,
        "example_keys": ["text"],
    }
    res = c.post("/v1/select", json=body).json()
    want = local.select(
        ["utterance 1", "utterance 2"],
        4,
        order="similar_first",
        where={"lang": "de"},
        dedupe=0.99,
        example_keys=["text"],
    )
    assert [r["indices"] for r in res["results"]] == [w.indices.tolist() for w in want]
    assert all(r["n_matched"] == 20 for r in res["results"])
    assert all(set(e) == {"text"} for r in res["results"] for e in r["examples"])
    assert all(local.examples_[i]["lang"] == "de" for r in res["results"] for i in r["indices"])
    few = c.post("/v1/select", json={"query": "utterance 1", "k": 4, "where": {"lang": "de", "label": "l1"}})
    assert few.json()["results"][0]["n_matched"] == 10


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"k": 3}, 422, "query or queries"),
        ({"query": "a", "queries": ["b"]}, 422, "not both"),
        ({"query": "a", "k": -1}, 422, "greater than or equal"),
        ({"query": "a", "order": "sideways"}, 422, "similar_first"),
        ({"query": "a", "dedupe": 1.5}, 422, "less than or equal"),
        ({"query": "a", "kk": 3}, 422, "extra"),
        ({"query": "a", "where": {"colour": "red"}}, 400, "colour"),
    ],
)
def test_bad_selects_say_what_is_wrong(folder, body, status, words):
    r = _client(folder).post("/v1/select", json=body)
    assert r.status_code == status and words in r.text


def test_openapi_documents_the_models_and_orders(folder):
    c = _client(folder)
    spec = c.get("/openapi.json").json()
    assert {"/v1/select", "/v1/examples", "/health"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert {"SelectRequest", "SelectResponse", "Selection", "AddRequest", "Health"} <= set(schemas)
    order = schemas["SelectRequest"]["properties"]["order"]["anyOf"][0]
    assert tuple(order["enum"]) == ORDERS
    assert c.get("/docs").status_code == 200


def test_health(folder):
    h = _client(folder).get("/health").json()
    assert h == {
        "status": "ok",
        "version": 1,
        "n_examples": 40,
        "n_clusters": h["n_clusters"],
        "method": "topk",
        "adds_enabled": True,
    }
    assert _client(folder, token=None).get("/health").json()["adds_enabled"] is False


def test_add_needs_the_token(folder):
    body = {"examples": [{"text": "a new one", "label": "l1", "lang": "en"}]}
    assert _client(folder, token=None).post("/v1/examples", json=body, headers=AUTH).status_code == 403
    c = _client(folder)
    r = c.post("/v1/examples", json=body)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert (
        c.post("/v1/examples", json=body, headers={"Authorization": "Bearer wrong-token-123456"}).status_code
        == 403
    )
    assert SelectorIndex.latest_version(folder) == 1
    r = c.post("/v1/examples", json=body, headers=AUTH)
    assert r.status_code == 200 and r.json()["version"] == 2 and r.json()["n_examples"] == 41
    assert SelectorIndex.latest_version(folder) == 2 and _local(folder).n_examples_ == 41
    hit = c.post("/v1/select", json={"query": "a new one", "k": 1}).json()
    assert hit["version"] == 2 and hit["results"][0]["examples"][0]["text"] == "a new one"


def test_bad_examples_are_refused(folder):
    c = _client(folder)
    assert c.post("/v1/examples", json={"examples": []}, headers=AUTH).status_code == 422
    r = c.post("/v1/examples", json={"examples": [{"text": "x", "label": None}]}, headers=AUTH)
    assert r.status_code == 400 and "label" in r.text
    assert SelectorIndex.latest_version(folder) == 1


def test_token_never_logged(folder, caplog):
    caplog.set_level(logging.DEBUG)
    c = _client(folder)
    c.post("/v1/examples", json={"examples": [{"text": "n", "label": "l0"}]}, headers=AUTH)
    c.post(
        "/v1/examples",
        json={"examples": [{"text": "n", "label": "l0"}]},
        headers={"Authorization": "Bearer x"},
    )
    c.post("/v1/examples", json={"examples": [{"text": "x", "label": None}]}, headers=AUTH)
    assert "added 1 examples" in caplog.text
    assert TOKEN not in caplog.text
    from ucs.utils.redact import redact

    assert TOKEN not in redact(f"header {TOKEN}")


def _wait_version(c: TestClient, version: int, timeout: float = 30.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        h = c.get("/health").json()
        if h["version"] == version:
            return h
        time.sleep(0.05)
    raise AssertionError(f"version {version} was not served within {timeout} s")


def test_reloads_a_version_saved_by_another_writer(folder):
    c = _client(folder)
    assert c.get("/health").json()["version"] == 1
    other = _local(folder)
    other.add_examples([{"text": "from elsewhere", "label": "l2", "lang": "de"}])
    other.save(folder)
    h = _wait_version(c, 2)
    assert h["n_examples"] == 41
    r = c.post("/v1/select", json={"query": "from elsewhere", "k": 1}).json()
    assert r["version"] == 2 and r["results"][0]["examples"][0]["text"] == "from elsewhere"


def test_request_in_flight_finishes_on_its_version(folder):
    served = ServedIndex(folder, embedder=DummyEmbedder(dim=16), reload_interval_s=0)
    old = served.current()
    other = _local(folder)
    other.add_examples([{"text": "later", "label": "l2"}])
    other.save(folder)
    new = served.reload()
    assert new.version_ == 2 and old.version_ == 1
    assert (
        old.select("utterance 3", 2).indices.tolist()
        == _local(folder).select("utterance 3", 2).indices.tolist()
    )


def test_a_damaged_version_is_not_served(folder, caplog):
    served = ServedIndex(folder, embedder=DummyEmbedder(dim=16), reload_interval_s=0)
    other = _local(folder)
    other.add_examples([{"text": "later", "label": "l2"}])
    other.save(folder)
    (folder / "versions" / "2" / "examples.json").write_text("[]")
    assert served.reload(2).version_ == 1
    assert "version 2" in caplog.text and "not loaded" in caplog.text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ucs_serve_answers_on_localhost(tmp_path, minilm):
    folder = tmp_path / "index"
    SelectorIndex(minilm, "topk", input_keys=["text"], output_key="label").fit(_examples(12)).save(folder)
    port = _free_port()
    env = {**os.environ, "UCS_SERVE_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ucs.cli", "serve", str(folder), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url, end = f"http://127.0.0.1:{port}", time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < end, "ucs serve did not start"
                time.sleep(0.3)
        res = httpx.post(f"{url}/v1/select", json={"query": "utterance 7", "k": 2}).json()
        want = SelectorIndex.load(folder, embedder=minilm).select("utterance 7", 2)
        assert res["results"][0]["indices"] == want.indices.tolist()
        assert "utterance 7" in [e["text"] for e in res["results"][0]["examples"]]
        assert (
            httpx.post(
                f"{url}/v1/examples", json={"examples": [{"text": "new", "label": "l1"}]}, headers=AUTH
            ).json()["version"]
            == 2
        )
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert TOKEN not in err


@pytest.mark.parametrize(
    "args, words",
    [
        (["{missing}"], "INDEX"),
        (["{empty}"], "no saved index"),
        (["{index}", "--port", "70000"], "--port"),
        (["{index}", "--port", "{taken}"], "cannot listen"),
    ],
)
def test_serve_start_up_errors_exit_2(folder, tmp_path, args, words):
    from typer.testing import CliRunner

    from ucs.cli import app

    (tmp_path / "empty").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        names = {
            "missing": tmp_path / "nope",
            "empty": tmp_path / "empty",
            "index": folder,
            "taken": taken.getsockname()[1],
        }
        r = CliRunner().invoke(app, ["serve"] + [a.format(**names) for a in args])
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output

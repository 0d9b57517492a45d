"""ucs.compare and ``ucs compare``: every selector on the same held-out queries, ranked against TopK, with a
real embedder, a real backbone, a real langchain-core Runnable and a real DSPy program."""

from __future__ import annotations

import csv
import importlib.util
import json

import pytest

pytestmark = pytest.mark.slow  # all-MiniLM-L6-v2, SmolLM2


@pytest.fixture(scope="module")
def small(banking_examples):
    """The 600 BANKING77 examples restricted to their 6 most frequent labels (short label lists: cheap
    prompts)."""
    examples, _ = banking_examples
    counts = {}
    for e in examples:
        counts[e["label"]] = counts.get(e["label"], 0) + 1
    top = set(sorted(counts, key=lambda y: (-counts[y], y))[:6])
    return [e for e in examples if e["label"] in top]


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("llama_cpp")
    from ucs.models import load_backbone

    m = load_backbone("smollm2", engine="llama", n_threads=2, context_length=1024).load()
    yield m
    m.close()


def _vote(text, demos):
    """The no-LM baseline as a predictor: the majority label of the demonstrations."""
    labels = [d["label"] for d in demos]
    return max(labels, key=lambda y: (labels.count(y), -labels.index(y)))


def test_a_callable_is_ranked_against_topk_resumed_and_saved_as_an_index(small, minilm, tmp_path):
    from ucs import SelectorIndex, compare

    calls = []

    def counted(text, demos):
        calls.append(text)
        return _vote(text, demos)

    res = compare(
        small,
        counted,
        selectors=["random", "topk", "mmr"],
        k=6,
        n_queries=24,
        embedder=minilm,
        out=tmp_path / "c",
        cache_dir=tmp_path / "cache",
    )
    # 4 cells (the reference topk:6:selected, topk:6:vote_last, mmr:6:vote_last, random:6:selected) on the 12
    # validation queries, then the validated cell and the reference on the 12 test queries
    n_calls = res.info["race"]["asked"] + sum(r["n_queries"] for r in res.test_rows)
    assert len(calls) == n_calls and res.n_queries == 24 and res.info["race"]["validation_queries"] == 12
    rows = {r["cell"]: r for r in res.rows}
    assert (
        rows["topk:6:selected"]["delta"] is None and rows["random:6:selected"]["delta"] < 0
    )  # random votes badly
    assert rows["topk:6:selected"]["own_label"] > rows["random:6:selected"]["own_label"]
    assert res.rows[0]["accuracy"] >= res.rows[-1]["accuracy"]  # ranked, best first
    assert res.recommended in ("topk", "mmr")
    for (
        r
    ) in res.rows:  # this predictor IS the majority vote of its demonstrations: no gain over the no-LM vote
        assert r["vote"] == pytest.approx(r["accuracy"]) and r["over_vote"] == pytest.approx(0.0)
    assert "no-LM vote" in res.to_markdown()
    index = SelectorIndex.load(tmp_path / "c" / "index", embedder=minilm)
    assert index.method_ == res.recommended and len(index.examples_) == len(small)
    # the recommendation opens as it is in both frameworks; the packaged MiniLM is found without being named
    query = {"text": small[0]["text"]}
    want = index.select(query, k=6).indices.tolist()
    assert SelectorIndex.load(tmp_path / "c" / "index").select(query, k=6).indices.tolist() == want
    if importlib.util.find_spec("langchain_core") is not None:
        from ucs.integrations.langchain import UCSExampleSelector

        lc = UCSExampleSelector.load(tmp_path / "c" / "index", k=6)
        assert [e["text"] for e in lc.select_examples(query)] == [index.examples_[i]["text"] for i in want]
    if importlib.util.find_spec("dspy") is not None:
        import dspy
        from dspy.utils.dummies import DummyLM

        from ucs.integrations.dspy import UCSFewShot

        program = UCSFewShot.attach(
            dspy.Predict("text -> label"), SelectorIndex.load(tmp_path / "c" / "index"), k=6
        )
        with dspy.context(lm=DummyLM([{"label": "x"}])):
            program(text=query["text"])
        assert program.ucs_selection.indices.tolist() == want
        assert [d["text"] for d in program.demos] == [index.examples_[i]["text"] for i in want]
    assert "Δ vs reference" in (tmp_path / "c" / "compare.md").read_text()
    assert "<table>" in (tmp_path / "c" / "compare.html").read_text()
    embedded = []
    real_embed = minilm.embed
    saved = (tmp_path / "c" / "index" / "CURRENT").stat().st_mtime_ns

    def counting_embed(texts, *a, **kw):
        embedded.append(len(texts))
        return real_embed(texts, *a, **kw)

    minilm.embed = counting_embed
    try:
        again = compare(
            small,
            counted,
            selectors=["random", "topk", "mmr"],
            k=6,
            n_queries=24,
            embedder=minilm,
            out=tmp_path / "c",
            cache_dir=tmp_path / "cache",
        )
    finally:
        del minilm.embed
    assert len(calls) == n_calls and again.rows == res.rows  # resumed: nothing asked twice
    # ... nothing embedded or fitted again either: the saved index is verified and kept
    assert embedded == [] and (tmp_path / "c" / "index" / "CURRENT").stat().st_mtime_ns == saved
    assert again.info["embed_ms"] == pytest.approx(res.info["embed_ms"])
    with pytest.raises(ValueError, match="other inputs .differs in: .*k: 6 → 5"):
        compare(small, counted, selectors=["topk"], k=5, n_queries=24, embedder=minilm, out=tmp_path / "c")


def test_a_real_backbone_through_a_langchain_runnable_and_as_a_predictor(small, minilm, smollm2, tmp_path):
    pytest.importorskip("langchain_core")
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda

    from ucs import compare
    from ucs.experiments.predictors import backbone_predictor

    labels = sorted({e["label"] for e in small})
    direct = backbone_predictor(smollm2, labels)
    prompt = PromptTemplate.from_template("{query}")
    seen = []

    def answer(inputs):
        seen.append(len(inputs["examples"]))
        return direct(prompt.format(query=inputs["query"]), inputs["examples"])

    chain = RunnableLambda(lambda d: d) | RunnableLambda(answer)
    res = compare(small, chain, selectors=["topk", "random"], k=4, n_queries=12, embedder=minilm)
    ref = compare(small, direct, selectors=["topk", "random"], k=4, n_queries=12, embedder=minilm)
    assert seen and set(seen) == {4}
    assert [r["accuracy"] for r in res.rows] == [r["accuracy"] for r in ref.rows]
    acc = {r["cell"]: r["accuracy"] for r in res.rows}
    # SmolLM2 on six intents: nearest-neighbour demonstrations well above chance (1/6) and above random ones
    assert acc["topk:4:selected"] >= 0.5 and acc["topk:4:selected"] > acc["random:4:selected"], acc


def test_a_dspy_program_gets_the_demonstrations_and_its_metric_decides(small, minilm):
    dspy = pytest.importorskip("dspy")
    from dspy.utils.dummies import DummyLM

    from ucs import compare

    program = dspy.Predict("text -> label")
    lm = DummyLM([{"label": small[0]["label"]}] * 20)
    with dspy.context(lm=lm):
        res = compare(
            small,
            program,
            selectors=["topk"],
            k=3,
            n_queries=10,
            embedder=minilm,
            metric=lambda ex, pred: pred.label == ex.label,
        )
    acc = res.rows[0]["accuracy"]
    assert 0.0 <= acc <= 1.0
    prompt = json.dumps(lm.history[-1]["messages"])
    assert prompt.count("[[ ## label ## ]]") > 3  # the three demonstrations are in the prompt


def test_cli_estimates_asks_and_runs_on_a_user_csv(small, minilm, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ucs.cli import app
    import ucs.commands.compare as cmd

    table = tmp_path / "mine.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["utterance", "intent"])
        for e in small:
            w.writerow([e["text"] + ("\nsecond line" if len(e["text"]) % 7 == 0 else ""), e["label"]])
    base = [
        "compare",
        str(table),
        "--text-column",
        "utterance",
        "--label-column",
        "intent",
        "--selectors",
        "topk,random",
        "--k",
        "3",
        "--queries",
        "8",
        "--out",
        str(tmp_path / "o"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    r = CliRunner().invoke(app, base + ["--dry-run"])
    assert r.exit_code == 0, r.output
    # at most 3 cells (topk in orders selected and vote_last, random) × 4 validation queries + 2 × 4 test
    # queries
    assert "cost: 20 prompts (6 labels scored in each)" in r.output and not (tmp_path / "o").exists()
    monkeypatch.setattr(cmd, "ASK_ABOVE_MINUTES", 0.0)
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 2 and "pass --yes" in r.output
    r = CliRunner().invoke(app, base + ["--yes"])
    assert r.exit_code == 0, r.output
    assert "recommended:" in r.output and (tmp_path / "o" / "index" / "CURRENT").is_file()
    r = CliRunner().invoke(app, base)  # the same command again: nothing is left, so nothing to ask
    assert r.exit_code == 0, r.output
    assert "cost: 0 prompts" in r.output and "answered in" in r.output and "recommended:" in r.output
    r = CliRunner().invoke(
        app, ["compare", str(table), "--selectors", "topk,nope", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and "--selectors" in r.output


def test_cli_against_a_local_openai_compatible_server(small, minilm, tmp_path):
    """``ucs compare --model http://127.0.0.1:PORT/v1`` against llama-cpp-python's server serving SmolLM2: the
    same ranking machinery over HTTP, prompts through ChatML (the server aligns echoed log-probabilities only
    for prompts that start with the model's BOS token)."""
    from ucs.models.http_server import local_llama_server, missing_server_modules

    if missing_server_modules():
        pytest.skip(f"llama-cpp-python's server extra is missing: {missing_server_modules()}")
    pytest.importorskip("httpx")
    from typer.testing import CliRunner

    from ucs.cli import app
    from ucs.utils.weights import smollm2_gguf_path

    three = sorted({e["label"] for e in small})[
        :3
    ]  # llama-cpp-python's server echoes slowly: 3 labels, 3 queries
    table = tmp_path / "mine.jsonl"
    table.write_text("".join(json.dumps(e) + "\n" for e in small if e["label"] in three), encoding="utf-8")
    with local_llama_server(smollm2_gguf_path(), n_threads=2, log=tmp_path / "server.log") as url:
        r = CliRunner().invoke(
            app,
            [
                "compare",
                str(table),
                "--model",
                url,
                "--chat-template",
                "chatml",
                "--selectors",
                "topk,random",
                "--k",
                "1",
                "--queries",
                "3",
                "--yes",
                "--out",
                str(tmp_path / "o"),
                "--cache-dir",
                str(tmp_path / "cache"),
            ],
        )
    assert r.exit_code == 0, r.output
    assert "cost: 7 prompts (3 labels scored in each)" in r.output  # 3 cells × 1 validation + 2 × 2 test
    saved = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert {row["selector"] for row in saved["rows"]} == {"topk", "random"}
    assert all(row["n_queries"] == 1 for row in saved["rows"]) and saved["split"]["test"] == 2
    assert saved["recommended"]["selector"] in ("topk", "random")
    assert (tmp_path / "o" / "index" / "CURRENT").is_file()


def test_set_bsr_reads_the_token_embeddings_of_the_pools_one_pass(small, minilm, tmp_path, monkeypatch):
    """With Set-BSR in the grid, the pool is encoded once: the sentence pass keeps its token embeddings for
    Set-BSR (remember_tokens), and its selections are those of a comparison that encodes the pool twice."""
    from ucs import compare
    from ucs.embedding import load_retrieval_embedder

    def run(emb, out):
        passes = []
        real = emb.load()._st.encode
        monkeypatch.setattr(
            emb._st,
            "encode",
            lambda texts, **kw: (
                passes.append((len(texts), kw.get("output_value", "sentence_embedding"))) or real(texts, **kw)
            ),
        )
        res = compare(
            small,
            _vote,
            selectors=["topk", "bsr"],
            k=4,
            n_queries=12,
            embedder=emb,
            out=out,
            cache_dir=tmp_path / f"cache-{out.name}",
            early_stop=False,
        )
        return res, [p for p in passes if p[0] == len(small) - 12]  # the pool's passes (pool = the rest)

    shared, pool_passes = run(minilm, tmp_path / "one")
    assert pool_passes and all(kind is None for _, kind in pool_passes)  # sentences and tokens in one pass
    fresh = load_retrieval_embedder("all-minilm-l6-v2")
    fresh.remember_tokens = None  # an embedder without the method: two passes, as before
    twice, pool_passes = run(fresh, tmp_path / "two")
    assert {kind for _, kind in pool_passes} == {"sentence_embedding", "token_embeddings"}
    from ucs.evaluation.run_folder import RunFolder

    picks = [
        sorted((r["method"], r["query"], r["selected"]) for r in RunFolder(tmp_path / d).read_records())
        for d in ("one", "two")
    ]
    assert any(m.startswith("bsr:") for m, _, _ in picks[0]) and picks[0] == picks[1]

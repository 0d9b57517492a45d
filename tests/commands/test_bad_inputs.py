"""The bad-input battery: ordinary mistakes against every ``ucs`` command and the public loaders.

Each case must end with exit code 2, a message naming the parameter at fault, and no traceback. Cases are
chosen to fail before any model is loaded (``--model dummy`` where a run could start), so the battery is fast.
The case counts per command are recorded in docs/errors.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ucs.cli import app

N, D = 40, 8


def _files(root: Path) -> dict:
    """Good and bad input files under ``root``; returns ``{name: path string}``."""
    rng = np.random.default_rng(0)
    f: dict = {}

    def npy(name, arr, **kw):
        p = root / name
        np.save(p, arr, **kw)
        f[name] = str(p)

    npy("pool.npy", rng.normal(size=(N, D)))
    npy("q.npy", rng.normal(size=(3, D)))
    npy("ids.npy", rng.integers(0, 6, N))
    npy("ids_short.npy", rng.integers(0, 6, N - 1))
    npy("ids_float.npy", rng.integers(0, 6, N) + 0.5)
    npy("ids_neg.npy", np.full(N, -5))
    npy("ids_2d.npy", rng.integers(0, 6, (N, 2)))
    nan = rng.normal(size=(N, D))
    nan[3, 2] = np.nan
    npy("nan.npy", nan)
    inf = rng.normal(size=(N, D))
    inf[0, 0] = np.inf
    npy("inf.npy", inf)
    npy("huge.npy", rng.normal(size=(N, D)) * 1e200)
    npy("3d.npy", rng.normal(size=(2, 2, 2)))
    npy("1d.npy", rng.normal(size=D))
    npy("empty.npy", np.zeros((0, D)))
    npy("one_row.npy", rng.normal(size=(1, D)))
    npy("str.npy", np.array(["a", "b"]))
    npy("q_wrongdim.npy", rng.normal(size=(3, D + 3)))
    npy("pickle.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for name, text in {
        "notnpy.npy": "this is not an array\n",
        "texts.txt": "\n".join(f"text {i}" for i in range(N)) + "\n",
        "texts_short.txt": "a\nb\nc\n",
        "texts_blank.txt": "".join(f"text {i}\n" if i != 5 else "   \n" for i in range(N)),
        "ids.txt": "\n".join(str(i % 5) for i in range(N)) + "\n",
        "ids_words.txt": "one\ntwo\n",
        "good.csv": "text,label,split\n"
        + "".join(f"row {i},{'ab'[i % 2]},{'pool' if i < 16 else 'test'}\n" for i in range(20)),
        "no_label.csv": "text,category\nhello,a\n",
        "empty_label.csv": "text,label\nhello,a\nworld,\nagain,b\n",
        "bad_split.csv": "text,label,split\nhello,a,pool\nworld,b,validation\n",
        "ragged.csv": "text,label\nhello,a,extra\n",
        "one_row.csv": "text,label\nhello,a\n",
        "only_test.csv": "text,label,split\nhello,a,test\nworld,b,test\n",
        "bad.jsonl": '{"text": "a", "label": "x"}\n{not json\n{"text": "b", "label": "y"}\n',
        "list.jsonl": '["a", "x"]\n',
        "null_label.jsonl": '{"text": "a", "label": null}\n',
        "empty_label.jsonl": '{"text": "a", "label": "x"}\n{"text": "b", "label": "  "}\n',
        "notlist.json": '{"text": "a"}\n',
        "table.xlsx": "not a table\n",
        "bad_config.json": "{not json",
        "list_config.json": "[1, 2]",
        "unknown_config.json": json.dumps({"no_such_setting": 1}),
        "badvalue_config.json": json.dumps({"budget": -4}),
        "tune_out_file": "a file where a folder is expected\n",
        "empty.txt": "",
        "unclosed.j2": "{% for d in demonstrations %}{{ d.text }}\n",
        "undefined.j2": "{{ querry }}\n",
        "one_label.csv": "text,label\n" + "".join(f"row {i},a\n" for i in range(10)),
        "blank_text.csv": "text,label\nrow 1,a\nrow 2,b\n  ,a\nrow 4,b\n",
    }.items():
        p = root / name
        p.write_text(text, encoding="utf-8")
        f[name] = str(p)
    (root / "latin1.csv").write_bytes("text,label\ncaf\xe9,a\n".encode("latin-1"))
    f["latin1.csv"] = str(root / "latin1.csv")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    f["latin1.txt"] = str(root / "latin1.txt")
    (root / "dir").mkdir()
    (root / "evaluated").mkdir()  # another command's run folder
    (root / "evaluated" / "manifest.json").write_text('{"key": {}}', encoding="utf-8")
    f["evaluated"] = str(root / "evaluated")
    (root / "compared").mkdir()  # a `ucs compare` folder
    (root / "compared" / "compare.json").write_text('{"key": {}}', encoding="utf-8")
    f["compared"] = str(root / "compared")
    f["dir"] = str(root / "dir")
    f["missing"] = str(root / "missing.npy")
    f["missing.csv"] = str(root / "missing.csv")
    f["out"] = str(root / "out")
    f["unwritable"] = "/proc/ucs-no-such-dir/out"
    return f


# (id, argv template, parameter the message must name). "{name}" is replaced by the path of file ``name``.
SELECT = [
    ("pool-missing", "select --pool {missing}", "--pool"),
    ("pool-is-dir", "select --pool {dir}", "--pool"),
    ("pool-not-npy", "select --pool {notnpy.npy}", "--pool"),
    ("pool-pickled", "select --pool {pickle.npy}", "--pool"),
    ("pool-nan", "select --pool {nan.npy}", "--pool"),
    ("pool-inf", "select --pool {inf.npy}", "--pool"),
    ("pool-overflowing", "select --pool {huge.npy} --method dpp", "--pool"),
    ("pool-3d", "select --pool {3d.npy}", "--pool"),
    ("pool-1d", "select --pool {1d.npy}", "--pool"),
    ("pool-empty", "select --pool {empty.npy}", "--pool"),
    ("pool-strings", "select --pool {str.npy}", "--pool"),
    ("queries-missing", "select --pool {pool.npy} --queries {missing}", "--queries"),
    ("queries-wrong-dim", "select --pool {pool.npy} --queries {q_wrongdim.npy}", "--queries"),
    ("queries-nan", "select --pool {pool.npy} --queries {nan.npy}", "--queries"),
    (
        "ids-short",
        "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids_short.npy}",
        "--cluster-ids",
    ),
    (
        "ids-float",
        "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids_float.npy}",
        "--cluster-ids",
    ),
    (
        "ids-negative",
        "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids_neg.npy}",
        "--cluster-ids",
    ),
    ("ids-2d", "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids_2d.npy}", "--cluster-ids"),
    ("ids-missing", "select --pool {pool.npy} --cluster-ids {missing}", "--cluster-ids"),
    ("method", "select --pool {pool.npy} --method nope", "--method"),
    ("budget-negative", "select --pool {pool.npy} --queries {q.npy} --budget -1", "--budget"),
    (
        "estimator",
        "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --lam 0.5 --estimator nope",
        "--estimator",
    ),
    (
        "design",
        "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --lam 0.5 --design nope",
        "--design",
    ),
    (
        "corpus-prior",
        "select --pool {pool.npy} --method votek --cluster-ids {ids.npy} --lam 0.5 --corpus-prior nope",
        "--corpus-prior",
    ),
    ("lam-without-ids", "select --pool {pool.npy} --queries {q.npy} --lam 0.5", "--lam"),
    ("lam-nan", "select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --lam nan", "--lam"),
    (
        "pool-texts-short",
        "select --pool {pool.npy} --queries {q.npy} --pool-texts {texts_short.txt}",
        "--pool-texts",
    ),
    (
        "pool-texts-blank-line",
        "select --pool {pool.npy} --queries {q.npy} --pool-texts {texts_blank.txt}",
        "--pool-texts",
    ),
    (
        "pool-texts-missing",
        "select --pool {pool.npy} --queries {q.npy} --pool-texts {missing}",
        "--pool-texts",
    ),
    (
        "pool-texts-not-utf8",
        "select --pool {pool.npy} --queries {q.npy} --pool-texts {latin1.txt}",
        "--pool-texts",
    ),
    ("out-is-dir", "select --pool {pool.npy} --queries {q.npy} --method topk --out {dir}", "--out"),
    (
        "out-unwritable",
        "select --pool {pool.npy} --queries {q.npy} --method topk --out {unwritable}.json",
        "--out",
    ),
    ("out-suffix", "select --pool {pool.npy} --queries {q.npy} --method topk --out {out}.xlsx", "--out"),
]
COVERAGE = [
    ("clusters-missing", "coverage --clusters {missing} --subset 0,1", "--clusters"),
    ("clusters-dir", "coverage --clusters {dir} --subset 0,1", "--clusters"),
    ("clusters-words", "coverage --clusters {ids_words.txt} --subset 0,1", "--clusters"),
    ("clusters-float", "coverage --clusters {ids_float.npy} --subset 0,1", "--clusters"),
    ("clusters-negative", "coverage --clusters {ids_neg.npy} --subset 0,1", "--clusters"),
    ("subset-out-of-range", "coverage --clusters {ids.txt} --subset 0,99", "--subset"),
    ("subset-not-ints", "coverage --clusters {ids.txt} --subset a,b", "--subset"),
    ("subset-negative", "coverage --clusters {ids.txt} --subset -1,2", "--subset"),
    ("estimator", "coverage --clusters {ids.txt} --subset 0,1 --estimator nope", "--estimator"),
    ("design", "coverage --clusters {ids.txt} --subset 0,1 --design nope", "--design"),
    ("t-negative", "coverage --clusters {ids.txt} --subset 0,1 --t -1", "--t"),
    ("alpha-range", "coverage --clusters {ids.txt} --subset 0,1 --alpha 5", "--alpha"),
    ("bin-size-zero", "coverage --clusters {ids.txt} --subset 0,1 --bin-size 0", "--bin-size"),
    ("demo-with-clusters", "coverage --demo --clusters {ids.txt}", "--demo"),
    ("nothing-given", "coverage", "--clusters"),
]
CLUSTER = [
    ("embeddings-missing", "cluster {missing} {out}", "EMBEDDINGS"),
    ("embeddings-dir", "cluster {dir} {out}", "EMBEDDINGS"),
    ("embeddings-not-npy", "cluster {notnpy.npy} {out}", "EMBEDDINGS"),
    ("embeddings-nan", "cluster {nan.npy} {out}", "EMBEDDINGS"),
    ("embeddings-1d", "cluster {1d.npy} {out}", "EMBEDDINGS"),
    ("embeddings-one-row", "cluster {one_row.npy} {out}", "EMBEDDINGS"),
    ("q-above-one", "cluster {pool.npy} {out} --dbscan-q 2", "--dbscan-q"),
    ("q-negative", "cluster {pool.npy} {out} --dbscan-q -0.1", "--dbscan-q"),
    ("k-zero", "cluster {pool.npy} {out} --dbscan-k 0", "--dbscan-k"),
    ("method", "cluster {pool.npy} {out} --method nope", "--method"),
    ("coding", "cluster {pool.npy} {out} --coding nope", "--coding"),
    ("backend", "cluster {pool.npy} {out} --backend nope", "--backend"),
    ("n-atoms-zero", "cluster {pool.npy} {out} --n-atoms 0", "--n-atoms"),
    ("min-samples-zero", "cluster {pool.npy} {out} --min-samples 0", "--min-samples"),
    ("pca-dim-negative", "cluster {pool.npy} {out} --pca-dim -1", "--pca-dim"),
    ("out-is-file", "cluster {pool.npy} {texts.txt}", "OUT"),
]
EMBED = [
    ("input-missing", "embed {missing} --out {out}.npy", "INPUT"),
    ("input-dir", "embed {dir} --out {out}.npy", "INPUT"),
    ("column-missing", "embed {good.csv} --column nope --out {out}.npy", "--column"),
    ("engine", "embed {texts.txt} --out {out}.npy --engine nope", "--engine"),
    ("layer", "embed {texts.txt} --out {out}.npy --layer middle-ish", "--layer"),
    ("pooling", "embed {texts.txt} --out {out}.npy --pooling nope", "--pooling"),
    ("max-length-zero", "embed {texts.txt} --out {out}.npy --max-length 0", "--max-length"),
    ("model-missing-file", "embed {texts.txt} --out {out}.npy --model {missing}.gguf", "--model"),
    ("model-unknown", "embed {texts.txt} --out {out}.npy --model no-such-model-xyz", "--model"),
]
DISTRIBUTED = [
    ("embed-texts-missing", "distributed embed {missing} --out-dir {out}", "TEXTS"),
    ("embed-shard-size-zero", "distributed embed {texts.txt} --out-dir {out} --shard-size 0", "--shard-size"),
    ("embed-executor", "distributed embed {texts.txt} --out-dir {out} --executor nope", "--executor"),
    ("embed-address-local", "distributed embed {texts.txt} --out-dir {out} --address auto", "--address"),
    ("cluster-nan", "distributed cluster {nan.npy} {out}", "EMBEDDINGS"),
    ("cluster-not-npy", "distributed cluster {notnpy.npy} {out}", "EMBEDDINGS"),
    ("cluster-bad-manifest", "distributed cluster {bad_config.json} {out}", "EMBEDDINGS"),
    ("cluster-q", "distributed cluster {pool.npy} {out} --dbscan-q 3", "--dbscan-q"),
    ("cluster-knn", "distributed cluster {pool.npy} {out} --knn nope", "--knn"),
    ("cluster-shard-size", "distributed cluster {pool.npy} {out} --shard-size 0", "--shard-size"),
    (
        "select-method",
        "distributed select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --method x",
        "--method",
    ),
    (
        "select-ids-short",
        "distributed select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids_short.npy}",
        "--cluster-ids",
    ),
    (
        "select-batch-size",
        "distributed select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --batch-size 0",
        "--batch-size",
    ),
    (
        "select-budget",
        "distributed select --pool {pool.npy} --queries {q.npy} --cluster-ids {ids.npy} --budget -2",
        "--budget",
    ),
    (
        "select-queries-dim",
        "distributed select --pool {pool.npy} --queries {q_wrongdim.npy} --cluster-ids {ids.npy}",
        "--queries",
    ),
]
_EV = "evaluate --model dummy --retrieval backbone --dataset sample --out {out} "
EVALUATE = [
    ("dataset-unknown", _EV + "--dataset nope", "--dataset"),
    ("dataset-missing-file", _EV + "--dataset {missing.csv}", "--dataset"),
    ("dataset-no-label-column", _EV + "--dataset {no_label.csv}", "--dataset"),
    ("dataset-empty-label", _EV + "--dataset {empty_label.csv}", "--dataset"),
    ("dataset-bad-split", _EV + "--dataset {bad_split.csv}", "--dataset"),
    ("dataset-ragged", _EV + "--dataset {ragged.csv}", "--dataset"),
    ("dataset-one-row", _EV + "--dataset {one_row.csv}", "--dataset"),
    ("dataset-only-test", _EV + "--dataset {only_test.csv}", "--dataset"),
    ("dataset-bad-jsonl", _EV + "--dataset {bad.jsonl}", "--dataset"),
    ("dataset-jsonl-list", _EV + "--dataset {list.jsonl}", "--dataset"),
    ("dataset-null-label", _EV + "--dataset {null_label.jsonl}", "--dataset"),
    ("dataset-empty-label-jsonl", _EV + "--dataset {empty_label.jsonl}", "--dataset"),
    ("dataset-json-not-list", _EV + "--dataset {notlist.json}", "--dataset"),
    ("dataset-not-utf8", _EV + "--dataset {latin1.csv}", "--dataset"),
    ("data-dir-missing", _EV + "--dataset banking77 --data-dir {missing}", "--data-dir"),
    ("test-file-missing", _EV + "--dataset {good.csv} --test-file {missing.csv}", "--test-file"),
    ("test-file-with-registry", _EV + "--dataset sample --test-file {good.csv}", "--test-file"),
    ("test-file-is-the-pool", _EV + "--dataset {one_row.csv} --test-file {one_row.csv}", "--test-file"),
    ("config-missing", _EV + "--config {missing}", "--config"),
    ("config-dir", _EV + "--config {dir}", "--config"),
    ("config-invalid-json", _EV + "--config {bad_config.json}", "--config"),
    ("config-not-object", _EV + "--config {list_config.json}", "--config"),
    ("config-unknown-field", _EV + "--config {unknown_config.json}", "--config"),
    ("config-bad-value", _EV + "--config {badvalue_config.json}", "--config"),
    ("preset-and-config", _EV + "--preset cpu --config {badvalue_config.json}", "--config"),
    ("preset", _EV + "--preset nope", "--preset"),
    ("budget", _EV + "--budget -3", "--budget"),
    ("runs", _EV + "--runs 0", "--runs"),
    ("test-size", _EV + "--test-size 0", "--test-size"),
    ("mode", _EV + "--mode nope", "--mode"),
    ("estimator", _EV + "--estimator nope", "--estimator"),
    ("selectors", _EV + "--selectors dpp,nope", "--selectors"),
    ("lam-by-syntax", _EV + "--lam-by votek", "--lam-by"),
    ("q-by-number", _EV + "--q-by dpp=abc", "--q-by"),
    ("dbscan-q", _EV + "--dbscan-q 2", "--dbscan-q"),
    ("design", _EV + "--design nope", "--design"),
    ("engine", _EV + "--engine nope", "--engine"),
    ("dtype", _EV + "--dtype float8", "--dtype"),
    ("executor", _EV + "--executor nope", "--executor"),
    ("limit-zero", _EV + "--dataset sample --limit 0", "--limit"),
    ("out-is-file", "evaluate --model dummy --retrieval backbone --out {texts.txt}", "--out"),
    ("out-unwritable", "evaluate --model dummy --retrieval backbone --out {unwritable}", "--out"),
    ("cache-dir-is-file", _EV + "--cache-dir {texts.txt}", "--cache-dir"),
    ("out-holds-compare-run", _EV.replace("{out}", "{compared}"), "--out"),
    (
        "model-missing-gguf",
        "evaluate --dataset sample --retrieval backbone --model {missing}.gguf --out {out}",
        "--model",
    ),
    *[
        (
            f"model-url-{cid}",
            f"evaluate --dataset sample --retrieval backbone --model {url} --out {{out}}",
            "--model",
        )
        for cid, url in [
            ("port-range", "http://127.0.0.1:99999/v1#m"),
            ("port-word", "http://127.0.0.1:abc/v1#m"),
            ("no-host", "http:///v1#m"),
            ("scheme", "ftp://127.0.0.1:8080/v1#m"),
            ("option", "http://127.0.0.1:8080/v1#m?connect_timeout=0"),
        ]
    ],
]
_DEMO = "demo --model dummy "
DEMO = [
    ("dataset-unknown", _DEMO + "--dataset nope", "--dataset"),
    ("dataset-empty-label", _DEMO + "--dataset {empty_label.csv}", "--dataset"),
    ("dataset-missing-file", _DEMO + "--dataset {missing.csv}", "--dataset"),
    ("data-dir-missing", _DEMO + "--dataset clinc150 --data-dir {missing}", "--data-dir"),
    ("queries-zero", _DEMO + "--queries 0", "--queries"),
    ("budget-negative", _DEMO + "--budget -1", "--budget"),
    ("runs-zero", _DEMO + "--runs 0", "--runs"),
    ("selectors", _DEMO + "--selectors nope", "--selectors"),
    ("dbscan-q", _DEMO + "--dbscan-q 5", "--dbscan-q"),
    ("estimator", _DEMO + "--estimator nope", "--estimator"),
    ("engine", _DEMO + "--engine nope", "--engine"),
    ("out-is-file", _DEMO + "--out {texts.txt}", "--out"),
    ("cache-dir-is-file", _DEMO + "--out {out} --cache-dir {texts.txt}", "--cache-dir"),
]
REPRODUCE = [
    ("only", "reproduce --only nope --dry-run", "--only"),
    ("preset", "reproduce --preset nope --dry-run", "--preset"),
    ("datasets", "reproduce --datasets nope --dry-run", "--datasets"),
    ("selectors", "reproduce --selectors nope --dry-run", "--selectors"),
    ("variants", "reproduce --only healthy_ucs --variants nope --dry-run", "--variants"),
    ("set-syntax", "reproduce --set lam --dry-run", "--set"),
    ("set-unknown", "reproduce --set no_such_setting=1 --dry-run", "--set"),
    ("runs", "reproduce --runs 0 --dry-run", "--runs"),
    ("test-size", "reproduce --test-size 0 --dry-run", "--test-size"),
    ("mode", "reproduce --mode nope --dry-run", "--mode"),
    ("limit", "reproduce --limit 0 --dry-run", "--limit"),
]
_TUNE = "tune --model dummy --out {out} "
TUNE = [
    ("q-grid", _TUNE + "--q-grid a,b", "--q-grid"),
    ("lam-grid", _TUNE + "--lam-grid x", "--lam-grid"),
    ("val-fraction-zero", _TUNE + "--val-fraction 0", "--val-fraction"),
    ("val-fraction-above-one", _TUNE + "--val-fraction 1.5", "--val-fraction"),
    ("selectors", _TUNE + "--selectors nope", "--selectors"),
    ("mode", _TUNE + "--mode nope", "--mode"),
    ("preset", _TUNE + "--preset nope", "--preset"),
    ("config-missing", _TUNE + "--config {missing}", "--config"),
    ("dataset-unknown", _TUNE + "--dataset nope", "--dataset"),
    ("runs-zero", _TUNE + "--runs 0", "--runs"),
    ("out-is-file", "tune --model dummy --out {tune_out_file}", "--out"),
    (
        "variants-duplicate-name",
        _TUNE + "--selectors dpp+ucs --variants a:estimator=binomial;a:estimator=paper",
        "--variants",
    ),
    ("variants-unsafe-name", _TUNE + "--selectors dpp+ucs --variants ../up:estimator=binomial", "--variants"),
    (
        "variants-unknown-setting",
        _TUNE + "--selectors dpp+ucs --variants ok:estimator=binomial;bad:nosuch=1",
        "--variants",
    ),
    (
        "variants-bad-value",
        _TUNE + "--selectors dpp+ucs --variants ok:estimator=binomial;bad:estimator=zzz",
        "--variants",
    ),
]
_CMP = "compare --model dummy --out {out} "
COMPARE = [
    ("examples-missing", _CMP + "{missing.csv}", "EXAMPLES"),
    ("examples-is-dir", _CMP + "{dir}", "EXAMPLES"),
    ("examples-no-label-column", _CMP + "{no_label.csv}", "EXAMPLES"),
    ("examples-empty-label", _CMP + "{empty_label.csv}", "EXAMPLES"),
    ("examples-empty-label-jsonl", _CMP + "{empty_label.jsonl}", "EXAMPLES"),
    ("examples-blank-text", _CMP + "{blank_text.csv} --queries 1", "EXAMPLES"),
    ("examples-one-label", _CMP + "{one_label.csv} --queries 2", "EXAMPLES"),
    ("examples-ragged", _CMP + "{ragged.csv}", "EXAMPLES"),
    ("examples-bad-jsonl", _CMP + "{bad.jsonl}", "EXAMPLES"),
    ("examples-not-utf8", _CMP + "{latin1.csv}", "EXAMPLES"),
    ("examples-suffix", _CMP + "{table.xlsx}", "EXAMPLES"),
    ("label-column", _CMP + "{good.csv} --label-column nope", "EXAMPLES"),
    ("queries-zero", _CMP + "{good.csv} --queries 0", "--queries"),
    ("queries-all-rows", _CMP + "{good.csv} --queries 20", "--queries"),
    ("k-zero", _CMP + "{good.csv} --k 0", "--k"),
    ("k-not-a-number", _CMP + "{good.csv} --k 4,a", "--k"),
    ("order-unknown", _CMP + "{good.csv} --order selected,nosuch", "--order"),
    ("reference-unspelled", _CMP + "{good.csv} --reference topk", "--reference"),
    ("test-share-above-one", _CMP + "{good.csv} --test-share 1.5", "--test-share"),
    ("round-size-zero", _CMP + "{good.csv} --round-size 0", "--round-size"),
    ("alpha-two", _CMP + "{good.csv} --alpha 2", "--alpha"),
    ("selectors", _CMP + "{good.csv} --selectors topk,nope", "--selectors"),
    ("chat-template", _CMP + "{good.csv} --chat-template nope", "--chat-template"),
    ("test-file-missing", _CMP + "{good.csv} --test-file {missing.csv}", "--test-file"),
    ("test-file-empty-label", _CMP + "{good.csv} --test-file {empty_label.csv}", "--test-file"),
    ("test-file-blank-text", _CMP + "{good.csv} --test-file {blank_text.csv}", "--test-file"),
    ("test-file-is-examples", _CMP + "{good.csv} --test-file {good.csv}", "--test-file"),
    ("out-is-file", "compare --model dummy {good.csv} --queries 4 --out {texts.txt}", "--out"),
    ("out-holds-evaluate-run", "compare --model dummy {good.csv} --queries 4 --out {evaluated}", "--out"),
    ("mode-unknown", _CMP + "{good.csv} --mode nosuch", "--mode"),
    ("metric-unknown", _CMP + "{good.csv} --mode generate --metric nosuch", "--metric"),
    ("metric-regex-does-not-compile", _CMP + "{good.csv} --mode generate --metric regex:(", "--metric"),
    ("metric-module-missing", _CMP + "{good.csv} --mode generate --metric nosuch_module:score", "--metric"),
    ("metric-with-likelihood", _CMP + "{good.csv} --metric exact", "--metric"),
    ("max-new-tokens-with-likelihood", _CMP + "{good.csv} --max-new-tokens 8", "--max-new-tokens"),
    ("max-new-tokens-zero", _CMP + "{good.csv} --mode generate --max-new-tokens 0", "--max-new-tokens"),
]

_PR = "prompts {good.csv} {texts.txt} --out {out}.jsonl "
PROMPTS = [
    ("examples-missing", "prompts {missing.csv} {texts.txt} --out {out}.jsonl", "EXAMPLES"),
    ("examples-not-an-index", "prompts {dir} {texts.txt} --out {out}.jsonl", "EXAMPLES"),
    ("examples-not-utf8", "prompts {latin1.csv} {texts.txt} --out {out}.jsonl", "EXAMPLES"),
    ("queries-missing", "prompts {good.csv} {missing} --out {out}.jsonl", "QUERIES"),
    ("queries-dir", "prompts {good.csv} {dir} --out {out}.jsonl", "QUERIES"),
    ("queries-empty", "prompts {good.csv} {empty.txt} --out {out}.jsonl", "QUERIES"),
    ("queries-not-utf8", "prompts {good.csv} {latin1.txt} --out {out}.jsonl", "QUERIES"),
    ("queries-binary", "prompts {good.csv} {pool.npy} --out {out}.jsonl", "QUERIES"),
    ("queries-jsonl-list", "prompts {good.csv} {list.jsonl} --out {out}.jsonl", "--query-column"),
    (
        "query-column-missing",
        "prompts {good.csv} {good.csv} --query-column nope --out {out}.jsonl",
        "--query-column",
    ),
    ("out-suffix", "prompts {good.csv} {texts.txt} --out {out}.txt", "--out"),
    ("out-folder-missing", "prompts {good.csv} {texts.txt} --out {missing}/p.jsonl", "--out"),
    ("out-is-dir", "prompts {good.csv} {texts.txt} --out {dir}", "--out"),
    ("format", _PR + "--format nope", "--format"),
    ("order", _PR + "--order nope", "--order"),
    ("k-negative", _PR + "--k -1", "--k"),
    ("method", _PR + "--method nope", "--method"),
    ("template-missing", _PR + "--template {missing}", "--template"),
    ("template-syntax", _PR + "--template {unclosed.j2}", "--template"),
    ("template-undefined", _PR + "--template {undefined.j2}", "--template"),
    ("template-not-utf8", _PR + "--template {latin1.txt}", "--template"),
]

SERVE = [
    ("index-missing", "serve {missing}", "INDEX"),
    ("index-not-an-index", "serve {dir}", "INDEX"),
    ("index-is-a-file", "serve {good.csv}", "INDEX"),
    ("port-zero", "serve {dir} --port 0", "--port"),
    ("port-above-range", "serve {dir} --port 70000", "--port"),
    ("port-not-a-number", "serve {dir} --port http", "--port"),
    ("log-level", "serve {dir} --log-level loud", "--log-level"),
    ("reload-ms-negative", "serve {dir} --reload-ms -1", "--reload-ms"),
    ("batch-window-negative", "serve {dir} --batch-window-ms -1", "--batch-window-ms"),
    ("max-batch-zero", "serve {dir} --max-batch 0", "--max-batch"),
]

CASES = {
    "select": SELECT,
    "coverage": COVERAGE,
    "cluster": CLUSTER,
    "embed": EMBED,
    "distributed": DISTRIBUTED,
    "evaluate": EVALUATE,
    "demo": DEMO,
    "reproduce": REPRODUCE,
    "tune": TUNE,
    "compare": COMPARE,
    "prompts": PROMPTS,
    "serve": SERVE,
}
PARAMS = [
    pytest.param(cmd, argv, param, id=f"{cmd}-{cid}")
    for cmd, cases in CASES.items()
    for cid, argv, param in cases
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("bad-inputs"))


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UCS_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # `reproduce` defaults write under ./runs and ./docs


def _argv(template: str, files: dict) -> list:
    return [re.sub(r"\{([^}]+)\}", lambda m: files[m.group(1)], part) for part in template.split()]


def _run(argv):
    return CliRunner().invoke(app, argv)


@pytest.mark.parametrize("command, template, param", PARAMS)
def test_bad_input_is_a_clean_error(command, template, param, files, tmp_path):
    res = _run(_argv(template, {**files, "out": str(tmp_path / "out")}))  # no case sees another's output
    out = res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"uncaught {res.exception!r}\n{out}"
    )
    assert "Traceback" not in out, out
    assert res.exit_code == 2, f"exit {res.exit_code}\n{out}"
    assert param.lower() in out.lower(), f"{param} not named:\n{out}"


def test_debug_flag_and_environment_show_the_traceback(files, monkeypatch):
    argv = ["select", "--pool", files["missing"]]
    res = _run(["--debug", *argv])
    assert isinstance(res.exception, FileNotFoundError)
    monkeypatch.setenv("UCS_DEBUG", "1")
    res = _run(argv)
    assert isinstance(res.exception, FileNotFoundError)


def test_the_message_is_at_most_two_lines(files):
    res = _run(_argv("select --pool {nan.npy}", files))
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 2, res.output
    assert lines[0].startswith("Error: --pool") and lines[1].lstrip().startswith("fix:")


def test_battery_size():
    assert len(PARAMS) >= 100
    assert {c for c, _, _ in (p.values for p in PARAMS)} >= {
        "select",
        "coverage",
        "cluster",
        "embed",
        "distributed",
        "evaluate",
        "demo",
        "reproduce",
        "tune",
        "compare",
        "prompts",
    }


def test_the_reliability_page_counts_the_battery():
    """docs/reliability.md's battery table lists every command with this file's case count, and the total."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `ucs (\w+)`[^|]* \| (\d+) \| \d+ \|$", page, re.M))
    assert {c: int(n) for c, n in rows.items()} == {c: len(cases) for c, cases in CASES.items()}
    loaders = int(re.search(r"^\| public loaders \(Python\) \| (\d+) \|", page, re.M).group(1))
    assert loaders == len(LOADERS)
    total = int(re.search(r"^\| \*\*total\*\* \| \*\*(\d+)\*\* \|", page, re.M).group(1))
    assert total == len(PARAMS) + len(LOADERS)


# The public loaders: a clear exception naming the file (or the argument) at fault, never a
# KeyError/IndexError.
def _table(*a):
    from ucs.data import load_table

    return load_table(*a)


def _dataset(*a):
    from ucs.data import load_dataset

    return load_dataset(*a)


def _clusterer(path):
    from ucs.clustering import load_clusterer

    return load_clusterer(path)


def _config(path):
    from ucs.pipeline import PipelineConfig

    return PipelineConfig.from_json(path)


LOADERS = [
    ("table-missing", lambda f: _table(f["missing.csv"]), "missing.csv"),
    ("table-folder", lambda f: _table(f["dir"]), "dir"),
    ("table-no-label", lambda f: _table(f["no_label.csv"]), "missing column"),
    ("table-empty-label", lambda f: _table(f["empty_label.csv"]), "line 3"),
    ("table-empty-label-jsonl", lambda f: _table(f["empty_label.jsonl"]), "line 2"),
    ("table-bad-split", lambda f: _table(f["bad_split.csv"]), "'split'"),
    ("table-one-row", lambda f: _table(f["one_row.csv"]), "at least 2"),
    ("table-not-utf8", lambda f: _table(f["latin1.csv"]), "UTF-8"),
    ("table-suffix", lambda f: _table(f["table.xlsx"]), ".xlsx"),
    ("table-test-missing", lambda f: _table(f["good.csv"], f["missing.csv"]), "missing.csv"),
    ("dataset-unknown", lambda f: _dataset("nope"), "unknown dataset"),
    ("dataset-data-dir", lambda f: _dataset("hwu64", f["dir"]), "dir"),
    ("clusterer-missing", lambda f: _clusterer(f["dir"]), "meta.json"),
    ("config-unknown-key", lambda f: _config(f["unknown_config.json"]), "no_such_setting"),
    ("config-bad-value", lambda f: _config(f["badvalue_config.json"]), "budget"),
]


@pytest.mark.parametrize("call, needle", [pytest.param(c, n, id=i) for i, c, n in LOADERS])
def test_public_loader_refuses_clearly(call, needle, files):
    with pytest.raises((ValueError, OSError)) as info:
        call(files)
    assert not isinstance(info.value, (KeyError, IndexError))
    assert needle.lower() in str(info.value).lower()


def test_a_closed_pipe_ends_the_command_quietly():
    """``ucs reproduce --list | head -1``: the reader leaving is not an error to report."""
    import subprocess
    import sys

    code = "import sys; from ucs.cli import main; sys.argv = ['ucs', 'reproduce', '--list']; main()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Error" not in err and "Traceback" not in err, err

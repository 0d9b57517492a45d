"""Golden test: a fixed dummy-backbone pipeline run and the sample demo's selection stage, compared with
files committed under ``tests/golden/``.

What is compared, byte for byte through SHA-256:
- every selection the runner saved (``selections/*.npy``: pool indices, integers) and every run's cluster ids
  (``pipeline/clusters/*.npy``);
- every line of ``records.jsonl``, after dropping its ``_check`` checksum and its ``answered_on`` provenance
  (the CPU kind that ran it, which differs between machines by design) and rounding the one float field
  (``margin``) to 9 decimals, so a different BLAS thread count cannot change the comparison while any
  change of a selection, an answer or a record field does.

``tests/golden/*_selections.json`` hold the same selections readably, for diffing when a hash differs.
A change that is meant to alter results regenerates the files with ``UCS_REGEN_GOLDEN=1`` and says why in
its commit message.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ucs.pipeline import Pipeline, PipelineConfig

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REGEN = os.environ.get("UCS_REGEN_GOLDEN") == "1"

METHODS = ("random", "topk", "topk+ucs", "dpp", "dpp+ucs", "mdl", "mdl+ucs", "votek", "votek+ucs")
#: On the paper preset: the paper's clustering and estimator in the backbone's space, with ridge codes, the
#: backbone as retrieval embedder and MDL scorer (the dummy backbone needs no model), and small sizes.
SMALL = {
    "dataset": "sample",
    "backbone": "dummy",
    "mode": "likelihood",
    "test_size": 6,
    "n_runs": 2,
    "budget": 4,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector": {
        "method": METHODS,
        "params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
    },
    "lam_by_selector": {"votek": 5.0},
}  # at the default λ VoteK+UCS picks what VoteK picks on these data


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _record_line(rec: dict) -> str:
    rec = {k: v for k, v in rec.items() if k not in ("_check", "answered_on")}
    if rec.get("margin") is not None:
        rec["margin"] = round(float(rec["margin"]), 9)
    return json.dumps(rec, sort_keys=True)


def snapshot(out: Path) -> tuple[dict, dict]:
    """(manifest of SHA-256s, readable selections) of a run folder."""
    manifest: dict = {}
    readable: dict = {}
    for sub in ("selections", "pipeline/clusters"):
        for p in sorted((out / sub).glob("*.npy")):
            manifest[f"{sub}/{p.name}"] = _sha(p.read_bytes())
            if sub == "selections":
                readable[p.name] = np.load(p).tolist()
    lines = [
        _record_line(json.loads(x)) for x in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for i, line in enumerate(lines):
        manifest[f"records.jsonl:{i}"] = _sha(line.encode())
    manifest["records.jsonl:n_lines"] = len(lines)
    return manifest, readable


def _rows_per_line(selections: dict) -> str:
    """JSON with one selection row per line, so a diff shows which query's demonstrations changed."""
    blocks = [
        f"{json.dumps(k)}: [\n" + ",\n".join(f"  {json.dumps(r)}" for r in v) + "\n ]"
        for k, v in sorted(selections.items())
    ]
    return "{\n " + ",\n ".join(blocks) + "\n}\n"


def check_against_golden(name: str, out: Path) -> None:
    manifest, readable = snapshot(out)
    paths = GOLDEN / f"{name}_manifest.json", GOLDEN / f"{name}_selections.json"
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        paths[0].write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        paths[1].write_text(_rows_per_line(readable), encoding="utf-8")
    want = json.loads(paths[0].read_text(encoding="utf-8"))
    assert sorted(manifest) == sorted(want), "the run wrote other files or another number of records"
    assert json.loads(paths[1].read_text(encoding="utf-8")) == readable, "a selection changed"
    changed = [k for k in want if manifest[k] != want[k]]
    assert not changed, f"{len(changed)} file(s)/record(s) differ from the golden run, e.g. {changed[:5]}"


def test_dummy_pipeline_run_matches_the_golden_files(tmp_path):
    cfg = PipelineConfig.resolve("paper", overrides=SMALL)
    pipe = Pipeline(cfg, cache_dir=tmp_path / "cache", out_dir=tmp_path / "out", progress=False)
    pipe.run()
    check_against_golden("pipeline", tmp_path / "out")


def test_sample_demo_selections_match_the_golden_files(tmp_path, capsys):
    from ucs.commands.demo import run_demo

    run_demo(backbone="dummy", out=tmp_path / "out", cache_dir=tmp_path / "cache", show_prompts=0)
    capsys.readouterr()
    check_against_golden("demo", tmp_path / "out")
    written = json.loads((tmp_path / "out" / "pipeline" / "config.json").read_text(encoding="utf-8"))
    config = PipelineConfig.from_dict(
        written
    ).flat_dict()  # the results' key names, in which the file was recorded
    want = GOLDEN / "demo_config.json"
    if REGEN:
        want.write_text(json.dumps(config, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert config == json.loads(want.read_text(encoding="utf-8")), "the demo's effective settings changed"


def test_default_settings_match_the_golden_file():
    """The library's defaults: the default configuration, each preset's (under the results' key names,
    :meth:`PipelineConfig.flat_dict`), and the clusterer's and prior's."""
    from ucs.clustering import LatentClusterer
    from ucs.pipeline.presets import PRESETS
    from ucs.selectors import UCSPrior

    got = {
        "PipelineConfig()": PipelineConfig().flat_dict(),
        "LatentClusterer()": {k: repr(v) for k, v in LatentClusterer().get_params().items()},
        "UCSPrior()": {
            k: repr(v) for k, v in UCSPrior(np.zeros(3, dtype=int)).get_params().items() if k != "cluster_ids"
        },
    }
    for name in sorted(PRESETS):
        got[f"from_preset({name!r})"] = PipelineConfig.resolve(name).flat_dict()
    path = GOLDEN / "defaults.json"
    if REGEN:
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8"))

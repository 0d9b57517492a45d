"""Which selector should *my* prompts use? Every named selector on the same held-out queries, against TopK.

:func:`compare` takes labelled examples, held-out queries (given, or a seeded share of the examples) and a
*predictor* — any callable ``predictor(query, demonstrations) -> answer``, a LangChain ``Runnable``, a DSPy
program, or a ucs backbone through :func:`backbone_predictor` — and runs each selector of a
:class:`~ucs.index.SelectorIndex` over the same queries. It reports each selector's accuracy, its paired
difference from TopK with the 95 % bootstrap interval over the same queries, the share of demonstrations that
carry the query's own label, and the cost per query (selection and predictor, milliseconds). The
recommendation is TopK unless another selector's interval lies above 0; it is saved as an index folder that
:meth:`SelectorIndex.load` and the LangChain and DSPy integrations open. Every answer is appended to
``records.jsonl`` as it comes, so a second call with the same inputs continues where the first stopped; a folder
keyed to other inputs (examples, queries, ``k``, ``seed``, predictor, embedder) or holding another command's run is
refused before anything is written there.

Like an evaluation, a comparison never offers a query an example with exactly its own text (query-dependent
selectors; the copies move behind every other candidate), and it counts and warns about
(:class:`~ucs.data.DatasetWarning`) held-out queries whose text is also among the examples.

Cost: one index fit per selector (``O(N·d)`` embeddings shared through the embedding cache), then
``Q × S`` predictor calls for ``Q`` queries and ``S`` selectors.
"""

from __future__ import annotations

import hashlib
import html
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.data.dataset import DatasetWarning, normalize_text
from ucs.evaluation.manifest import config_differences
from ucs.evaluation.records import RecordWriter, read_records
from ucs.evaluation.report import demonstration_vote, label_agreement, paired_delta, summarize
from ucs.experiments.generate import answer_scoring, copy_fields, score_summary
from ucs.experiments.predictors import as_predictor, predictor_identity
from ucs.index import SelectorIndex
from ucs.utils.io import atomic_write_json, atomic_write_text
from ucs.utils.lock import LOCK_NAME

__all__ = ["CompareResult", "check_folder", "compare", "comparison_key", "query_overlap", "split_examples",
           "split_indices", "warn_overlap"]

REFERENCE = "topk"


def _vote_cells(r: Dict[str, Any]) -> Tuple[str, str]:
    """The no-LM baseline (%): the vote, or the copy of a scored comparison, and the model's gain over it
    (points [95 % CI], ``*`` when it excludes 0)."""
    base = "copy" if r.get("copy") is not None else "vote"
    if r.get(base) is None or r.get(f"over_{base}_ci") is None:
        return ("—" if r.get(base) is None else f"{100 * r[base]:.1f}"), "—"
    lo, hi = r[f"over_{base}_ci"]
    star = "*" if lo > 0 or hi < 0 else ""
    return f"{100 * r[base]:.1f}", f"{100 * r[f'over_{base}']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]{star}"


def _names(info: Dict[str, Any]) -> Tuple[str, str, str]:
    """The score's, the baseline's and the gain's column names: accuracy and the no-LM vote for labels, the
    metric's mean score and the copy baseline for a scored comparison."""
    if info.get("metric"):
        return f"{info['metric']} score %", "copy %", "model − copy"
    return "accuracy %", "no-LM vote %", "model − vote"


@dataclass
class CompareResult:
    """The ranked comparison: ``rows`` (one per selector, best first), the ``recommended`` selector, the folder."""

    rows: List[Dict[str, Any]]
    recommended: str
    n_queries: int
    out: Optional[Path] = None
    index_dir: Optional[Path] = None
    info: Dict[str, Any] = field(default_factory=dict)

    def to_html(self, records: Sequence[dict], queries: Sequence[Dict[str, Any]], pool: Sequence[Dict[str, Any]],
                text_key: str, label_key: str, n_shown: int = 5) -> str:
        """A self-contained page: the ranked table, then the first ``n_shown`` queries with each selector's
        demonstrations (own-label ones marked) and answer."""
        esc = html.escape
        score, base, gain = _names(self.info)
        head = ["rank", "selector", score, "Δ vs TopK [95 % CI]", "own-label %", base, gain, "select ms",
                "predict ms"]
        body = []
        for i, r in enumerate(self.rows, 1):
            acc = "—" if r["accuracy"] is None else f"{100 * r['accuracy']:.1f}"
            d = "—" if r["delta"] is None else (f"{100 * r['delta']:+.1f} [{100 * r['delta_ci'][0]:+.1f}, "
                                               f"{100 * r['delta_ci'][1]:+.1f}]")
            share = "—" if r["own_label"] is None else f"{100 * r['own_label']:.1f}"
            cells = [str(i), r["selector"], acc, d, share, *_vote_cells(r), f"{r['select_ms']:.2f}",
                     f"{r['predict_ms']:.1f}"]
            body.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        parts = ["<!doctype html><meta charset='utf-8'><title>ucs compare</title>",
                 "<style>body{font-family:sans-serif;max-width:60em;margin:auto}td,th{padding:2px 8px;"
                 "border-bottom:1px solid #ddd}.own{font-weight:bold}</style>",
                 f"<h1>Which selector? {self.n_queries} held-out queries</h1>",
                 "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" + "".join(body) + "</table>",
                 f"<p>Recommended: <b>{esc(self.recommended)}</b> ({esc(str(self.info.get('why', '')))})</p>"]
        by = {(r["method"], int(r["query"])): r for r in records}
        for q, ex in enumerate(queries[:n_shown]):
            parts.append(f"<h2>{esc(str(ex[text_key]))} <small>({esc(str(ex[label_key]))})</small></h2><ul>")
            for row in self.rows:
                rec = by.get((row["selector"], q))
                if rec is None:
                    continue
                demos = "; ".join(
                    f"<span class='{'own' if str(pool[i][label_key]) == str(ex[label_key]) else ''}'>"
                    f"{esc(str(pool[i][text_key]))} → {esc(str(pool[i][label_key]))}</span>" for i in rec["selected"])
                mark = "✓" if rec["correct"] else "✗"
                if rec.get("score") is not None:  # a scored answer, with the copy baseline's
                    copied = f"copy {esc(str(rec.get('copy')))}: {rec.get('copy_score') or 0:.2f}"
                    mark = f"{rec['score']:.2f} ({copied})"
                parts.append(f"<li><b>{esc(row['selector'])}</b> {mark} {esc(str(rec['prediction']))}: {demos}</li>")
            parts.append("</ul>")
        return "\n".join(parts) + "\n"

    def to_markdown(self) -> str:
        """The ranked table: accuracy, Δ against TopK [paired 95 % CI], own-label share, cost per query."""
        lines = [f"{self.n_queries} held-out queries; Δ = selector minus TopK on the same queries [paired 95 % "
                 "bootstrap interval]; * = the interval excludes 0.", "",
                 "| rank | selector | {} [95 % CI] | Δ vs TopK, points | own-label share % | {} | "
                 "{}, points | select ms/query | predict ms/query |".format(*_names(self.info)),
                 "|---:|---|---|---|---:|---:|---|---:|---:|"]
        for i, r in enumerate(self.rows, 1):
            acc = "—" if r["accuracy"] is None else f"{100 * r['accuracy']:.1f} [{100 * r['ci'][0]:.1f}, {100 * r['ci'][1]:.1f}]"
            d = "—" if r["delta"] is None else (f"{100 * r['delta']:+.1f} [{100 * r['delta_ci'][0]:+.1f}, "
                                               f"{100 * r['delta_ci'][1]:+.1f}]{'*' if r['significant'] else ''}")
            share = "—" if r["own_label"] is None else f"{100 * r['own_label']:.1f}"
            vote, over = _vote_cells(r)
            lines.append(f"| {i} | {r['selector']} | {acc} | {d} | {share} | {vote} | {over} | "
                         f"{r['select_ms']:.2f} | {r['predict_ms']:.1f} |")
        if self.info.get("embed_ms") is not None:
            lines += ["", f"Query embedding (once per query, shared by every selector): "
                          f"{self.info['embed_ms']:.1f} ms/query."]
        if self.info.get("metric"):
            lines += ["", "Copy: the answer of each prompt's demonstration most similar to the query, with "
                      f"no model, scored with {self.info['metric']}; model − copy is the model's paired gain "
                      "over it."]
        else:
            lines += ["", "No-LM vote: the majority label of each prompt's own demonstrations, with no model "
                      "(for TopK the k-nearest-neighbour vote); model − vote is the model's paired gain over "
                      "it."]
        lines += ["", f"recommended: **{self.recommended}** ({self.info.get('why', '')})"]
        if self.index_dir is not None:
            lines.append(f"saved as an index: `{self.index_dir}` (SelectorIndex.load(dir), "
                         "UCSExampleSelector.load(dir), UCSFewShot.attach(program, SelectorIndex.load(dir)))")
        return "\n".join(lines) + "\n"


def split_indices(n: int, n_queries: int, seed: int = 0) -> Tuple[List[int], List[int]]:
    """``(pool positions, query positions)`` of :func:`split_examples` for ``n`` examples, each ascending.

    Raises ``ValueError`` when ``n_queries`` is not between 1 and ``n - 1``."""
    if n_queries < 1 or n_queries >= n:
        raise ValueError(f"n_queries must be between 1 and {n - 1} (the examples hold {n}); got {n_queries}")
    perm = np.random.default_rng(seed).permutation(n)
    held = sorted(perm[:n_queries].tolist())
    chosen = set(held)
    return [i for i in range(n) if i not in chosen], held


def split_examples(examples: Sequence[Dict[str, Any]], n_queries: int, seed: int = 0
                   ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(pool, queries)``: ``n_queries`` examples drawn with ``seed`` become the queries, the rest the pool.

    Raises ``ValueError`` when fewer than ``n_queries + 1`` examples are given."""
    pool_idx, held_idx = split_indices(len(examples), n_queries, seed)
    return [dict(examples[i]) for i in pool_idx], [dict(examples[i]) for i in held_idx]


def _check_inputs(examples: Sequence[Dict[str, Any]], text_key: str, label_key: str, where: str) -> None:
    """Every item a dict with a non-blank text and label (checked before any folder is made)."""
    for i, e in enumerate(examples):
        if not isinstance(e, dict) or text_key not in e or label_key not in e:
            raise ValueError(f"{where}[{i}] must be a dict with the fields {text_key!r} and {label_key!r} "
                             f"(set text_key= / label_key= to your field names); got {e!r:.120}")
        for key in (text_key, label_key):
            if e[key] is None or not str(e[key]).strip():
                raise ValueError(f"{where}[{i}][{key!r}] is empty; give every example and query a non-empty "
                                 "text and label, or leave it out")


def _check_labels(labels: Sequence[str]) -> None:
    if not labels:
        raise ValueError("no examples were given; a comparison needs labelled examples with at least two labels")
    if len(labels) < 2:
        raise ValueError(f"the examples and queries hold one distinct label ({labels[0]!r}); a comparison needs at "
                         "least two labels (with one, every selector scores 100 %): check the label column")


def query_overlap(pool: Sequence[Dict[str, Any]], queries: Sequence[Dict[str, Any]], text_key: str = "text"
                  ) -> Dict[str, int]:
    """How many ``queries`` have their text among the ``pool``'s: ``exact``, and ``normalized`` (after case,
    spacing and punctuation are normalised, :func:`ucs.data.dataset.normalize_text`; includes the exact ones).
    O(N + Q)."""
    texts = {str(e[text_key]) for e in pool}
    norm = {normalize_text(t) for t in texts}
    return {"exact": sum(str(q[text_key]) in texts for q in queries),
            "normalized": sum(normalize_text(str(q[text_key])) in norm for q in queries)}


def warn_overlap(overlap: Dict[str, int], n_queries: int) -> None:
    """A :class:`~ucs.data.DatasetWarning` with the counts of :func:`query_overlap`, when any query is a copy."""
    if overlap.get("normalized"):
        warnings.warn(f"{overlap['normalized']} of {n_queries} held-out queries are also among the examples "
                      f"({overlap['exact']} exactly, the rest after normalising case, spacing and punctuation); "
                      "a query is never offered an example with exactly its own text, but near copies raise the "
                      "accuracies", DatasetWarning, stacklevel=2)


def _digest(rows: Sequence[Dict[str, Any]], text_key: str, label_key: str) -> str:
    h = hashlib.sha256()
    for e in rows:
        h.update(json.dumps([str(e[text_key]), str(e[label_key])], ensure_ascii=False).encode("utf-8"))
    return f"{len(rows)} rows, sha256 {h.hexdigest()[:12]}"


def comparison_key(pool: Sequence[Dict[str, Any]], queries: Sequence[Dict[str, Any]], *, k: int, seed: int,
                   predictor: Any, embedder: Any, text_key: str = "text", label_key: str = "label",
                   metric: Optional[str] = None) -> Dict[str, Any]:
    """What a comparison folder's answers depend on (its ``compare.json`` ``key``): the examples and queries
    (digests), ``k``, ``seed``, the predictor's and the embedder's identities, the fields, and the rules of
    selection (demonstration order, the query's own text excluded). Selectors are not in it: another selector
    adds to a folder. ``metric``: the answer metric of a scored comparison (absent from a label comparison's
    key)."""
    emb = getattr(embedder, "identity", None)
    extra = {} if metric is None else {"metric": str(metric)}
    return {**extra, "format": 2, "examples": _digest(pool, text_key, label_key),
            "queries": _digest(queries, text_key, label_key), "k": int(k), "seed": int(seed),
            "predictor": predictor_identity(predictor),
            "embedder": json.dumps(emb, sort_keys=True, default=str) if emb is not None else type(embedder).__name__,
            "text_key": text_key, "label_key": label_key, "order": D.application_order(True),
            "exclude_query_texts": True}


#: What other commands leave in their output folders (a comparison never writes into such a folder).
_OTHER_RUNS = {"manifest.json": "ucs evaluate / ucs demo", "results.json": "ucs evaluate / ucs demo",
               "tune.json": "ucs tune", "variants.json": "ucs tune", "tuned_config.json": "ucs tune"}


def check_folder(out: "str | Path", key: Optional[Dict[str, Any]]) -> List[dict]:
    """The records already in ``out`` (resume), after checking that they answer the comparison keyed ``key``.

    Raises ``ValueError`` when ``out`` is a file, holds another command's run or other files, holds a comparison
    with another key (the differing fields are named; ``key=None`` checks only the rest) or a damaged
    ``compare.json``. Writes nothing."""
    out = Path(out)
    if not out.exists():
        return []
    if not out.is_dir():
        raise ValueError(f"{out} is a file; give a folder for the comparison's results")
    meta = out / "compare.json"
    if not meta.is_file():
        found = sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME)
        if found:
            whose = sorted({_OTHER_RUNS[n] for n in found if n in _OTHER_RUNS})
            kind = f"a run of {' and '.join(whose)}" if whose else "files of another kind"
            raise ValueError(f"{out} holds {kind} ({', '.join(found[:4])}), not a comparison; nothing was written "
                             "there: choose another folder (a new or empty one)")
        return []
    try:
        old = json.loads(meta.read_text(encoding="utf-8")).get("key")
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise ValueError(f"{meta} is damaged; choose another folder, or move this one aside (ucs compare "
                         "--fresh)") from None
    if key is None:
        return []
    if not isinstance(old, dict):
        raise ValueError(f"{out} holds a comparison made by an earlier ucs, keyed differently; choose another "
                         "folder, or move this one aside (ucs compare --fresh)")
    diffs = config_differences(old, key)
    if diffs:
        shown = "; ".join(diffs[:4]) + (f"; and {len(diffs) - 4} more" if len(diffs) > 4 else "")
        raise ValueError(f"{out} holds a comparison with other inputs (differs in: {shown}); choose another "
                         "folder, or move this one aside (ucs compare --fresh)")
    return read_records(out / "records.jsonl") if (out / "records.jsonl").is_file() else []


def _meta(folder: Optional[Path]) -> Dict[str, Any]:
    """What the folder's ``compare.json`` said before this call (empty without one)."""
    meta = None if folder is None else folder / "compare.json"
    return json.loads(meta.read_text(encoding="utf-8")) if meta is not None and meta.is_file() else {}


def _saved_index_holds(path: Path, emb: Any, best: str, before: Dict[str, Any]) -> bool:
    """Whether ``path`` already holds the recommended index of this comparison: the previous call finished with the
    same recommendation (``before``, checked against the same key) and the index loads with every file verified."""
    if before.get("recommended") != best or not (path / "index.json").is_file():
        return False
    try:
        return SelectorIndex.load(path, embedder=emb, warmup=False).method_ == best
    except (ValueError, OSError):  # damaged or partial: fitted again
        return False


def answered(out: "str | Path | None", selectors: Sequence[str], n_queries: int) -> int:
    """How many of the ``selectors × n_queries`` prompts ``out/records.jsonl`` already answers (a resumed run asks
    only for the rest); 0 without a folder. O(records)."""
    path = None if out is None else Path(out) / "records.jsonl"
    if path is None or not path.is_file():
        return 0
    done = {(r.get("method"), int(r.get("query", -1))) for r in read_records(path)}
    return sum((m, q) in done for m in selectors for q in range(int(n_queries)))


def _run_selector(name: str, index: SelectorIndex, queries: Sequence[Dict[str, Any]], query_emb: np.ndarray, k: int,
                  predict: Callable, text_key: str, label_key: str, done: set, writer: Optional[RecordWriter],
                  label_ids: Dict[str, int], scoring: Any = None) -> Tuple[List[dict], float, float]:
    """Answer every query not in ``done`` with ``name``'s demonstrations (``query_emb``: the queries' embeddings,
    (Q, d), computed once for every selector); returns the new records and the mean selection and predictor
    milliseconds per query. ``scoring`` (:class:`~ucs.experiments.generate.AnswerScoring`) adds each answer's
    score and the copy baseline's."""
    recs, t_sel, t_pred = [], 0.0, 0.0
    for q, ex in enumerate(queries):
        if (name, 0, q) in done:
            continue
        t0 = time.perf_counter()
        chosen, demos = _select(index, str(ex[text_key]), k, query_emb[q])
        t1 = time.perf_counter()
        correct, answer = predict(ex, demos)
        t2 = time.perf_counter()
        t_sel, t_pred = t_sel + t1 - t0, t_pred + t2 - t1
        rec = {"method": name, "seed": 0, "query": q, "correct": bool(correct), "prediction": answer,
               "gold": str(ex[label_key]), "gold_id": label_ids[str(ex[label_key])],
               "selected": chosen, "select_ms": 1e3 * (t1 - t0),
               "predict_ms": 1e3 * (t2 - t1)}
        if scoring is not None:
            rec.update(scoring.fields(ex, answer, chosen, demos, index.embeddings_, query_emb[q]))
        recs.append(rec)
        if writer is not None:
            writer.write([rec])
    n = max(len(recs), 1)
    return recs, 1e3 * t_sel / n, 1e3 * t_pred / n


def _select(index: SelectorIndex, text: str, k: int, query_emb: np.ndarray) -> Tuple[List[int], List[dict]]:
    """``index.select(text, k)`` under the evaluation's rule: a query-dependent selector never offers the query an
    example with exactly its own text (its copies move behind every other candidate); returns the chosen
    positions and examples."""
    sel = index.selector_
    if not sel.query_dependent and index.base_ != "mdl":  # one shared set, the same for every query
        shared = index.select(text, k, query_embeddings=query_emb)
        return [int(i) for i in shared.indices], shared.examples
    result = sel.select(query_emb[None, :], k, query_texts=[text], exclude_query_texts=True,
                        order=D.application_order(sel.labels_ is not None))
    chosen = [int(i) for i in result.indices[0]]
    return chosen, [dict(index.examples_[i]) for i in chosen]


def _rows(records: List[dict], selectors: Sequence[str], pool_label_ids: np.ndarray, scored: bool = False
          ) -> List[Dict[str, Any]]:
    """One row per selector; ``scored``: the records' mean ``score`` and the copy baseline instead of the
    accuracy and the no-LM vote."""
    summ = score_summary(records) if scored else summarize(records, run_seeds=[0])["methods"]
    share = label_agreement(records, pool_label_ids, run_seeds=[0])
    vote = {} if scored else demonstration_vote(records, pool_label_ids, run_seeds=[0])
    copied = score_summary(records, "copy_score") if scored else {}
    ref = summ.get(REFERENCE)
    rows = []
    for m in selectors:
        s = summ.get(m)
        d = paired_delta(s, ref) if s is not None and ref is not None and m != REFERENCE else None
        mine = [r for r in records if r["method"] == m]
        rows.append({"selector": m, "accuracy": None if s is None else s["mean"], "ci": None if s is None else s["ci"],
                     "delta": None if d is None else d["delta"], "delta_ci": None if d is None else d["ci"],
                     "significant": bool(d is not None and (d["ci"][0] > 0 or d["ci"][1] < 0)),
                     "own_label": (share.get(m) or {}).get("mean"), **_vote_fields(s, vote.get(m)),
                     **(copy_fields(s, copied.get(m)) if scored else {}),
                     "select_ms": float(np.mean([r["select_ms"] for r in mine])) if mine else 0.0,
                     "predict_ms": float(np.mean([r["predict_ms"] for r in mine])) if mine else 0.0,
                     "n_queries": len(mine)})
    rows.sort(key=lambda r: (-(r["accuracy"] if r["accuracy"] is not None else -1.0), r["selector"] != REFERENCE))
    return rows


def _vote_fields(model: Optional[Dict[str, Any]], vote: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The no-LM baseline of one selector: the majority label of its own demonstrations (``vote``, with its
    interval) and the model's paired gain over it (``over_vote``, ``over_vote_ci``)."""
    d = paired_delta(model, vote) if model is not None and vote is not None else None
    return {"vote": None if vote is None else vote["mean"], "vote_ci": None if vote is None else vote["ci"],
            "over_vote": None if d is None else d["delta"], "over_vote_ci": None if d is None else d["ci"]}


def _recommend(rows: List[Dict[str, Any]]) -> Tuple[str, str]:
    better = [r for r in rows if r["delta_ci"] is not None and r["delta_ci"][0] > 0]
    if better:
        best = max(better, key=lambda r: r["delta"])
        return best["selector"], (f"{100 * best['delta']:+.1f} points over TopK, paired interval "
                                  f"[{100 * best['delta_ci'][0]:+.1f}, {100 * best['delta_ci'][1]:+.1f}] above 0")
    if any(r["selector"] == REFERENCE for r in rows):
        return REFERENCE, "no selector's paired interval against TopK lies above 0, so the plain similarity stays"
    return rows[0]["selector"], "TopK was not compared; the most accurate selector"


def compare(
    examples: Sequence[Dict[str, Any]],
    predictor: Any,
    *,
    queries: Optional[Sequence[Dict[str, Any]]] = None,
    selectors: Sequence[str] = D.COMPARE_SELECTORS,
    k: int = 8,
    n_queries: int = 200,
    text_key: str = "text",
    label_key: str = "label",
    metric: Optional[Callable[[Any, Any], Any]] = None,
    embedder: Any = None,
    out: "str | Path | None" = None,
    seed: int = 0,
    cache_dir: "str | Path | None" = None,
) -> CompareResult:
    """Run each selector over the same held-out queries with ``predictor`` and rank them against TopK.

    Parameters
    ----------
    examples : sequence of dict
        Labelled examples (``text_key`` and ``label_key`` fields). Without ``queries``, ``n_queries`` of them
        (drawn with ``seed``) become the held-out queries and the rest the pool the selectors choose from.
    predictor : callable, LangChain Runnable or DSPy program
        ``predictor(query_text, demonstrations) -> answer`` (demonstrations: the chosen example dicts), a
        ``Runnable`` invoked with ``{"query": text, "examples": demonstrations}``, or a DSPy program whose
        predictors get the demonstrations as ``demos`` and which is called with ``{text_key: text}``;
        :func:`~ucs.experiments.predictors.backbone_predictor` makes one of a ucs backbone.
    queries : sequence of dict, optional
        Held-out labelled queries (then every example is in the pool).
    selectors : sequence of str
        Methods to compare (default :data:`ucs.defaults.COMPARE_SELECTORS`); TopK is the reference of every Δ.
    metric : callable, str or AnswerMetric, optional
        ``metric(query_example, answer) -> bool``; default: the answer (a string, a message's ``content``, or a
        DSPy prediction's ``label_key`` field) equals the gold label up to case and surrounding spaces.
        A metric name (``"exact"``, ``"f1"``, ``"json"``, ``"regex:PATTERN"``, ``"module:function"``,
        :func:`~ucs.evaluation.answer_metrics.get_metric`) or an ``AnswerMetric`` scores free-form answers
        instead: each record gets a ``score`` in [0, 1] and the copy baseline's (the answer of the chosen
        demonstration nearest the query), the table the mean score and the model's gain over the copy, and
        answers need only differ (all-distinct answers are fine).
    embedder : str or embedder, optional
        Retrieval embedder of every index (default ``all-minilm-l6-v2``, through
        :func:`ucs.embedding.load_retrieval_embedder`).
    out : path, optional
        Folder for ``records.jsonl`` (resumable), ``compare.md`` / ``compare.json`` and ``index/`` (the
        recommended selector fitted on every example).

    Returns
    -------
    CompareResult
    """
    _check_inputs(examples, text_key, label_key, "examples")
    if queries is None:
        pool, qs = split_examples(examples, n_queries, seed)
    else:
        _check_inputs(queries, text_key, label_key, "queries")
        pool, qs = [dict(e) for e in examples], [dict(q) for q in queries][:n_queries]
    from ucs.selectors.factory import canonical_method

    selectors = list(dict.fromkeys(canonical_method(s) for s in selectors))
    labels = sorted({str(e[label_key]) for e in list(pool) + list(qs)})
    scoring = answer_scoring(metric, label_key)  # a metric name: free-form answers, scored in [0, 1]
    _check_labels(labels) if scoring is None else scoring.check(labels)
    label_ids = {y: i for i, y in enumerate(labels)}
    predict = as_predictor(predictor, text_key=text_key, label_key=label_key,
                           metric=None if scoring is not None else metric)
    emb = _embedder(embedder)
    overlap = query_overlap(pool, qs, text_key)
    warn_overlap(overlap, len(qs))
    key = comparison_key(pool, qs, k=k, seed=seed, predictor=predictor, embedder=emb, text_key=text_key,
                         label_key=label_key, metric=None if scoring is None else scoring.name)
    folder = None if out is None else Path(out)
    records = check_folder(folder, key) if folder is not None else []
    before = _meta(folder)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "compare.json", {"key": key, "selectors": selectors, "k": k, "seed": seed,
                                                    "n_queries": len(qs), "n_pool": len(pool),
                                                    "queries_in_examples": overlap})
    done = {(r["method"], int(r["seed"]), int(r["query"])) for r in records}
    todo = [n for n in selectors if any((n, 0, q) not in done for q in range(len(qs)))]
    embed_ms = before.get("embed_ms")
    if todo:  # a finished comparison resumed embeds nothing and fits no index
        t0 = time.perf_counter()
        query_emb = np.asarray(emb.embed([str(q[text_key]) for q in qs]), dtype=np.float32)
        embed_ms = 1e3 * (time.perf_counter() - t0) / max(len(qs), 1)
    writer = RecordWriter(folder / "records.jsonl") if folder is not None and todo else None
    try:
        for name in todo:
            index = SelectorIndex(emb, method=name, input_keys=[text_key], output_key=label_key,
                                  cache_dir=cache_dir, random_state=seed).fit(pool)
            new, _, _ = _run_selector(name, index, qs, query_emb, k, predict, text_key, label_key, done, writer,
                                      label_ids, scoring)
            records += new
    finally:
        if writer is not None:
            writer.close()
    rows = _rows(records, selectors, np.asarray([label_ids[str(e[label_key])] for e in pool]),
                 scoring is not None)
    best, why = _recommend(rows)
    result = CompareResult(rows, best, len(qs), folder, info={
        "why": why, "n_pool": len(pool), "k": k, "embed_ms": embed_ms, "queries_in_examples": overlap,
        "metric": None if scoring is None else scoring.name})
    if folder is not None:
        if not _saved_index_holds(folder / "index", emb, best, before):
            index = SelectorIndex(emb, method=best, input_keys=[text_key], output_key=label_key,
                                  cache_dir=cache_dir, random_state=seed).fit(list(pool) + list(qs))
            index.save(folder / "index")
        result.index_dir = folder / "index"
        atomic_write_text(folder / "compare.md", result.to_markdown())
        atomic_write_text(folder / "compare.html", result.to_html(records, qs, pool, text_key, label_key))
        atomic_write_json(folder / "compare.json", {"key": key, "selectors": selectors, "k": k, "seed": seed,
                                                    "rows": rows, "recommended": best, "why": why,
                                                    "n_queries": len(qs), "n_pool": len(pool), "embed_ms": embed_ms,
                                                    "queries_in_examples": overlap})
    return result


def _embedder(embedder: Any) -> Any:
    if embedder is None or isinstance(embedder, str):
        from ucs.embedding import load_retrieval_embedder

        return load_retrieval_embedder(embedder or "all-minilm-l6-v2")
    return embedder

"""Which selector, k and order should *my* prompts use?

A grid of cells raced on validation queries, against TopK, the winner confirmed on test queries.

:func:`compare` takes labelled examples, held-out queries (given, or a seeded share of the examples) and a
*predictor* — any callable ``predictor(query, demonstrations) -> answer``, a LangChain ``Runnable``, a DSPy
program, or a ucs backbone through :func:`backbone_predictor`. The cells are selector × k × order
(:mod:`ucs.experiments.compare_grid`); the held-out queries are split, seeded, into a validation part that
chooses and a test part that confirms. The validation queries are answered in rounds; after each round the
early-stopping rule of :mod:`ucs.evaluation.sequential` drops the cells that are worse than the leader beyond
doubt, and they are not asked again. The race's final leader (the validated cell) and the reference cell
(TopK, order ``selected``) are then answered on the test part: the recommendation is the validated cell only
when its paired 95 % bootstrap interval against the reference there lies above 0, else the reference. It is
saved as an index folder (with the cell's order) that :meth:`SelectorIndex.load` and the LangChain and DSPy
integrations open. Every answer is appended to ``records.jsonl`` as it comes, keyed by (cell, query), so a
second call with the same inputs replays the race and continues where the first stopped; a folder keyed to
other inputs (examples, queries, grid, reference, split, predictor, embedder) or holding another command's run
is refused before anything is written there.

Like an evaluation, a comparison never offers a query an example with exactly its own text (query-dependent
selectors; the copies move behind every other candidate), and it counts and warns about
(:class:`~ucs.data.DatasetWarning`) held-out queries whose text is also among the examples.

Cost: one embedding and clustering of the pool, shared by every selector's index (each fits only its
selector), then at most ``C × V + 2 × T`` predictor calls for ``C`` cells, ``V`` validation and ``T`` test
queries (fewer when cells leave the race early), side by side when the predictor has ``many`` (a backbone in a
:class:`~ucs.models.pool.BackbonePool`), each round's selections made while the workers answer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.data.dataset import DatasetWarning, normalize_text
from ucs.evaluation.manifest import config_differences
from ucs.evaluation.records import read_records
from ucs.evaluation.summary import demonstration_vote, label_agreement, paired_delta
from ucs.evaluation.run_folder import RunFolder
from ucs.experiments.compare_grid import (
    Cell,
    default_orders,
    default_reference,
    grid_cells,
    parse_cell,
    parse_ks,
    parse_orders,
    planned_rounds,
    run_race,
    score_stats,
    split_parts,
)
from ucs.experiments.generate import answer_scoring, copy_fields, score_summary
from ucs.experiments.predictors import as_predictor, predictor_identity
from ucs.index import SelectorIndex
from ucs.index.examples import example_text
from ucs.selectors.method import MethodSpec
from ucs.utils.io import atomic_write_json, atomic_write_text
from ucs.utils.lock import LOCK_NAME
from ucs.utils.progress import advance, progress_enabled, stage

__all__ = [
    "CompareResult",
    "answered",
    "check_folder",
    "check_race",
    "compare",
    "comparison_key",
    "plan_grid",
    "query_overlap",
    "recommend",
    "split_examples",
    "split_indices",
    "warn_overlap",
]


@dataclass
class CompareResult:
    """The comparison: ``rows`` (one per cell on the validation queries, best first), ``test_rows`` (the
    validated cell and the reference on the test queries), the ``recommended`` selector and its cell."""

    rows: List[Dict[str, Any]]
    recommended: str
    n_queries: int
    out: Optional[Path] = None
    index_dir: Optional[Path] = None
    info: Dict[str, Any] = field(default_factory=dict)
    test_rows: List[Dict[str, Any]] = field(default_factory=list)
    recommended_cell: str = ""

    def to_html(
        self,
        records: Sequence[dict],
        queries: Sequence[Dict[str, Any]],
        pool: Sequence[Dict[str, Any]],
        text_key: str,
        label_key: str,
        n_shown: int = 5,
    ) -> str:
        """A self-contained page: the validation table, then the first ``n_shown`` queries with each cell's
        demonstrations (own-label ones marked) and answer."""
        from ucs.experiments.compare_report import page

        return page(self, records, queries, pool, text_key, label_key, n_shown)

    def to_markdown(self) -> str:
        """The race, the validation table (Δ against the reference [paired 95 % CI], the round each cell
        left), the test table and the recommendation."""
        from ucs.experiments.compare_report import markdown

        return markdown(self)


def split_indices(n: int, n_queries: int, seed: int = 0) -> Tuple[List[int], List[int]]:
    """``(pool positions, query positions)`` of :func:`split_examples` for ``n`` examples, each ascending.

    Raises ``ValueError`` when ``n_queries`` is not between 1 and ``n - 1``."""
    if n_queries < 1 or n_queries >= n:
        raise ValueError(f"n_queries must be between 1 and {n - 1} (the examples hold {n}); got {n_queries}")
    perm = np.random.default_rng(seed).permutation(n)
    held = sorted(perm[:n_queries].tolist())
    chosen = set(held)
    return [i for i in range(n) if i not in chosen], held


def split_examples(
    examples: Sequence[Dict[str, Any]], n_queries: int, seed: int = 0
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(pool, queries)``: ``n_queries`` examples drawn with ``seed`` become the queries, the rest the pool.

    Raises ``ValueError`` when fewer than ``n_queries + 1`` examples are given."""
    pool_idx, held_idx = split_indices(len(examples), n_queries, seed)
    return [dict(examples[i]) for i in pool_idx], [dict(examples[i]) for i in held_idx]


def _check_inputs(examples: Sequence[Dict[str, Any]], text_key: str, label_key: str, where: str) -> None:
    """Every item a dict with a non-blank text and label (checked before any folder is made)."""
    for i, e in enumerate(examples):
        if not isinstance(e, dict) or text_key not in e or label_key not in e:
            raise ValueError(
                f"{where}[{i}] must be a dict with the fields {text_key!r} and {label_key!r} "
                f"(set text_key= / label_key= to your field names); got {e!r:.120}"
            )
        for key in (text_key, label_key):
            if e[key] is None or not str(e[key]).strip():
                raise ValueError(
                    f"{where}[{i}][{key!r}] is empty; give every example and query a non-empty "
                    "text and label, or leave it out"
                )


def _check_labels(labels: Sequence[str]) -> None:
    if not labels:
        raise ValueError(
            "no examples were given; a comparison needs labelled examples with at least two labels"
        )
    if len(labels) < 2:
        raise ValueError(
            f"the examples and queries hold one distinct label ({labels[0]!r}); a comparison needs at "
            "least two labels (with one, every selector scores 100 %): check the label column"
        )


def query_overlap(
    pool: Sequence[Dict[str, Any]], queries: Sequence[Dict[str, Any]], text_key: str = "text"
) -> Dict[str, int]:
    """How many ``queries`` have their text among the ``pool``'s: ``exact``, and ``normalized`` (after case,
    spacing and punctuation are normalised, :func:`ucs.data.dataset.normalize_text`; includes the exact ones).
    O(N + Q)."""
    texts = {str(e[text_key]) for e in pool}
    norm = {normalize_text(t) for t in texts}
    return {
        "exact": sum(str(q[text_key]) in texts for q in queries),
        "normalized": sum(normalize_text(str(q[text_key])) in norm for q in queries),
    }


def warn_overlap(overlap: Dict[str, int], n_queries: int) -> None:
    """A :class:`~ucs.data.DatasetWarning` with the counts of :func:`query_overlap`, when any query is a
    copy."""
    if overlap.get("normalized"):
        warnings.warn(
            f"{overlap['normalized']} of {n_queries} held-out queries are also among the examples "
            f"({overlap['exact']} exactly, the rest after normalising case, spacing and punctuation); "
            "a query is never offered an example with exactly its own text, but near copies raise the "
            "accuracies",
            DatasetWarning,
            stacklevel=2,
        )


def _digest(rows: Sequence[Dict[str, Any]], text_key: str, label_key: str) -> str:
    h = hashlib.sha256()
    for e in rows:
        h.update(json.dumps([str(e[text_key]), str(e[label_key])], ensure_ascii=False).encode("utf-8"))
    return f"{len(rows)} rows, sha256 {h.hexdigest()[:12]}"


def comparison_key(
    pool: Sequence[Dict[str, Any]],
    queries: Sequence[Dict[str, Any]],
    *,
    k: Any,
    seed: int,
    predictor: Any,
    embedder: Any,
    text_key: str = "text",
    label_key: str = "label",
    metric: Optional[str] = None,
    selectors: Optional[Sequence[str]] = None,
    orders: Optional[Sequence[str]] = None,
    reference: Optional[str] = None,
    test_share: float = 0.5,
) -> Dict[str, Any]:
    """What a comparison folder's answers depend on (its ``compare.json`` ``key``): the examples and queries
    (digests), the grid (``selectors``, ``k`` — an int when one —, ``orders``), the ``reference`` cell, the
    split (``seed``, ``test_share``), the predictor's and the embedder's identities, the fields, and the rule
    of selection (the query's own text excluded). ``metric``: the answer metric of a scored comparison (absent
    from a label comparison's key). The race's settings (round size, α, budgets) are not in it: they change
    which answers are asked, not what an answer is."""
    emb = getattr(embedder, "identity", None)
    extra = {} if metric is None else {"metric": str(metric)}
    ks = parse_ks(k)
    return {
        **extra,
        "format": 3,
        "examples": _digest(pool, text_key, label_key),
        "queries": _digest(queries, text_key, label_key),
        "k": ks[0] if len(ks) == 1 else ks,
        "selectors": list(selectors or D.COMPARE_SELECTORS),
        "orders": list(orders or default_orders()),
        "reference": reference or default_reference(ks).id,
        "seed": int(seed),
        "test_share": float(test_share),
        "predictor": predictor_identity(predictor),
        "embedder": json.dumps(emb, sort_keys=True, default=str)
        if emb is not None
        else type(embedder).__name__,
        "text_key": text_key,
        "label_key": label_key,
        "exclude_query_texts": True,
    }


#: What other commands leave in their output folders (a comparison never writes into such a folder).
_OTHER_RUNS = {
    RunFolder.MANIFEST: "ucs evaluate / ucs demo",
    RunFolder.RESULTS: "ucs evaluate / ucs demo",
    "tune.json": "ucs tune",
    "variants.json": "ucs tune",
    "tuned_config.json": "ucs tune",
}


def check_folder(out: "str | Path", key: Optional[Dict[str, Any]]) -> List[dict]:
    """The records already in ``out`` (resume), after checking that they answer the comparison keyed ``key``.

    Raises ``ValueError`` when ``out`` is a file, holds another command's run or other files, holds a
    comparison with another key (the differing fields are named; ``key=None`` checks only the rest) or a
    damaged ``compare.json``. Writes nothing."""
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
            raise ValueError(
                f"{out} holds {kind} ({', '.join(found[:4])}), not a comparison; nothing was written "
                "there: choose another folder (a new or empty one)"
            )
        return []
    try:
        old = json.loads(meta.read_text(encoding="utf-8")).get("key")
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise ValueError(
            f"{meta} is damaged; choose another folder, or move this one aside (ucs compare --fresh)"
        ) from None
    if key is None:
        return []
    if not isinstance(old, dict):
        raise ValueError(
            f"{out} holds a comparison made by an earlier ucs, keyed differently; choose another "
            "folder, or move this one aside (ucs compare --fresh)"
        )
    diffs = config_differences(old, key)
    if diffs:
        shown = "; ".join(diffs[:4]) + (f"; and {len(diffs) - 4} more" if len(diffs) > 4 else "")
        raise ValueError(
            f"{out} holds a comparison with other inputs (differs in: {shown}); choose another "
            "folder, or move this one aside (ucs compare --fresh)"
        )
    return RunFolder(out).read_records()


def _meta(folder: Optional[Path]) -> Dict[str, Any]:
    """What the folder's ``compare.json`` said before this call (empty without one)."""
    meta = None if folder is None else folder / "compare.json"
    return json.loads(meta.read_text(encoding="utf-8")) if meta is not None and meta.is_file() else {}


def _saved_index_holds(path: Path, emb: Any, best: Cell, before: Dict[str, Any]) -> bool:
    """Whether ``path`` already holds the recommended index of this comparison: the previous call finished
    with the same recommendation (``before``, checked against the same key) and the index loads with every
    file verified."""
    if (before.get("recommended") or {}).get("cell") != best.id or SelectorIndex.latest_version(path) is None:
        return False
    try:
        index = SelectorIndex.load(path, embedder=emb, warmup=False)
    except (ValueError, OSError):  # damaged or partial: fitted again
        return False
    return index.method_ == best.selector and index.order == best.order


def answered(out: "str | Path | None", cells: Sequence[str]) -> Tuple[int, bool]:
    """``(answers of these cells in out/records.jsonl, whether that comparison finished)``: a resumed run asks
    only for the rest, a finished one nothing; ``(0, False)`` without a folder. O(records)."""
    path = None if out is None else RunFolder(out).records
    if path is None or not path.is_file():
        return 0, False
    wanted = set(cells)
    done = {
        (r.get("method"), int(r.get("query", -1))) for r in read_records(path) if r.get("method") in wanted
    }
    meta = _meta(Path(out))
    finished = bool(meta.get("recommended")) and (meta.get("race") or {}).get("stopped") in (
        "decided",
        "validation used up",
        "max queries",
    )
    return len(done), finished


class _Answerer:
    """Answers (cell, query) pairs: fits each selector's index once, embeds the queries once, appends every
    answer to ``records.jsonl`` as it comes (the writer opens on the first answer)."""

    def __init__(
        self,
        pool: List[Dict[str, Any]],
        qs: List[Dict[str, Any]],
        emb: Any,
        predict: Callable,
        folder: Optional[Path],
        text_key: str,
        label_key: str,
        label_ids: Dict[str, int],
        seed: int,
        cache_dir: Any,
        scoring: Any = None,
    ) -> None:
        self.pool, self.qs, self.emb, self.predict, self.folder = pool, qs, emb, predict, folder
        self.text_key, self.label_key, self.label_ids, self.seed, self.cache_dir = (
            text_key,
            label_key,
            label_ids,
            seed,
            cache_dir,
        )
        self.scoring, self.indexes, self.query_emb, self.writer = scoring, {}, None, None
        self.share_tokens = (
            False  # a selector of the grid reads token embeddings: keep them from the pool's pass
        )
        self.records: List[dict] = []
        self.embed_ms: Optional[float] = None
        self.part: Dict[int, str] = {}

    def _index(self, selector: str) -> SelectorIndex:
        """The index of ``selector``: the first one embeds and clusters the pool, every other one shares its
        embeddings and clusters and fits only its selector (:meth:`SelectorIndex.set_method`: the selections
        of an index fitted on its own)."""
        if selector not in self.indexes:
            if self.indexes:
                first = next(iter(self.indexes.values()))
                self.indexes[selector] = copy.copy(first).set_method(selector)
            else:
                remember = getattr(self.emb, "remember_tokens", None)
                if (
                    self.share_tokens and remember is not None
                ):  # one pass of the pool for Set-BSR and the rest
                    remember([example_text(x, [self.text_key]) for x in self.pool])
                with stage("compare: the pool (embed, cluster)", total=len(self.pool), kind="embed"):
                    self.indexes[selector] = SelectorIndex(
                        self.emb,
                        method=selector,
                        input_keys=[self.text_key],
                        output_key=self.label_key,
                        cache_dir=self.cache_dir,
                        random_state=self.seed,
                    ).fit(self.pool)
        return self.indexes[selector]

    def __call__(self, cell: Cell, q: int) -> float:
        return self.many([(cell, q)])[0]

    def many(self, pairs: Sequence[Tuple[Cell, int]]) -> List[float]:
        """The scores of (cell, query) pairs: every selection here, the predictions side by side where the
        predictor can (its ``many``), each record written as the batch returns."""
        if not pairs:
            return []
        if self.query_emb is None:  # a finished comparison resumed embeds nothing and fits no index
            t0 = time.perf_counter()
            self.query_emb = np.asarray(
                self.emb.embed([str(x[self.text_key]) for x in self.qs]), dtype=np.float32
            )
            self.embed_ms = 1e3 * (time.perf_counter() - t0) / max(len(self.qs), 1)
        picked: List[Tuple[Any, List[int], List[dict], float]] = []

        def items() -> Iterator[Tuple[Dict[str, Any], List[dict]]]:  # selected as the model needs them
            for cell, q in pairs:
                index = self._index(cell.selector)
                t0 = time.perf_counter()
                chosen, demos = _select(
                    index, str(self.qs[q][self.text_key]), cell.k, self.query_emb[q], cell.order
                )
                picked.append((index, chosen, demos, 1e3 * (time.perf_counter() - t0)))
                yield self.qs[q], demos

        scores = []
        for i, answer in enumerate(_predict_many(self.predict, items())):
            cell, q = pairs[i]
            rec = self._record(cell, q, picked[i], answer)
            if self.folder is not None:
                if self.writer is None:
                    self.writer = RunFolder(self.folder).record_writer()
                self.writer.write([rec])
            self.records.append(rec)
            scores.append(float(rec["score"]))
            advance(1, kind="answer")
        return scores

    def _record(
        self,
        cell: Cell,
        q: int,
        pick: Tuple[Any, List[int], List[dict], float],
        answer: Tuple[bool, Any, float],
    ) -> dict:
        index, chosen, demos, select_ms = pick
        correct, text, seconds = answer
        ex = self.qs[q]
        rec = {
            "method": cell.id,
            "seed": 0,
            "query": q,
            "correct": bool(correct),
            "score": float(bool(correct)),
            "prediction": text,
            "gold": str(ex[self.label_key]),
            "gold_id": self.label_ids[str(ex[self.label_key])],
            "selected": chosen,
            "select_ms": select_ms,
            "predict_ms": 1e3 * seconds,
            "selector": cell.selector,
            "k": cell.k,
            "order": cell.order,
            "part": self.part.get(q, "validation"),
        }
        if self.scoring is not None:
            rec.update(self.scoring.fields(ex, text, chosen, demos, index.embeddings_, self.query_emb[q]))
        return rec

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _predict_many(
    predict: Callable, items: Iterable[Tuple[Dict[str, Any], List[dict]]]
) -> Iterator[Tuple[bool, Any, float]]:
    """``(correct, answer, model seconds)`` for each (query, demonstrations), in order, as they come:
    ``predict.many`` when it has one (:func:`as_predictor`'s predictors do), else one call after another."""
    many = getattr(predict, "many", None)
    if many is not None:
        yield from many(items)
        return
    for ex, d in items:
        t0 = time.perf_counter()
        correct, answer = predict(ex, d)
        yield correct, answer, time.perf_counter() - t0


def _select(
    index: SelectorIndex, text: str, k: int, query_emb: np.ndarray, order: str
) -> Tuple[List[int], List[dict]]:
    """``index.select(text, k)`` in ``order`` under the evaluation's rule: a query-dependent selector never
    offers the query an example with exactly its own text (its copies move behind every other candidate);
    returns the chosen positions and examples."""
    sel = index.selector_
    if not sel.query_dependent:  # one shared set, the same for every query
        shared = index.select(text, k, query_embeddings=query_emb)
        return [int(i) for i in shared.indices], shared.examples
    result = sel.select(query_emb[None, :], k, query_texts=[text], exclude_query_texts=True, order=order)
    chosen = [int(i) for i in result.indices[0]]
    return chosen, [dict(index.examples_[i]) for i in chosen]


def _scores(records: Sequence[dict], method: str, queries: Sequence[int]) -> Optional[np.ndarray]:
    """The scores of ``method`` on ``queries`` (aligned), or ``None`` when one is missing."""
    by = {
        int(r["query"]): float(r.get("score", float(bool(r["correct"]))))
        for r in records
        if r["method"] == method
    }
    return np.asarray([by[q] for q in queries]) if all(q in by for q in queries) else None


def _rows(
    records: List[dict],
    cells: Sequence[Cell],
    ref: Cell,
    left: Dict[str, int],
    pool_label_ids: np.ndarray,
    scored: bool = False,
) -> List[Dict[str, Any]]:
    """One row per cell on the validation queries it answered, Δ against the reference on those queries;
    ``scored``: the copy baseline instead of the no-LM vote."""
    share = label_agreement(records, pool_label_ids, run_seeds=[0])
    vote = {} if scored else demonstration_vote(records, pool_label_ids, run_seeds=[0])
    summ = score_summary(records)
    copied = score_summary(records, "copy_score") if scored else {}
    rows = []
    for c in cells:
        mine = [r for r in records if r["method"] == c.id]
        qs = sorted(int(r["query"]) for r in mine)
        st = score_stats(
            _scores(records, c.id, qs) if qs else [],
            None if c == ref or not qs else _scores(records, ref.id, qs),
        )
        s = summ.get(c.id)
        rows.append(
            {
                **c.as_dict(),
                "reference": c == ref,
                "accuracy": st["mean"],
                "ci": st["ci"],
                "delta": st.get("delta"),
                "delta_ci": st.get("delta_ci"),
                "significant": bool(st.get("delta_ci") and (st["delta_ci"][0] > 0 or st["delta_ci"][1] < 0)),
                "left_round": left.get(c.id),
                "own_label": (share.get(c.id) or {}).get("mean"),
                **(copy_fields(s, copied.get(c.id)) if scored else _vote_fields(s, vote.get(c.id))),
                "select_ms": float(np.mean([r["select_ms"] for r in mine])) if mine else 0.0,
                "predict_ms": float(np.mean([r["predict_ms"] for r in mine])) if mine else 0.0,
                "n_queries": len(mine),
            }
        )
    rows.sort(key=lambda r: (-(r["accuracy"] if r["accuracy"] is not None else -1.0), not r["reference"]))
    return rows


def _vote_fields(model: Optional[Dict[str, Any]], vote: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The no-LM baseline of one selector: the majority label of its own demonstrations (``vote``, with its
    interval) and the model's paired gain over it (``over_vote``, ``over_vote_ci``)."""
    d = paired_delta(model, vote) if model is not None and vote is not None else None
    return {
        "vote": None if vote is None else vote["mean"],
        "vote_ci": None if vote is None else vote["ci"],
        "over_vote": None if d is None else d["delta"],
        "over_vote_ci": None if d is None else d["ci"],
    }


def _test_rows(records: List[dict], validated: Cell, ref: Cell, test: Sequence[int]) -> List[Dict[str, Any]]:
    """The validated cell and the reference on the test queries, Δ against the reference."""
    rows = []
    for role, c in (("validated", validated), ("reference", ref)):
        if role == "reference" and c == validated:
            continue
        st = score_stats(_scores(records, c.id, test), None if c == ref else _scores(records, ref.id, test))
        rows.append(
            {
                **c.as_dict(),
                "role": role,
                "accuracy": st["mean"],
                "ci": st["ci"],
                "delta": st.get("delta"),
                "delta_ci": st.get("delta_ci"),
                "n_queries": len(test),
            }
        )
    if validated == ref:
        rows[0]["role"] = "validated (the reference)"
    return rows


def recommend(test_rows: Sequence[Dict[str, Any]], ref: Cell) -> Tuple[Cell, str]:
    """The validated cell when its paired interval against the reference on the test queries lies above 0,
    else the reference; and why."""
    v = test_rows[0]
    cell = Cell(v["selector"], int(v["k"]), v["order"])
    if cell == ref:
        return ref, "the reference led the validation race"
    lo, hi = v["delta_ci"]
    said = (
        f"{100 * v['delta']:+.1f} points over {ref.id} on the {v['n_queries']} test queries, paired interval "
        f"[{100 * lo:+.1f}, {100 * hi:+.1f}]"
    )
    if lo > 0:
        return cell, f"validated {cell.id}: {said} lies above 0"
    return ref, f"validated {cell.id}: {said} does not lie above 0, so the reference stays"


def _race_info(
    race: Dict[str, Any],
    cells: Sequence[Cell],
    round_size: int,
    alpha: float,
    early_stop: bool,
    n_validation: int,
) -> Dict[str, Any]:
    """The race as ``compare.json`` keeps it (the score matrix left out)."""
    return {
        "round_size": round_size,
        "alpha": alpha,
        "early_stop": early_stop,
        "validation_queries": n_validation,
        "planned_queries": race["planned_queries"],
        "planned_rounds": race["planned_rounds"],
        "rounds": race["rounds"],
        "queries_used": race["queries_used"],
        "stopped": race["stopped"],
        "leader": cells[race["leader"]].id,
        "asked": race["asked"],
        "full": race["full"],
        "saved_share": 1.0 - race["asked"] / race["full"] if race["full"] else None,
        "left": {cells[c].id: r for c, r in sorted(race["left"].items())},
    }


def compare(
    examples: Sequence[Dict[str, Any]],
    predictor: Any,
    *,
    queries: Optional[Sequence[Dict[str, Any]]] = None,
    selectors: Sequence[str] = D.COMPARE_SELECTORS,
    k: "int | str | Sequence[int]" = 8,
    orders: "str | Sequence[str] | None" = None,
    reference: "str | None" = None,
    n_queries: int = 200,
    test_share: float = 0.5,
    round_size: int = 20,
    alpha: float = 0.05,
    early_stop: bool = True,
    max_minutes: Optional[float] = None,
    max_queries: Optional[int] = None,
    text_key: str = "text",
    label_key: str = "label",
    metric: Any = None,
    embedder: Any = None,
    out: "str | Path | None" = None,
    seed: int = 0,
    cache_dir: "str | Path | None" = None,
    progress: bool = False,
) -> CompareResult:
    """Race the cells selector × k × order over validation queries in rounds, confirm the winner on test
    queries.

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
    selectors, k, orders : the grid
        Methods (default :data:`ucs.defaults.COMPARE_SELECTORS`), demonstrations per prompt (an int, a list or
        ``"4,8,16"``) and demonstration orders (default: ``vote_last``, what a saved index gives an
        application). Query-independent selectors (random, votek, cover) make one cell per k.
    reference : str, optional
        The cell every Δ is measured against, ``selector:k:order`` (default ``topk:8:selected``, or TopK at
        the grid's first k when 8 is not in it): always answered, on validation and test.
    test_share : float
        Share of the held-out queries kept for the test part, in (0, 1); the rest validates.
    round_size, alpha, early_stop, max_minutes, max_queries : the race
        Validation queries per round; the family error rate of eliminating the best cell
        (:mod:`ucs.evaluation.sequential`); ``False`` answers every cell on every validation query; stop
        between rounds once the predictor has spent ``max_minutes``; use at most ``max_queries`` validation
        queries (the rounds of the correction are planned from it).
    metric : callable, str or AnswerMetric, optional
        ``metric(query_example, answer) -> bool``; default: the answer (a string, a message's ``content``, or
        a DSPy prediction's ``label_key`` field) equals the gold label up to case and surrounding spaces. A
        metric name (``"exact"``, ``"f1"``, ``"json"``, ``"regex:PATTERN"``, ``"module:function"``,
        :func:`~ucs.evaluation.answer_metrics.get_metric`) or an ``AnswerMetric`` scores free-form answers
        instead: each record gets a ``score`` in [0, 1] and the copy baseline's (the answer of the chosen
        demonstration nearest the query), the table the mean score and the model's gain over the copy, and
        answers need only differ (all-distinct answers are fine).
    embedder : str or embedder, optional
        Retrieval embedder of every index (default ``all-minilm-l6-v2``, through
        :func:`ucs.embedding.load_retrieval_embedder`).
    out : path, optional
        Folder for ``records.jsonl`` (resumable), ``compare.md`` / ``compare.json`` / ``compare.html`` and
        ``index/`` (the recommended cell's selector fitted on every example, saved with the cell's order).
    progress : bool
        Show the pool's embedding and the answers as they come (at most the race's worst case) on standard
        error (:mod:`ucs.utils.progress`; the command line turns it on).

    Returns
    -------
    CompareResult

    Examples
    --------
    The embedder is :class:`ucs.testing.DummyEmbedder`, a deterministic test double that needs no weights (its
    vectors of different texts are unrelated, so TopK's neighbours here are arbitrary), and the predictor
    answers the label most of its demonstrations carry, where a real one asks a model.

    >>> from ucs import compare
    >>> from ucs.testing import DummyEmbedder
    >>> examples = [
    ...     {"text": f"{w} request {i}", "label": w} for w in ("card", "loan", "fx") for i in range(10)
    ... ]
    >>> def vote(query, demonstrations):
    ...     labels = [d["label"] for d in demonstrations]
    ...     return max(labels, key=labels.count)
    >>> res = compare(
    ...     examples, vote, selectors=["topk", "random"], k=4, n_queries=12, embedder=DummyEmbedder()
    ... )
    >>> [(row["cell"], round(row["accuracy"], 2)) for row in res.rows]  # on the 6 validation queries
    [('topk:4:selected', 0.5), ('topk:4:vote_last', 0.33), ('random:4:selected', 0.0)]
    >>> res.recommended_cell  # the race's leader only if it beats TopK on the 6 test queries
    'topk:4:selected'
    """
    _check_inputs(examples, text_key, label_key, "examples")
    if queries is None:
        pool, qs = split_examples(examples, n_queries, seed)
    else:
        _check_inputs(queries, text_key, label_key, "queries")
        pool, qs = [dict(e) for e in examples], [dict(q) for q in queries][:n_queries]
    grid = plan_grid(selectors, k, orders, reference)
    cells, ref = grid["cells"], grid["reference"]
    val_order, test = split_parts(len(qs), test_share, seed)
    check_race(round_size, alpha, max_minutes, max_queries)
    labels = sorted({str(e[label_key]) for e in list(pool) + list(qs)})
    scoring = answer_scoring(metric, label_key)  # a metric name: free-form answers, scored in [0, 1]
    _check_labels(labels) if scoring is None else scoring.check(labels)
    label_ids = {y: i for i, y in enumerate(labels)}
    predict = as_predictor(
        predictor, text_key=text_key, label_key=label_key, metric=None if scoring is not None else metric
    )
    emb = _embedder(embedder)
    overlap = query_overlap(pool, qs, text_key)
    warn_overlap(overlap, len(qs))
    key = comparison_key(
        pool,
        qs,
        k=grid["ks"],
        seed=seed,
        predictor=predictor,
        embedder=emb,
        text_key=text_key,
        label_key=label_key,
        metric=None if scoring is None else scoring.name,
        selectors=grid["selectors"],
        orders=grid["orders"],
        reference=ref.id,
        test_share=test_share,
    )
    folder = None if out is None else Path(out)
    records = check_folder(folder, key) if folder is not None else []
    before = _meta(folder)
    head = {
        "key": key,
        "cells": [c.id for c in cells],
        "reference": ref.id,
        "k": grid["ks"],
        "seed": seed,
        "n_queries": len(qs),
        "n_pool": len(pool),
        "queries_in_examples": overlap,
        "split": {
            "test_share": test_share,
            "validation": len(val_order),
            "test": len(test),
            "validation_order": val_order,
            "test_queries": test,
        },
    }
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "compare.json", head)
    answer = _Answerer(
        pool, qs, emb, predict, folder, text_key, label_key, label_ids, seed, cache_dir, scoring
    )
    answer.part = {q: "test" for q in test}
    answer.share_tokens = any(s.needs_token_embedder for s in grid["specs"])
    known = {
        (r["method"], int(r["query"])): float(r.get("score", float(bool(r["correct"])))) for r in records
    }
    spent = sum(float(r.get("predict_ms", 0.0)) for r in records) / 1e3
    worst = len(cells) * planned_rounds(len(val_order), round_size, max_queries)[0] + 2 * len(test)
    try:
        with progress_enabled(progress), stage("compare: answers (at most)", total=worst, kind="answer"):
            advance(0, kind="answer", reused=len(known))
            race = run_race(
                cells,
                val_order,
                answer,
                known,
                round_size=round_size,
                alpha=alpha,
                early_stop=early_stop,
                max_queries=max_queries,
                max_minutes=max_minutes,
                reference=0,
                model_seconds=lambda: spent + sum(r["predict_ms"] for r in answer.records) / 1e3,
            )
            validated = cells[race["leader"]]
            answer.many(
                [(c, q) for c in dict.fromkeys([validated, ref]) for q in test if (c.id, q) not in known]
            )
    finally:
        answer.close()
    records = records + answer.records
    embed_ms = answer.embed_ms if answer.embed_ms is not None else before.get("embed_ms")
    used = set(val_order[: race["queries_used"]])
    val_records = [r for r in records if int(r["query"]) in used]
    race_info = _race_info(race, cells, round_size, alpha, early_stop, len(val_order))
    rows = _rows(
        val_records,
        cells,
        ref,
        race_info["left"],
        np.asarray([label_ids[str(e[label_key])] for e in pool]),
        scoring is not None,
    )
    test_rows = _test_rows(records, validated, ref, test)
    best, why = recommend(test_rows, ref)
    info = {
        "why": why,
        "n_pool": len(pool),
        "k": grid["ks"],
        "embed_ms": embed_ms,
        "queries_in_examples": overlap,
        "metric": None if scoring is None else scoring.name,
        "reference": ref.id,
        "race": race_info,
        "validated": validated.as_dict(),
        "recommended": best.as_dict(),
        "split": head["split"],
    }
    result = CompareResult(
        rows, best.selector, len(qs), folder, info=info, test_rows=test_rows, recommended_cell=best.id
    )
    if folder is not None:
        if not _saved_index_holds(folder / "index", emb, best, before):
            index = SelectorIndex(
                emb,
                method=best.selector,
                input_keys=[text_key],
                output_key=label_key,
                cache_dir=cache_dir,
                random_state=seed,
                order=best.order,
            ).fit(list(pool) + list(qs))
            index.save(folder / "index")
        result.index_dir = folder / "index"
        atomic_write_text(folder / "compare.md", result.to_markdown())
        atomic_write_text(folder / "compare.html", result.to_html(records, qs, pool, text_key, label_key))
        atomic_write_json(
            folder / "compare.json",
            {
                **head,
                "rows": rows,
                "test_rows": test_rows,
                "race": race_info,
                "validated": validated.as_dict(),
                "recommended": best.as_dict(),
                "why": why,
                "embed_ms": embed_ms,
                "metric": info["metric"],
            },
        )
    return result


def plan_grid(selectors: Sequence[str], k: Any, orders: Any, reference: Any) -> Dict[str, Any]:
    """The grid's ``selectors`` (canonical names) and their ``specs`` (:class:`~ucs.selectors.MethodSpec`,
    parsed here once), ``ks``, ``orders``, ``reference`` cell and ``cells`` (the reference first). Raises
    ``ValueError`` naming the bad value."""
    specs = list(dict.fromkeys(MethodSpec.parse(s) for s in selectors))  # the grid's one parse of its methods
    sels = [s.name for s in specs]
    ks = parse_ks(k)
    ords = default_orders() if orders is None else parse_orders(orders)
    ref = default_reference(ks) if reference is None else parse_cell(reference)
    return {
        "selectors": sels,
        "specs": specs,
        "ks": ks,
        "orders": ords,
        "reference": ref,
        "cells": grid_cells(specs, ks, ords, ref),
    }


def check_race(
    round_size: int, alpha: float, max_minutes: Optional[float], max_queries: Optional[int]
) -> None:
    """Refuse a race that cannot run: ``round_size < 1``, ``alpha`` outside (0, 1), a non-positive budget."""
    if int(round_size) < 1:
        raise ValueError(f"round_size must be at least 1 (validation queries per round); got {round_size}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1 (such as 0.05); got {alpha}")
    if max_minutes is not None and not float(max_minutes) > 0:
        raise ValueError(f"max_minutes must be positive (minutes of model time); got {max_minutes}")
    if max_queries is not None and int(max_queries) < 1:
        raise ValueError(f"max_queries must be at least 1 (validation queries); got {max_queries}")


def _embedder(embedder: Any) -> Any:
    if embedder is None or isinstance(embedder, str):
        from ucs.embedding import load_retrieval_embedder

        return load_retrieval_embedder(embedder or "all-minilm-l6-v2")
    return embedder

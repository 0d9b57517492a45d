"""Plain verdicts of an accuracy page's rows against one reference cell, over every (dataset, backbone) pair.

A page that compares every row with one reference (``delta_vs_cell``, e.g. TopK) reads each row's paired 95 %
intervals cell by cell; this module turns them into one sentence per row and checks the page's bar. Notation:
for a row ``r`` and a pair ``(d, b)`` (dataset, backbone), ``acc(r, d, b)`` is ``"better"`` / ``"worse"`` /
``"noise"`` as the paired interval of ``r − reference`` lies above 0, below it or around it, ``None`` when not
measured yet; ``vote(r, d, b)`` is ``"better"`` when the model reading ``r``'s prompts is significantly above
the no-LM vote (the majority label of the prompt's own demonstrations *and* the reference's k-NN vote),
otherwise ``"noise"`` / ``"worse"`` (``None``: no vote recorded).

The bar (the beat-TopK target): a row *clears* it when, with every backbone, ``acc`` and ``vote`` are both
``"better"`` on a majority of the datasets. Pure functions over verdict strings; cost ``O(rows × pairs)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["PairVerdict", "row_sentence", "clears_bar", "verdict_section"]


@dataclass(frozen=True)
class PairVerdict:
    """One row's verdicts on one (dataset, backbone) pair."""

    dataset: str
    backbone: str
    acc: Optional[str]  # "better" | "worse" | "noise" | None (not measured)
    vote: Optional[str]  # "better" | "worse" | "noise" | None (no vote recorded)


def _where(pairs: Sequence[PairVerdict]) -> str:
    return ", ".join(f"{p.dataset} · {p.backbone}" for p in pairs)


def _headline(better: int, worse: int, noise: int, ref: str) -> str:
    if better + worse + noise == 0:
        return "not measured yet"
    if better == worse == 0:
        return f"no difference from {ref} beyond noise"
    if worse == noise == 0:
        return f"better than {ref} everywhere measured"
    if better == noise == 0:
        return f"worse than {ref} everywhere measured"
    if worse == 0:
        return f"better than {ref} on some pairs, never worse"
    if better == 0:
        return f"worse than {ref} on some pairs, never better"
    return f"mixed: better than {ref} on some pairs, worse on others"


def row_sentence(setting: str, method: str, pairs: Sequence[PairVerdict], ref: str) -> str:
    """One markdown bullet: the row's headline verdict, where it is better / worse, and its no-LM vote record.

    ``pairs``: the row's verdicts on every (dataset, backbone) pair of the page, measured or not.
    """
    measured = [p for p in pairs if p.acc is not None]
    better = [p for p in measured if p.acc == "better"]
    worse = [p for p in measured if p.acc == "worse"]
    n_noise = len(measured) - len(better) - len(worse)
    head = f"- **{setting}** (`{method}`): {_headline(len(better), len(worse), n_noise, ref)}"
    detail: List[str] = []
    if better:
        detail.append(f"better on {_where(better)}")
    if worse:
        detail.append(f"worse on {_where(worse)}")
    if n_noise:
        detail.append(f"within noise on {n_noise}")
    if measured:
        detail.append(f"{len(measured)} pairs measured")
    voted = [p for p in measured if p.vote is not None]
    if voted:
        above = sum(p.vote == "better" for p in voted)
        detail.append(f"the model above the no-LM vote on {above} of {len(voted)}")
    missing = [p for p in pairs if p.acc is None]
    if missing:
        detail.append(f"not measured yet: {_where(missing)}")
    return head + (" (" + "; ".join(detail) + ")." if detail else ".")


def clears_bar(pairs: Sequence[PairVerdict]) -> Optional[bool]:
    """Whether a row clears the bar; ``None`` while some pair is not measured and the bar is still
    reachable."""
    by_backbone: Dict[str, List[PairVerdict]] = {}
    for p in pairs:
        by_backbone.setdefault(p.backbone, []).append(p)
    if not by_backbone:
        return None
    pending = False
    for ps in by_backbone.values():
        need = len(ps) // 2 + 1
        wins = sum(p.acc == "better" and p.vote == "better" for p in ps)
        open_ = sum(p.acc is None for p in ps)
        if wins + open_ < need:
            return False
        pending = pending or wins < need
    return None if pending else True


def verdict_section(rows: Dict[Tuple[str, str], List[PairVerdict]], ref: str) -> List[str]:
    """Markdown lines: a bullet per row (:func:`row_sentence`) and the bar's outcome (:func:`clears_bar`).

    ``rows``: ``(setting label, method) → verdicts`` for every row compared with the reference ``ref``.
    """
    lines = [
        "## Verdict per selector",
        "",
        f"Each row against {ref} over every (dataset · backbone) pair of this page, from the paired 95 % "
        'intervals above; "the model above the no-LM vote" counts the pairs where the model reading the '
        "row's prompts is significantly above both the majority label of those prompts' demonstrations and "
        f"{ref}'s k-NN vote.",
        "",
    ]
    lines += [row_sentence(s, m, ps, ref) for (s, m), ps in rows.items()]
    outcome = {key: clears_bar(ps) for key, ps in rows.items()}
    cleared = [s for (s, _), ok in outcome.items() if ok]
    open_ = [s for (s, _), ok in outcome.items() if ok is None]
    bar = (
        f"**The bar** — a row significantly above {ref} and above the no-LM vote on a majority of the "
        "datasets with every backbone: "
    )
    if cleared:
        bar += "cleared by " + ", ".join(cleared) + "."
    elif open_:
        bar += "not cleared so far; still reachable, with pairs to measure, for " + ", ".join(open_) + "."
    else:
        bar += "**not met** by any row."
    return lines + ["", bar, ""]

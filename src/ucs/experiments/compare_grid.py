"""The grid of a comparison — selector × k × order — and its race over validation rounds.

A *cell* is one way of prompting: a selector, the number ``k`` of demonstrations and their order, spelled
``selector:k:order`` (``topk:8:selected``). Query-independent selectors (``random``, ``votek``, ``cover``)
show every query the same demonstrations in their own order, so they make one cell per ``k``, with order
``selected``.

The held-out queries are split, seeded, into a *validation* part that chooses and a *test* part that confirms
(:func:`split_parts`). The validation queries are answered in a seeded random order, in rounds; after each
round the cells are raced with :class:`ucs.evaluation.sequential.Race` (an eliminated cell is not asked again;
the reference cell is always asked, so every Δ is paired). The number of looks of the Bonferroni correction is
fixed before the start from the planned validation size and the round size (:func:`planned_rounds`).

Cost: one predictor call per (cell, query) asked; the race's looks are O(C · n) each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ucs import defaults as D
from ucs.evaluation.metrics import bootstrap_ci, paired_bootstrap_ci
from ucs.evaluation.sequential import EliminationRule, Race
from ucs.selectors.method import MethodSpec

__all__ = [
    "Cell",
    "ORDERS",
    "ORDERLESS",
    "grid_cells",
    "parse_cell",
    "parse_ks",
    "parse_orders",
    "default_reference",
    "split_parts",
    "planned_rounds",
    "run_race",
    "score_stats",
]

#: The demonstration orders a cell can take (:data:`ucs.selectors.base.ORDERS`).
ORDERS = ("selected", "similar_first", "similar_last", "vote_last")
#: Base selectors that show every query the same demonstrations: one cell per k, order ``selected``.
ORDERLESS = ("random", "votek", "cover")


@dataclass(frozen=True)
class Cell:
    """One way of prompting: ``selector`` (canonical method), ``k`` demonstrations, their ``order``."""

    selector: str
    k: int
    order: str

    @property
    def id(self) -> str:
        return f"{self.selector}:{self.k}:{self.order}"

    def as_dict(self) -> Dict[str, Any]:
        return {"cell": self.id, "selector": self.selector, "k": self.k, "order": self.order}


def _orderless(spec: MethodSpec) -> bool:
    return spec.base in ORDERLESS


def parse_ks(value: Union[int, str, Sequence[Any]]) -> List[int]:
    """``8``, ``"4,8,16"`` or ``[4, 8]`` → distinct positive ints, in the given order. Raises
    ``ValueError``."""
    items = (
        value.split(",") if isinstance(value, str) else ([value] if isinstance(value, int) else list(value))
    )
    out: List[int] = []
    for item in items:
        try:
            k = int(str(item).strip())
        except ValueError:
            raise ValueError(
                f"k must be positive whole numbers separated by commas (such as 4,8,16); got {item!r}"
            ) from None
        if k < 1:
            raise ValueError(f"k must be at least 1 (demonstrations per prompt); got {k}")
        if k not in out:
            out.append(k)
    if not out:
        raise ValueError("give at least one k (such as 8 or 4,8,16)")
    return out


def parse_orders(value: Union[str, Sequence[str]]) -> List[str]:
    """``"selected,vote_last"`` or a list → distinct orders of :data:`ORDERS`. Raises ``ValueError``."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out: List[str] = []
    for item in items:
        o = str(item).strip()
        if o not in ORDERS:
            raise ValueError(f"unknown order {o!r}; choose from {', '.join(ORDERS)} (comma-separated)")
        if o not in out:
            out.append(o)
    if not out:
        raise ValueError(f"give at least one order: {', '.join(ORDERS)}")
    return out


def parse_cell(spec: str) -> Cell:
    """``"topk:8:selected"`` → :class:`Cell`. Raises ``ValueError`` naming the expected spelling."""
    parts = str(spec).split(":")
    if len(parts) != 3:
        raise ValueError(f"write the reference as selector:k:order, such as topk:8:selected; got {spec!r}")
    method = MethodSpec.parse(parts[0].strip())
    k = parse_ks(parts[1])[0]
    order = parse_orders(parts[2])[0]
    return Cell(method.name, k, "selected" if _orderless(method) else order)


def default_reference(ks: Sequence[int]) -> Cell:
    """TopK, order ``selected`` (LangChain's similarity selector), at the default k (8) when the grid has it,
    else at the grid's first k."""
    k = 8 if 8 in ks or not ks else int(ks[0])
    return Cell("topk", k, "selected")


def grid_cells(
    selectors: Sequence["MethodSpec | str"],
    ks: Sequence[int],
    orders: Sequence[str],
    reference: Optional[Cell] = None,
) -> List[Cell]:
    """The cells of selectors × ks × orders (orderless selectors: one per k), the reference first. A selector
    is a :class:`~ucs.selectors.MethodSpec` (a name is parsed); a cell holds its canonical name."""
    cells: List[Cell] = [reference] if reference is not None else []
    for s in map(MethodSpec.parse, selectors):
        for k in ks:
            for o in ["selected"] if _orderless(s) else orders:
                c = Cell(s.name, int(k), o)
                if c not in cells:
                    cells.append(c)
    return cells


def split_parts(n: int, test_share: float, seed: int) -> Tuple[List[int], List[int]]:
    """``(validation positions in their answering order, test positions ascending)`` of ``n`` held-out
    queries: a seeded permutation whose first ``n − round(n · test_share)`` positions validate. The same for
    the same arguments in every process. Raises ``ValueError`` when either part would be empty."""
    if not 0.0 < float(test_share) < 1.0:
        raise ValueError(
            f"test_share must lie strictly between 0 and 1 (the share of held-out queries that "
            f"confirms the choice); got {test_share}"
        )
    n_test = int(round(n * float(test_share)))
    if n_test < 1 or n - n_test < 1:
        raise ValueError(
            f"{n} held-out queries cannot make both a validation and a test part with test share "
            f"{test_share}; hold out more queries"
        )
    perm = np.random.default_rng([int(seed), 7919]).permutation(n).tolist()
    return [int(i) for i in perm[: n - n_test]], sorted(int(i) for i in perm[n - n_test :])


def planned_rounds(n_validation: int, round_size: int, max_queries: Optional[int] = None) -> Tuple[int, int]:
    """``(validation queries planned, rounds R)``: at most ``max_queries`` of the validation queries, answered
    in rounds of ``round_size``; ``R`` fixes the Bonferroni correction before the start."""
    if round_size < 1:
        raise ValueError(f"round_size must be at least 1; got {round_size}")
    planned = n_validation if max_queries is None else max(1, min(n_validation, int(max_queries)))
    return planned, max(1, math.ceil(planned / round_size))


def score_stats(a: Sequence[float], b: Optional[Sequence[float]] = None, seed: int = 0) -> Dict[str, Any]:
    """Mean and bootstrap interval of scores ``a`` (over queries), and ``a − b`` with the paired interval when
    ``b`` (aligned) is given."""
    va = np.asarray(a, dtype=np.float64)
    out: Dict[str, Any] = {
        "mean": float(va.mean()) if va.size else None,
        "ci": list(bootstrap_ci(va, seed=seed)) if va.size else None,
    }
    if b is not None:
        vb = np.asarray(b, dtype=np.float64)
        out["delta"] = float(va.mean() - vb.mean()) if va.size else None
        out["delta_ci"] = list(paired_bootstrap_ci(va, vb, seed=seed)) if va.size else None
    return out


Answer = Callable[[Cell, int], float]


def run_race(
    cells: Sequence[Cell],
    order: Sequence[int],
    answer: Answer,
    known: Dict[Tuple[str, int], float],
    *,
    round_size: int,
    alpha: float,
    early_stop: bool = True,
    max_queries: Optional[int] = None,
    max_minutes: Optional[float] = None,
    model_seconds: Callable[[], float] = lambda: 0.0,
    reference: int = 0,
) -> Dict[str, Any]:
    """Race ``cells`` over the validation queries ``order`` (positions, in answering order).

    ``answer(cell, query)`` returns the score in [0, 1] of a (cell, query) not in ``known`` (``{(cell id,
    query): score}``, the answers already recorded: a resumed race replays them and asks only the rest); an
    answerer with ``many(pairs) -> scores`` gets each round's pairs in one call, to answer them side by side.
    ``cells[reference]`` is asked on every round. ``model_seconds()`` is the model time spent so far (the
    budget ``max_minutes`` is checked between rounds).

    Returns
    -------
    dict
        ``rounds`` (looks made), ``planned_rounds``, ``planned_queries``, ``queries_used``, ``stopped``
        (``decided`` | ``validation used up`` | ``max minutes`` | ``max queries``), ``leader`` (the index of
        the final leader), ``left`` ({cell index: round it left}), ``asked`` (prompts of this race, resumed
        ones included), ``full`` (cells × planned queries), ``scores`` (C × n matrix, NaN where not asked).
    """
    planned, n_rounds = planned_rounds(len(order), round_size, max_queries)
    race = Race(EliminationRule(alpha=alpha, n_cells=len(cells), max_rounds=n_rounds))
    scores = np.full((len(cells), planned), np.nan)
    asked, used, stopped = 0, 0, "validation used up"
    for r in range(n_rounds):
        if max_minutes is not None and r > 0 and model_seconds() >= 60.0 * max_minutes:
            stopped = "max minutes"
            break
        lo, hi = r * round_size, min((r + 1) * round_size, planned)
        slots = [(c, j) for c in range(len(cells)) if race.active[c] or c == reference for j in range(lo, hi)]
        todo = [(c, j) for c, j in slots if (cells[c].id, int(order[j])) not in known]
        for (c, j), s in zip(todo, _answer_all(answer, [(cells[c], int(order[j])) for c, j in todo])):
            scores[c, j] = s
        for c, j in slots:
            s = known.get((cells[c].id, int(order[j])))
            if s is not None:
                scores[c, j] = s
        asked += len(slots)
        used = hi
        if early_stop:
            race.update(scores[:, :hi])
            if race.decided:
                stopped = "decided"
                break
        else:
            race.looks += 1
    else:
        if planned < len(order):
            stopped = "max queries"
    view = scores[:, :used]
    return {
        "rounds": race.looks,
        "planned_rounds": n_rounds,
        "planned_queries": planned,
        "queries_used": used,
        "stopped": stopped,
        "leader": race.leader(np.where(np.isnan(view), 0.0, view)),
        "left": dict(race.left_at),
        "asked": asked,
        "full": len(cells) * planned,
        "scores": view,
    }


def _answer_all(answer: Answer, pairs: List[Tuple[Cell, int]]) -> List[float]:
    """The scores of a round's (cell, query) pairs: in one call to ``answer.many`` when the answerer has it
    (side by side), else one by one."""
    many = getattr(answer, "many", None)
    return list(many(pairs)) if many is not None else [answer(c, q) for c, q in pairs]


def default_orders() -> List[str]:
    """Today's single order: the one an application gets from a saved index
    (:func:`ucs.defaults.application_order`)."""
    return [D.application_order(True)]

"""One way to build a selector from a method name: ``"dpp"``, ``"votek+ucs"``, ``"cover"``.

A *method* is a base selector's short name (:attr:`Selector.name`) optionally followed by ``+ucs`` for its
UCS form (the authors' ``_sgt`` and the spellings ``_ucs`` / ``-ucs`` are accepted, case ignored). The base
names resolve through the selector registry (every :class:`Selector` subclass registers itself), so the
pipeline, ``ucs select`` and ``ucs distributed select`` build their selectors here and nowhere else.

>>> from ucs.selectors.factory import make_selector, parse_method
>>> parse_method("DPP_sgt")
('dpp', True)
>>> make_selector("topk", candidate_num=20)
TopKSelector(prior=None, candidate_num=20, block=1024)
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ucs.selectors.base import Selector
from ucs.selectors.method import (
    BASE_SELECTORS,
    METHODS,
    NO_UCS_FORM,
    MethodSpec,
    has_ucs_form,
    selector_class,
)

__all__ = [
    "BASE_SELECTORS",
    "METHODS",
    "NO_UCS_FORM",
    "MethodSpec",
    "canonical_method",
    "has_ucs_form",
    "make_selector",
    "parse_method",
    "selector_class",
]


def parse_method(name: str) -> Tuple[str, bool]:
    """``"dpp+ucs"`` → ``("dpp", True)``; ``"votek"`` → ``("votek", False)``: :meth:`MethodSpec.parse` as a
    pair.

    ``_ucs``, ``-ucs`` and the authors' ``_sgt`` suffixes are accepted; case is ignored.
    """
    spec = MethodSpec.parse(name)
    return spec.base, spec.ucs


def canonical_method(name: str) -> str:
    """The canonical spelling of a method name: ``"DPP_sgt"`` → ``"dpp+ucs"``
    (``str(MethodSpec.parse(name))``)."""
    return MethodSpec.parse(name).name


def make_selector(
    method: "str | MethodSpec", *, prior: Optional[Any] = None, random_state: int = 0, **params: Any
) -> Selector:
    """An unfitted selector for ``method`` with the given constructor ``params``.

    Parameters
    ----------
    method : MethodSpec or str
        A :class:`MethodSpec`, or a name of :data:`METHODS` (any accepted spelling). A ``+ucs`` method needs
        ``prior``; a base name with a ``prior`` builds the same UCS form (``ucs select --cluster-ids`` does
        this).
    prior : UCSPrior, optional
        The coverage prior, for selectors that take one.
    random_state : int
        The run seed, passed to the selectors that draw at random (Random, VoteK, MDL) and ignored by the
        deterministic ones.
    **params
        Constructor parameters under the class's own names (``candidate_num``, ``scale_factor``, ``k``, ...);
        a name the class does not take is refused, naming the ones it does.

    Cost: O(1); nothing is fitted.
    """
    spec = MethodSpec.parse(method)
    cls = spec.selector_class
    names = cls._param_names()
    unknown = sorted(set(params) - set(names) - {"prior", "random_state"})
    if unknown:
        raise ValueError(
            f"{cls.__name__} has no parameter {unknown[0]!r}; it takes {', '.join(names) or 'none'}"
        )
    if spec.ucs and prior is None:
        raise ValueError(f"method {str(method)!r} is a UCS form: pass prior=UCSPrior(cluster_ids, ...)")
    if prior is not None and "prior" not in names:
        raise ValueError(
            f"{cls.__name__} has no UCS form; drop the prior (or the cluster ids) for {spec.base!r}"
        )
    kwargs = dict(params)
    if prior is not None:
        kwargs["prior"] = prior
    if "random_state" in names:
        kwargs["random_state"] = int(random_state)
    return cls(**kwargs)

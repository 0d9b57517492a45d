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

from ucs.selectors import bsr, cover, dpp, labelaware, mdl, mmr, random, topk, votek  # noqa: F401  (each registers its class)
from ucs.selectors.base import Selector, registered_selectors

__all__ = [
    "BASE_SELECTORS",
    "METHODS",
    "NO_UCS_FORM",
    "canonical_method",
    "has_ucs_form",
    "make_selector",
    "parse_method",
    "selector_class",
]

#: Base selectors in the order tables list them.
BASE_SELECTORS: Tuple[str, ...] = ("random", "topk", "dpp", "mdl", "votek", "cover", "mmr", "labelaware", "bsr")
_SUFFIXES = ("+ucs", "_ucs", "-ucs", "_sgt")


def selector_class(name: str) -> type:
    """The registered :class:`Selector` subclass whose short :attr:`~Selector.name` is ``name``.

    Raises ``ValueError`` naming the known names when none is.
    """
    by_name: dict = {}
    for cls in registered_selectors():  # the class that declares the name, not a subclass inheriting it
        by_name.setdefault(cls.__dict__.get("name"), cls)
    if name not in by_name or name not in BASE_SELECTORS:
        raise ValueError(f"unknown selector {name!r}; choose from {', '.join(BASE_SELECTORS)}")
    return by_name[name]


def has_ucs_form(name: str) -> bool:
    """Whether base selector ``name`` takes a :class:`~ucs.selectors.UCSPrior` (a ``prior`` parameter)."""
    return "prior" in selector_class(name)._param_names()


#: Base selectors without a UCS form: ``random`` (the paper's baseline), ``cover`` (coverage alone) and the
#: relevance-keeping baselines ``mmr``, ``labelaware`` and ``bsr`` (Set-BSR).
NO_UCS_FORM: Tuple[str, ...] = tuple(b for b in BASE_SELECTORS if not has_ucs_form(b))
#: Every method name: a base selector, and ``<base>+ucs`` after each base that has a UCS form.
METHODS: Tuple[str, ...] = tuple(m for b in BASE_SELECTORS for m in ((b,) if b in NO_UCS_FORM else (b, f"{b}+ucs")))


def parse_method(name: str) -> Tuple[str, bool]:
    """``"dpp+ucs"`` → ``("dpp", True)``; ``"votek"`` → ``("votek", False)``.

    ``_ucs``, ``-ucs`` and the authors' ``_sgt`` suffixes are accepted; case is ignored.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a method name must be a non-empty string such as 'dpp+ucs'; got {name!r}")
    key = name.strip().lower()
    ucs = False
    for s in _SUFFIXES:
        if key.endswith(s):
            key, ucs = key[: -len(s)], True
            break
    if key not in BASE_SELECTORS or (ucs and key in NO_UCS_FORM):
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return key, ucs


def canonical_method(name: str) -> str:
    """The canonical spelling of a method name: ``"DPP_sgt"`` → ``"dpp+ucs"``."""
    base, ucs = parse_method(name)
    return f"{base}+ucs" if ucs else base


def make_selector(method: str, *, prior: Optional[Any] = None, random_state: int = 0, **params: Any) -> Selector:
    """An unfitted selector for ``method`` with the given constructor ``params``.

    Parameters
    ----------
    method : str
        A name of :data:`METHODS` (any accepted spelling). A ``+ucs`` method needs ``prior``; a base name
        with a ``prior`` builds the same UCS form (``ucs select --cluster-ids`` does this).
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
    base, ucs = parse_method(method)
    cls = selector_class(base)
    names = cls._param_names()
    unknown = sorted(set(params) - set(names) - {"prior", "random_state"})
    if unknown:
        raise ValueError(f"{cls.__name__} has no parameter {unknown[0]!r}; it takes {', '.join(names) or 'none'}")
    if ucs and prior is None:
        raise ValueError(f"method {method!r} is a UCS form: pass prior=UCSPrior(cluster_ids, ...)")
    if prior is not None and "prior" not in names:
        raise ValueError(f"{cls.__name__} has no UCS form; drop the prior (or the cluster ids) for {base!r}")
    kwargs = dict(params)
    if prior is not None:
        kwargs["prior"] = prior
    if "random_state" in names:
        kwargs["random_state"] = int(random_state)
    return cls(**kwargs)

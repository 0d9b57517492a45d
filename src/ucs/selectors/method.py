"""A method, parsed once: ``"dpp+ucs"`` → ``MethodSpec(base="dpp", ucs=True)``.

A *method* is a base selector's short name (:attr:`Selector.name`) optionally followed by ``+ucs`` for its
UCS form (the authors' ``_sgt`` and the spellings ``_ucs`` / ``-ucs`` are accepted, case ignored). A name is
parsed where it enters the package; everything past that edge passes the :class:`MethodSpec` and reads
``.base``, ``.ucs`` and the capabilities its selector class declares (``needs_scorer``, ``stored_state``, ...)
instead of parsing or testing names. ``str(spec)`` is the canonical spelling that results, records and
manifests are keyed by. The edges, the only callers of :meth:`MethodSpec.parse` (a test holds them to it):

- :class:`~ucs.pipeline.PipelineConfig`: ``selector.method`` (kept as ``method_specs``), the keys of
  ``lam_by_selector`` / ``dbscan_q_by_selector``, and a caller's name given to ``lam_for`` / ``dbscan_q_for``;
- :mod:`ucs.selectors.factory`: ``parse_method``, ``canonical_method`` and ``make_selector``'s argument;
- :class:`~ucs.pipeline.Pipeline`: ``run(methods=)``, and a name given to a stage method (``selection``,
  ``prior``, ...) or listed by a resumed run folder's manifest;
- :class:`~ucs.index.SelectorIndex`: its ``method`` parameter and ``set_method``;
- the selector grid (:mod:`ucs.experiments.compare_grid`, ``compare(selectors=)``): its selectors and its
  reference cell.

Tune's and reproduce's ``--selectors`` and an experiment file's lists enter through the configuration's.

>>> spec = MethodSpec.parse("DPP_sgt")
>>> spec
MethodSpec(base='dpp', ucs=True)
>>> str(spec), spec.selector_class.__name__, spec.needs_scorer
('dpp+ucs', 'DPPSelector', False)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Tuple

from ucs.selectors import bsr, cover, dpp, labelaware, mdl, mmr, random, topk, votek  # noqa: F401  (each registers its class)
from ucs.selectors.base import registered_selectors

__all__ = ["BASE_SELECTORS", "METHODS", "NO_UCS_FORM", "MethodSpec", "has_ucs_form", "selector_class"]

#: Base selectors in the order tables list them.
BASE_SELECTORS: Tuple[str, ...] = (
    "random",
    "topk",
    "dpp",
    "mdl",
    "votek",
    "cover",
    "mmr",
    "labelaware",
    "bsr",
)
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
METHODS: Tuple[str, ...] = tuple(
    m for b in BASE_SELECTORS for m in ((b,) if b in NO_UCS_FORM else (b, f"{b}+ucs"))
)


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method: base selector ``base`` (a name of :data:`BASE_SELECTORS`) and whether it is the UCS
    form. Build it with :meth:`parse` (any accepted spelling); the constructor checks the pair.

    Hashable and ordered by nothing but equality; ``str(spec)`` (= :attr:`name`) is the canonical spelling,
    ``"dpp+ucs"`` or ``"votek"``.
    """

    base: str
    ucs: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.ucs, bool):
            raise ValueError(f"MethodSpec.ucs must be True or False; got {self.ucs!r}")
        if self.base not in BASE_SELECTORS or (self.ucs and self.base in NO_UCS_FORM):
            shown = f"{self.base}+ucs" if self.ucs and isinstance(self.base, str) else self.base
            raise ValueError(f"unknown method {shown!r}; choose from {', '.join(METHODS)}")

    @classmethod
    def parse(cls, name: "str | MethodSpec") -> "MethodSpec":
        """``"dpp+ucs"`` → ``MethodSpec("dpp", True)``; ``"votek"`` → ``MethodSpec("votek", False)``.

        ``_ucs``, ``-ucs`` and the authors' ``_sgt`` suffixes are accepted; case and surrounding spaces are
        ignored. A :class:`MethodSpec` is returned as it is. Raises ``ValueError`` naming the known methods.
        Cost: O(1) (memoised per spelling).
        """
        if isinstance(name, MethodSpec):
            return name
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a method name must be a non-empty string such as 'dpp+ucs'; got {name!r}")
        return _parse(name)

    @property
    def name(self) -> str:
        """The canonical spelling: ``"dpp+ucs"``, ``"votek"``; the key of results, records and manifests."""
        return f"{self.base}+ucs" if self.ucs else self.base

    def __str__(self) -> str:
        return self.name

    @property
    def selector_class(self) -> type:
        """The registered :class:`~ucs.selectors.Selector` subclass of :attr:`base`."""
        return selector_class(self.base)

    @property
    def needs_scorer(self) -> bool:
        """Whether the selector scores prompts with a language model (MDL): :attr:`Selector.needs_scorer`."""
        return bool(self.selector_class.needs_scorer)

    @property
    def needs_query_texts(self) -> bool:
        """Whether selecting reads the queries' texts (MDL, Set-BSR): :attr:`Selector.needs_query_texts`."""
        return bool(self.selector_class.needs_query_texts)

    @property
    def needs_token_embedder(self) -> bool:
        """Whether the selector embeds tokens (Set-BSR): :attr:`Selector.needs_token_embedder`."""
        return bool(self.selector_class.needs_token_embedder)

    @property
    def query_dependent(self) -> bool:
        """Whether selections differ per query: :attr:`Selector.query_dependent`."""
        return bool(self.selector_class.query_dependent)

    @property
    def stored_state(self) -> Optional[str]:
        """The name of the fit state a saved index stores (:attr:`Selector.stored_state`), or ``None``."""
        return self.selector_class.stored_state

    def param_names(self) -> Tuple[str, ...]:
        """The constructor parameters of the selector class."""
        return tuple(self.selector_class._param_names())


@lru_cache(maxsize=256)
def _parse(name: str) -> MethodSpec:
    key = name.strip().lower()
    ucs = False
    for s in _SUFFIXES:
        if key.endswith(s):
            key, ucs = key[: -len(s)], True
            break
    if key not in BASE_SELECTORS or (ucs and key in NO_UCS_FORM):
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return MethodSpec(key, ucs)

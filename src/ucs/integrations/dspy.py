"""A DSPy teleprompter that sets UCS-selected demonstrations on every predictor (extra ``dspy``).

``UCSFewShot(k=4).compile(program, trainset=trainset)`` returns a copy of ``program`` whose predictors carry
``k`` demonstrations chosen by a :class:`ucs.SelectorIndex` over ``trainset``:

* ``mode="fixed"`` (default, method ``votek+ucs``): one query-independent, coverage-maximising set, stored in
  the predictors' ``demos``, so DSPy's own ``program.save(path)`` / ``program.load(path)`` keep it;
* ``mode="per_call"`` (method ``dpp+ucs``): the program's ``forward`` is wrapped to pick demonstrations for
  each input before it runs. The predictors start with the fixed set (what a saved program holds); the
  per-call behaviour needs the index, which :meth:`UCSFewShot.attach` puts back on a loaded program.

Selections are deterministic for a given ``seed``.
"""

from __future__ import annotations

import copy
import numbers
import types
from typing import Any, Dict, List, Optional, Sequence

from ucs import defaults as D
from ucs.index import IndexSelection, SelectorIndex
from ucs.index.filters import check_dedupe, normalize_where

try:
    import dspy
    from dspy.teleprompt import Teleprompter
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ucs.integrations.dspy needs DSPy: pip install -e '.[dspy]' in the ucs repository (or pip install "
        "dspy)"
    ) from exc

__all__ = ["UCSFewShot", "demos_of"]

MODES = ("fixed", "per_call")
_DEFAULT_METHOD = {"fixed": D.FIXED_METHOD, "per_call": D.METHOD}


def _input_keys(trainset: Sequence[Any]) -> List[str]:
    keys = None
    for i, ex in enumerate(trainset):
        if not isinstance(ex, dspy.Example):
            raise ValueError(f"trainset[{i}] must be a dspy.Example; got {type(ex).__name__}")
        try:
            these = list(ex.inputs().keys())
        except ValueError as err:
            raise ValueError(
                f"trainset[{i}] has no input fields; mark them with Example(...).with_inputs('question')"
            ) from err
        if keys is None:
            keys = these
        elif these != keys:
            raise ValueError(
                f"trainset[{i}] has inputs {these} but trainset[0] has {keys}; use the same fields"
            )
    if not keys:
        raise ValueError("trainset is empty; give at least one dspy.Example")
    return keys


class UCSFewShot(Teleprompter):
    """Set UCS demonstrations on every predictor of a DSPy program.

    Parameters
    ----------
    k : int, default=4
        Demonstrations per predictor.
    mode : {"fixed", "per_call"}, default="fixed"
        One coverage-maximising set for all inputs, or a set chosen per input (the program's ``forward`` is
        wrapped).
    method : str, optional
        Selector method; default ``votek+ucs`` (fixed) or ``dpp+ucs`` (per call). A fixed set needs a
        query-independent method (``votek``, ``votek+ucs``).
    embedder : Embedder, optional
        ucs embedder of the examples' input fields (default: the embedded SmolLM2 backbone).
    seed : int, default=0
        Seeds the clustering and the selector: the same seed gives the same demonstrations.
    where : dict, optional
        Demonstrations only from training examples whose fields match (:meth:`ucs.SelectorIndex.select`):
        ``{"lang": "de"}`` or ``{"tier": ["a", "b"]}``; the fixed set and every per-call set alike.
    dedupe : float in (0, 1], optional
        No two demonstrations with cosine ``>= dedupe`` (near-duplicates); off by default.
    **index_kwargs
        Passed to :class:`SelectorIndex` (``clusterer``, ``prior``, ``selector_params``, ``cache_dir`` …).

    Attributes
    ----------
    index_ : SelectorIndex
        The index fitted by the last :meth:`compile` (save it with ``index_.save(dir)`` for per-call
        programs).
    """

    def __init__(
        self,
        k: int = 4,
        *,
        mode: str = "fixed",
        method: Optional[str] = None,
        embedder: Any = None,
        seed: int = 0,
        where: Optional[Dict[str, Any]] = None,
        dedupe: Optional[float] = None,
        **index_kwargs: Any,
    ) -> None:
        super().__init__()
        self.where = where
        self.dedupe = dedupe
        self.k = k
        self.mode = mode
        self.method = method
        self.embedder = embedder
        self.seed = seed
        self.index_kwargs = index_kwargs

    def _check(self) -> str:
        if isinstance(self.k, bool) or not isinstance(self.k, numbers.Integral) or self.k < 0:
            raise ValueError(f"k must be a non-negative integer; got {self.k!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}; got {self.mode!r}")
        check_dedupe(self.dedupe)
        return self.method or _DEFAULT_METHOD[self.mode]

    def compile(
        self,
        student: Any,
        *,
        trainset: List[Any],
        teacher: Any = None,
        valset: Optional[List[Any]] = None,
        **kwargs: Any,
    ) -> Any:
        """A copy of ``student`` with ``k`` demonstrations from ``trainset`` on every predictor.

        ``teacher`` and ``valset`` are accepted for the Teleprompter interface and unused (no bootstrapping:
        the demonstrations are the labelled training examples themselves).
        """
        method = self._check()
        keys = _input_keys(trainset)
        examples = [dict(ex.toDict()) for ex in trainset]
        index = SelectorIndex(
            self.embedder, method, input_keys=keys, random_state=int(self.seed), **self.index_kwargs
        )
        index.fit(examples)
        if self.mode == "fixed" and index.selector_.query_dependent:
            raise ValueError(
                f"mode='fixed' needs a query-independent method such as 'votek+ucs'; {method!r} picks per "
                "input "
                "(use mode='per_call')"
            )
        self.index_ = index
        program = student.reset_copy()
        fixed = self._fixed_selection(index, method)
        _set_demos(program, [copy.deepcopy(trainset[i]) for i in fixed.indices])
        program.ucs_selection = fixed
        if self.mode == "per_call":
            self.attach(
                program, index, k=int(self.k), trainset=trainset, where=self.where, dedupe=self.dedupe
            )
        return program

    def _fixed_selection(self, index: SelectorIndex, method: str) -> IndexSelection:
        kw = dict(where=self.where, dedupe=self.dedupe)
        if not index.selector_.query_dependent:
            return index.select(None, int(self.k), **kw)
        # per-call programs start (and are saved) with the coverage set of a query-independent index
        base = SelectorIndex(
            index.embedder,
            "votek+ucs",
            input_keys=index.input_keys_,
            random_state=int(self.seed),
            **{k: v for k, v in self.index_kwargs.items() if k in ("clusterer", "prior", "cache_dir")},
        )
        return base.fit(index.examples_).select(None, int(self.k), **kw)

    def warmup(self) -> "UCSFewShot":
        """Warm the index of the last :meth:`compile` (:meth:`ucs.SelectorIndex.warmup`: the embedder loaded
        and one query embedded and selected), so a per-call program's first input is not the slow one."""
        if not hasattr(self, "index_"):
            raise ValueError("UCSFewShot has no index yet; call compile(program, trainset=...) first")
        self.index_.warmup(k=min(int(self.k), self.index_.n_examples_))
        return self

    @staticmethod
    def attach(
        program: Any,
        index: SelectorIndex,
        k: int = 4,
        trainset: Optional[Sequence[Any]] = None,
        *,
        where: Optional[Dict[str, Any]] = None,
        dedupe: Optional[float] = None,
    ) -> Any:
        """Make ``program`` pick its demonstrations per input from ``index`` (wraps ``program.forward``).

        Use it on a program loaded with ``program.load(path)`` and an index loaded with
        ``SelectorIndex.load(dir, embedder=...)``. The demonstrations are ``dspy.Example`` objects built from
        the index's examples (or ``trainset`` items). Each call sets ``demos`` on every predictor before it
        runs, so share one program between threads only with a lock. ``where`` and ``dedupe`` filter and
        de-duplicate every call's demonstrations (checked here).
        """
        normalize_where(where, index.examples_)
        check_dedupe(dedupe)
        items = (
            list(trainset)
            if trainset is not None
            else [dspy.Example(**ex).with_inputs(*index.input_keys_) for ex in index.examples_]
        )
        original = program.forward

        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            if all(key in kwargs for key in index.input_keys_):
                text = " ".join(str(kwargs[key]) for key in index.input_keys_)
            else:
                text = " ".join(str(a) for a in args) or " ".join(str(v) for v in kwargs.values())
            sel = index.select(text, int(k), where=where, dedupe=dedupe)
            _set_demos(self, [copy.deepcopy(items[i]) for i in sel.indices])
            self.ucs_selection = sel
            return original(*args, **kwargs)

        program.forward = types.MethodType(forward, program)
        return program


def _set_demos(program: Any, demos: List[Any]) -> None:
    predictors = program.predictors()
    if not predictors:
        raise ValueError(
            "the program has no predictors (dspy.Predict, ChainOfThought …) to give demonstrations to"
        )
    for p in predictors:
        p.demos = list(demos)


def demos_of(program: Any) -> Dict[str, List[Dict[str, Any]]]:
    """Each predictor's demonstrations as plain dicts (to compare a program with a saved-and-loaded copy)."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for name, p in program.named_predictors():
        out[name] = [dict(d.toDict()) if hasattr(d, "toDict") else dict(d) for d in p.demos]
    return out

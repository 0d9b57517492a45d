"""``SelectorIndex``: fit once, save, load, select per query."""

from __future__ import annotations

import copy as _copy
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from ucs import defaults as D
from ucs.embedding.adapters import as_embedder
from ucs.embedding.cache import EmbeddingCache
from ucs.embedding.threads import limit_threads, resolve_query_threads
from ucs.index.examples import check_examples, example_text, query_text, resolve_keys
from ucs.index.placement import fit_clusters, place_rows, pool_representation, represent
from ucs.index.restricted import select_restricted
from ucs.index.selection import IndexSelection
from ucs.index.search import SEARCHES, make_search
from ucs.index.storage import latest_version, load_index, save_index
from ucs.models import load_backbone
from ucs.selectors import MethodSpec, UCSPrior
from ucs.selectors.base import ORDERS, check_random_state
from ucs.selectors.factory import make_selector

__all__ = ["SelectorIndex", "IndexSelection"]

PathLike = Union[str, "os.PathLike[str]"]


def _defaults() -> Dict[str, Any]:
    """The prior's settings: the library defaults (:mod:`ucs.defaults`) with the project's coverage setting
    (:data:`ucs.defaults.DEFAULT_COVERAGE`: the OSW binomial estimator, relevance weighting off)."""
    cov = D.DEFAULT_COVERAGE["prior"]
    return {
        "estimator": cov["estimator"],
        "lam": D.LAM,
        "design": D.DESIGN,
        "corpus_prior": D.CORPUS_PRIOR,
        **({"relevance": cov["relevance"]} if cov["relevance"] != "none" else {}),
        "t": D.T,
    }


class SelectorIndex:
    """A persisted demonstration index: examples, their embeddings, latent clusters and a fitted selector.

    Parameters
    ----------
    embedder : Embedder, optional
        Any ucs embedder (``embed(texts)``, ``identity``, ``dim``). Default: the embedded SmolLM2-135M
        backbone (:func:`ucs.models.load_backbone`), loaded on first use.
    method : str, default="topk"
        A name of :data:`ucs.selectors.factory.METHODS` (``topk``, ``dpp``, ``mdl``, ``votek``, ``mmr``,
        ``bsr`` …), most with a ``+ucs`` form for the coverage prior; the default is
        :data:`ucs.defaults.METHOD`.
    input_keys : sequence of str, optional
        Example fields that are embedded (joined by a space, in this order). Default: every field of the
        first example except ``output_key``.
    output_key : str, optional
        The label / answer field (MDL needs it; it is never embedded).
    clusterer : LatentClusterer or dict, optional
        The clusterer (cloned, never modified) or its parameters; default the project's coverage setting,
        ``LatentClusterer(method="kmeans")`` (spherical k-means, ⌈√N⌉ clusters, in the embedder's space; the
        paper's is ``{"method": "dict_dbscan"}``). Size
        parameters larger than the pool (``n_atoms``, ``pca_dim``, ``dbscan_k``) are lowered to fit it.
    prior : dict, optional
        Overrides of the :class:`~ucs.selectors.UCSPrior` settings (``lam``, ``estimator``, ``design``, ``t``
        …; default: the pipeline's). The same estimator gives every selection's ``phi``.
    selector_params : dict, optional
        Extra parameters of the selector class (``candidate_num``, ``scale_factor``, ``k`` …); those the
        class does not take are rejected.
    lm : LanguageModel, optional
        The scorer of ``mdl`` / ``mdl+ucs`` (any ``score_continuations`` provider, e.g. the backbone).
    candidate_search : {"exact", "hnsw"}, default="exact"
        How query-dependent selectors find their candidates (``hnsw``: faiss, approximate, extra ``fast``).
    hnsw : dict, optional
        ``m``, ``ef_construction``, ``ef_search`` of the HNSW graph.
    cache_dir : path, optional
        Embedding cache root (default :func:`ucs.embedding.default_cache_dir`): refitting the same examples
        never re-embeds them.
    random_state : int, default=0
        Seeds the clusterer (when it has no seed of its own) and the selector.
    order : {"selected", "similar_first", "similar_last", "vote_last"}, optional
        The demonstrations' order when :meth:`select` names none (saved with the index; ``ucs compare`` stores
        the order of the cell it recommends). Default :func:`ucs.defaults.application_order`.

    Attributes
    ----------
    examples_ : list of dict
    embeddings_ : ndarray (N, d) float32
    cluster_ids_ : ndarray (N,) int64
    clusterer_ : fitted clusterer or None (``None`` for pools of fewer than 3 examples)
    selector_ : Selector
    n_examples_, n_clusters_ : int

    Notes
    -----
    ``fit`` costs one embedding pass (cached), the clusterer's fit and the selector's fit. A query costs one
    embedding (unless given) plus the selector's per-query work: for DPP an O(N·d) candidate scan, an
    O(C²·d) kernel and an O(C·B²) greedy MAP.

    Examples
    --------
    The embedder here is :class:`ucs.testing.DummyEmbedder`, a deterministic test double that needs no
    weights: equal texts embed equal, other texts are unrelated. A real one (the default backbone, or
    ``ucs.embedding.load_retrieval_embedder()``) puts paraphrases together.

    >>> from ucs import SelectorIndex
    >>> from ucs.testing import DummyEmbedder
    >>> examples = [{"text": t, "label": y} for t, y in [
    ...     ("my card was stolen", "card"), ("card blocked abroad", "card"), ("order a new card", "card"),
    ...     ("loan interest rate", "loan"), ("repay my loan early", "loan"), ("raise my loan limit", "loan"),
    ...     ("euro exchange rate", "fx"), ("exchange fee for dollars", "fx")]]
    >>> index = SelectorIndex(DummyEmbedder(), method="topk", output_key="label").fit(examples)
    >>> index
    SelectorIndex(method='topk', n_examples=8, n_clusters=3)
    >>> sel = index.select("repay my loan early", k=3, order="similar_first")
    >>> [e["text"] for e in sel.examples], sel.scores.round(2)
    (['repay my loan early', 'exchange fee for dollars', 'euro exchange rate'], array([1.  , 0.38, 0.27]))
    >>> [e["text"] for e in index.select("repay my loan early", k=2, where={"label": "card"}).examples]
    ['order a new card', 'my card was stolen']
    """

    FORMAT = "ucs.index/3"

    def __init__(
        self,
        embedder: Any = None,
        method: str = D.METHOD,
        *,
        input_keys: Optional[Sequence[str]] = None,
        output_key: Optional[str] = None,
        clusterer: Any = None,
        prior: Optional[Dict[str, Any]] = None,
        selector_params: Optional[Dict[str, Any]] = None,
        lm: Any = None,
        candidate_search: str = "exact",
        hnsw: Optional[Dict[str, Any]] = None,
        cache_dir: Optional[PathLike] = None,
        random_state: int = 0,
        order: Optional[str] = None,
    ) -> None:
        self.embedder = embedder
        self.method = method
        self.input_keys = input_keys
        self.output_key = output_key
        self.clusterer = clusterer
        self.prior = prior
        self.selector_params = selector_params
        self.lm = lm
        self.candidate_search = candidate_search
        self.hnsw = hnsw
        self.cache_dir = cache_dir
        self.random_state = random_state
        self.order = order

    # ------------------------------------------------------------------ parameters
    def _check_params(self) -> None:
        spec = self.spec_ = MethodSpec.parse(self.method)  # the one parse of the index's method
        self.method_, self.base_, self.ucs_ = spec.name, spec.base, spec.ucs
        if spec.needs_scorer and self.lm is None:
            raise ValueError(
                f"method={self.method!r} scores candidate subsets with a language model; pass lm= "
                "(e.g. ucs.models.load_backbone()) or choose topk, dpp or votek"
            )
        if spec.needs_scorer and self.output_key is None:
            raise ValueError(
                f"method={self.method!r} builds labelled prompts; pass output_key= (the label field)"
            )
        if self.candidate_search not in SEARCHES:
            raise ValueError(f"candidate_search must be one of {SEARCHES}; got {self.candidate_search!r}")
        check_random_state(self.random_state)
        if getattr(self, "order", None) is not None and self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS} or None; got {self.order!r}")
        for name in ("prior", "selector_params", "hnsw"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, dict):
                raise ValueError(f"{name} must be a dict or None; got {type(v).__name__}")

    def get_embedder(self) -> Any:
        """The embedder (the default backbone is loaded here on first use; a LangChain-style ``Embeddings`` is
        wrapped in :class:`ucs.embedding.adapters.DocumentsEmbedder`, once)."""
        if self.embedder is None:
            stored = getattr(self, "embedder_identity_", None)
            embedder = _packaged_retrieval_embedder(stored) or load_backbone()
            if stored is not None and dict(embedder.identity) != stored:
                raise ValueError(
                    f"this index was built with embedder {stored.get('model')!r}; pass it as "
                    "SelectorIndex.load(dir, embedder=...) or give query_embeddings"
                )
            self.embedder = embedder
        adapted = self.__dict__.get("_adapted")
        if adapted is None or adapted[0] is not self.embedder:
            adapted = self._adapted = (self.embedder, as_embedder(self.embedder))
        return adapted[1]

    # ------------------------------------------------------------------ fit
    def fit(self, examples: Sequence[Dict[str, Any]]) -> "SelectorIndex":
        """Embed (through the cache), cluster and fit the selector on ``examples``.

        Parameters
        ----------
        examples : list of dict
            Each holds the ``input_keys`` (and ``output_key`` when set).

        Returns
        -------
        self
        """
        self._check_params()
        ex = check_examples(examples)
        if not ex:
            raise ValueError("examples is empty; give at least one example to index")
        self.input_keys_, self.output_key_ = resolve_keys(ex, self.input_keys, self.output_key)
        self.examples_ = ex
        self.embeddings_ = self._embed_texts([example_text(e, self.input_keys_) for e in ex])
        self.embedder_identity_ = dict(self.get_embedder().identity)
        return self._cluster_and_fit()

    def refit(self) -> "SelectorIndex":
        """Re-cluster all examples (those added since the fit included) and refit the selector."""
        self._check_fitted()
        return self._cluster_and_fit()

    def set_method(self, method: str) -> "SelectorIndex":
        """Select with ``method`` from now on: only the selector is refit, on the stored embeddings and
        clusters (no embedding, no clustering), so the selections are those of an index fitted on the same
        examples with that method. The index's own method, in any spelling, changes nothing. The
        ``selector_params`` of the old method are dropped (another class takes others); ``prior`` is kept.
        An unknown method, or ``mdl`` without ``lm``, raises ``ValueError``; a failure leaves the index as it
        was.

        Returns
        -------
        self
        """
        self._check_fitted()
        if MethodSpec.parse(method) == self.spec_:  # the same method in another spelling: nothing to refit
            return self
        old = (self.method, self.selector_params, self.spec_, self.method_, self.base_, self.ucs_)
        self.method, self.selector_params = method, None
        try:  # the selector is replaced only once the new one is fitted
            self._check_params()
            return self._fit_selector()
        except Exception:
            self.method, self.selector_params, self.spec_, self.method_, self.base_, self.ucs_ = old
            raise

    def _cluster_and_fit(self) -> "SelectorIndex":
        self.clusterer_, self.cluster_ids_ = fit_clusters(self.clusterer, self.embeddings_, self.random_state)
        self.rep_ = (
            None if self.clusterer_ is None else pool_representation(self.clusterer_, self.embeddings_)
        )
        self.n_added_ = 0
        self._build_search()
        return self._fit_selector()

    def _embed_texts(self, texts: List[str]) -> np.ndarray:
        E = EmbeddingCache(None if self.cache_dir is None else Path(self.cache_dir) / "embeddings").embed(
            self.get_embedder(), texts
        )
        return np.ascontiguousarray(E, dtype=np.float32)

    def _build_search(self, serialized: Optional[np.ndarray] = None) -> None:
        self.search_ = make_search(self.candidate_search, self.embeddings_, dict(self.hnsw or {}), serialized)

    def _prior(self) -> Any:
        return UCSPrior.build(self.cluster_ids_, {**_defaults(), **(self.prior or {})})

    def _fit_selector(self, stored: Optional[Dict[str, Any]] = None) -> "SelectorIndex":
        """Build the selector with :func:`ucs.selectors.factory.make_selector` and fit it (``stored``: state
        read with a saved index, so that loading computes nothing costly: Set-BSR's pool tokens as
        ``bsr_tokens``, a ``PackedTokens``; VoteK's vote graph as ``votek_graph``)."""
        spec = self.spec_
        cls = spec.selector_class
        accepted = set(spec.param_names())
        params: Dict[str, Any] = dict(self.selector_params or {})
        unknown = sorted(set(params) - accepted)
        if unknown:
            raise ValueError(
                f"selector_params {unknown} are not parameters of {cls.__name__}; valid: {sorted(accepted)}"
            )
        params.setdefault("random_state", int(self.random_state))
        self.coverage_prior_ = self._prior()
        if spec.needs_scorer:
            params["scorer"] = self.lm
        if spec.needs_token_embedder:  # Set-BSR reads the embedder's contextual token embeddings
            params["token_embedder"] = self.get_embedder()
        texts = [example_text(e, self.input_keys_) for e in self.examples_]
        labels = None if self.output_key_ is None else [str(e[self.output_key_]) for e in self.examples_]
        sel = make_selector(spec, prior=self.coverage_prior_ if spec.ucs else None, **params)
        stored = stored or {}
        if sel.stored_state is not None and sel.stored_state in stored:
            sel.fit_with_state(
                self.embeddings_,
                stored[sel.stored_state],
                labels=labels,
                texts=texts,
                cluster_ids=self.cluster_ids_,
            )
        else:
            sel.fit(self.embeddings_, labels=labels, texts=texts, cluster_ids=self.cluster_ids_)
        return self._install(sel)

    def _install(self, sel: Any) -> "SelectorIndex":
        """Serve ``sel`` (a fitted selector) from now on: candidate search wired, counts updated."""
        if sel.query_dependent:
            sel.set_candidate_search(self.search_)
        self.selector_ = sel
        self.n_examples_ = len(self.examples_)
        self.n_clusters_ = int(np.unique(self.cluster_ids_).size)
        self._shared_ = None
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "selector_"):
            raise ValueError(
                "this SelectorIndex is not fitted; call fit(examples) or SelectorIndex.load(dir) first"
            )

    # ------------------------------------------------------------------ add
    def add_examples(
        self, examples: Sequence[Dict[str, Any]], embeddings: Optional[np.ndarray] = None
    ) -> "SelectorIndex":
        """Add examples without re-clustering: each joins the nearest cluster within the fitted radius, else
        becomes a new singleton cluster (see :func:`ucs.index.placement.place_rows`); the selector is refit on
        the grown pool (cheap for TopK/DPP/MDL; VoteK rebuilds its vote graph). :meth:`refit` re-clusters.

        Parameters
        ----------
        examples : list of dict
            Each holds the ``input_keys`` (and ``output_key`` when set).
        embeddings : array-like (M, d), optional
            Their embeddings from :meth:`embed_examples` (computed elsewhere, e.g. on a server's model
            thread); default: embedded here, through the cache.

        Returns
        -------
        self
        """
        self._check_fitted()
        new = check_examples(examples)
        if not new:
            return self
        resolve_keys(new, self.input_keys_, self.output_key_)
        if embeddings is None:
            E_new = self._embed_texts([example_text(e, self.input_keys_) for e in new])
        else:
            E_new = np.ascontiguousarray(embeddings, dtype=np.float32)
            if E_new.ndim != 2 or E_new.shape[0] != len(new):
                raise ValueError(
                    f"embeddings has shape {E_new.shape}; give one row per example ({len(new)}), "
                    "as embed_examples(examples) returns"
                )
        if E_new.shape[1] != self.embeddings_.shape[1]:
            raise ValueError(
                f"the embedder gives dimension {E_new.shape[1]}; the index holds {self.embeddings_.shape[1]}"
            )
        if self.clusterer_ is not None:
            rep_new = represent(self.clusterer_, E_new)
            new_ids, self.last_placement_ = place_rows(self.clusterer_, self.rep_, self.cluster_ids_, rep_new)
            self.rep_ = np.concatenate([self.rep_, rep_new])
        else:
            start = int(self.cluster_ids_.max()) + 1
            new_ids = np.arange(start, start + len(new), dtype=np.int64)
            self.last_placement_ = {"joined": 0, "singletons": len(new)}
        self.examples_ = self.examples_ + new
        self.embeddings_ = np.ascontiguousarray(np.concatenate([self.embeddings_, E_new]))
        self.cluster_ids_ = np.concatenate([self.cluster_ids_, new_ids])
        self.n_added_ += len(new)
        self.search_.add(E_new)
        return self._extend_selector(E_new, new)

    def _extend_selector(self, E_new: np.ndarray, new: List[Dict[str, Any]]) -> "SelectorIndex":
        """The selector of the grown pool: what :meth:`_fit_selector` fits, from the old one's normalised pool
        and the new rows (:meth:`ucs.selectors.base.Selector.extended`; O(M·d) plus one copy of the pool)."""
        self.coverage_prior_ = self._prior()
        texts = [example_text(e, self.input_keys_) for e in new]
        labels = None if self.output_key_ is None else [str(e[self.output_key_]) for e in new]
        sel = self.selector_.extended(
            E_new,
            labels=labels,
            texts=texts,
            cluster_ids=self.cluster_ids_,
            prior=self.coverage_prior_ if self.ucs_ else None,
        )
        return self._install(sel)

    def embed_examples(self, examples: Sequence[Dict[str, Any]]) -> np.ndarray:
        """The embeddings (M, d) float32 that :meth:`add_examples` computes for ``examples`` (checked as it
        checks them, embedded through the cache), for ``add_examples(examples, embeddings=...)``."""
        self._check_fitted()
        new = check_examples(examples)
        if not new:
            return np.empty((0, self.embeddings_.shape[1]), dtype=np.float32)
        resolve_keys(new, self.input_keys_, self.output_key_)
        return self._embed_texts([example_text(e, self.input_keys_) for e in new])

    def copy(self) -> "SelectorIndex":
        """A copy to grow with :meth:`add_examples` while this index keeps answering, unchanged.

        The copy shares the examples, arrays, clusterer and selector (none is written in place:
        ``add_examples`` replaces them) and has its own candidate search
        (:meth:`ucs.index.search.ExactSearch.copy`), the one part that grows in place. O(N·d) for the search's
        float16 copy; nothing is embedded or refit.
        """
        self._check_fitted()
        other = _copy.copy(self)
        other.search_ = self.search_.copy()
        other._shared_ = None
        return other

    # ------------------------------------------------------------------ select
    def embed_queries(self, queries: Sequence[Any]) -> np.ndarray:
        """Embeddings (Q, d) of queries given as strings or dicts with the ``input_keys`` (not cached on
        disk)."""
        self._check_fitted()
        return self._embed_query_texts([query_text(q, self.input_keys_) for q in queries])

    def _embed_query_texts(self, texts: List[str]) -> np.ndarray:
        """The embedder's ``embed_queries`` where it has one (serving-time thread limits, see
        :mod:`ucs.embedding.threads`), else its ``embed``; (Q, d) float32."""
        emb = self.get_embedder()
        embed = getattr(emb, "embed_queries", None) or emb.embed
        return np.ascontiguousarray(embed(texts), dtype=np.float32)

    def _serving_threads(self) -> int:
        """Threads of one query's selection: the embedder's ``query_threads``
        (:mod:`ucs.embedding.threads`)."""
        return resolve_query_threads(getattr(self.embedder, "query_threads", None))

    def warmup(self, query: Any = None, k: int = 4) -> "SelectorIndex":
        """Load the embedder and run one query through embedding and selection, so the first real query does
        not pay for loading the model (seconds) or for first-call initialisation.

        Parameters
        ----------
        query : str or dict, optional
            The probe query; default the first example's input text.
        k : int
            Demonstrations of the probe selection.

        Returns
        -------
        self

        Notes
        -----
        Costs one model load (when not loaded yet), one query embedding and one selection. Query-independent
        methods only compute their (cached) shared selection; ``mdl`` skips the selection (it would score
        prompts with the language model) and only embeds. An index loaded without its embedder, whose default
        backbone is not the one it was built with, warms only the selection (on a stored embedding).
        """
        self._check_fitted()
        probe = query if query is not None else example_text(self.examples_[0], self.input_keys_)
        k = min(int(k), self.n_examples_)
        if not self.selector_.query_dependent:
            self.select(None, k)
            return self
        try:
            emb = self.get_embedder()
        except ValueError:  # built with another embedder and loaded without it: queries come as embeddings
            self.select(query_embeddings=self.embeddings_[0], k=k)
            return self
        load = getattr(emb, "load", None)
        if callable(load):
            load()
        text = query_text(probe, self.input_keys_)
        qe = self._embed_query_texts([text])
        if not self.selector_.needs_scorer:
            self.select(text, k, query_embeddings=qe[0])
        return self

    def select(
        self,
        queries: Any = None,
        k: int = 4,
        *,
        query_embeddings: Optional[np.ndarray] = None,
        example_keys: Optional[Sequence[str]] = None,
        order: Optional[str] = None,
        where: Optional[Dict[str, Any]] = None,
        dedupe: Optional[float] = None,
    ) -> Union[IndexSelection, List[IndexSelection]]:
        """The ``k`` demonstrations for each query.

        Parameters
        ----------
        queries : str, dict, or list of them, optional
            One query (returns one :class:`IndexSelection`) or a list (returns a list). Dicts are read through
            ``input_keys``. Query-independent methods (``votek``) ignore the text and may be called with none.
        k : int
            Demonstrations per query (clipped to the index size; ``0`` is zero-shot).
        query_embeddings : array-like (Q, d) or (d,), optional
            Embeddings of the queries, computed by the caller with the same embedder (skips embedding).
        example_keys : sequence of str, optional
            Return only these fields of each example.
        order : {"selected", "similar_first", "similar_last", "vote_last"}, optional
            The demonstrations' order: as chosen, or by similarity to the query with the most similar first or
            last (next to the query), or grouped by label with the most frequent label last (``vote_last``).
            Default: the index's own ``order`` when it has one (``ucs compare`` saves its recommended cell's),
            else :func:`ucs.defaults.application_order`: ``vote_last`` when the index has an output key,
            else ``selected``. Query-dependent methods only.
        where : dict, optional
            Choose only among the examples whose fields match: ``{"lang": "de"}`` (equality) or
            ``{"tier": ["a", "b"]}`` (membership), every condition must hold (:mod:`ucs.index.filters`). The
            method runs on the matching examples alone; fewer than ``k`` matches return them all, with
            ``n_matched`` and a ``note`` on the selection. An unknown field or a bad value is a
            ``ValueError``.
        dedupe : float in (0, 1], optional
            No two returned examples have cosine ``>= dedupe`` in the retrieval embedding space (e.g.
            ``0.95``): a near-duplicate of an earlier choice is dropped and the method's next choice takes its
            place, so ``k`` still come back when the pool allows. ``None`` (default): off.

        Returns
        -------
        IndexSelection or list of IndexSelection
        """
        self._check_fitted()
        single = queries is None or isinstance(queries, (str, dict))
        if query_embeddings is not None:
            qe = np.asarray(query_embeddings, dtype=np.float32)
            single = single and qe.ndim == 1
            qe = qe[None, :] if qe.ndim == 1 else qe
        else:
            qe = None
        items = [] if queries is None else ([queries] if isinstance(queries, (str, dict)) else list(queries))
        texts = [query_text(q, self.input_keys_) for q in items]
        if qe is not None and texts and len(texts) != qe.shape[0]:
            raise ValueError(f"{len(texts)} queries but query_embeddings has {qe.shape[0]} rows")
        if where is not None or dedupe is not None:
            return select_restricted(
                self, texts, qe, k, single, where=where, dedupe=dedupe, example_keys=example_keys, order=order
            )
        sel = self.selector_
        if not sel.query_dependent:
            out = self._shared(k, example_keys)
            n = max(len(texts), 0 if qe is None else qe.shape[0], 1)
            return out if single else [out] * n
        if qe is None:
            if not texts:
                raise ValueError(
                    f"method={self.method_!r} is query-dependent; pass queries or query_embeddings"
                )
            qe = self._embed_query_texts(texts)
        if sel.needs_token_embedder and not texts:
            raise ValueError(
                f"method {self.base_!r} covers the query's tokens: pass the queries' texts, not only "
                "embeddings"
            )
        # one query at serving time: the faiss scan and numpy run on the query's threads too (their OpenMP /
        # BLAS pools otherwise wait at barriers for a busy core: +12 ms a call with one of two cores busy)
        if order is None:
            order = getattr(self, "order", None) or D.application_order(sel.labels_ is not None)
        with limit_threads(self._serving_threads() if qe.shape[0] == 1 else None):
            result = sel.select(qe, k, query_texts=texts if sel.needs_query_texts else None, order=order)
        rows = [self._wrap(result, r, texts[r] if texts else None, example_keys) for r in range(qe.shape[0])]
        return rows[0] if single else rows

    def _shared(self, k: int, example_keys: Optional[Sequence[str]]) -> IndexSelection:
        key = (int(k), None if example_keys is None else tuple(example_keys))
        cached = self._shared_
        if cached is None or cached[0] != key:
            cached = (
                key,
                self._wrap(self.selector_.select(None, k, query_texts=[""]), 0, None, example_keys),
            )
            self._shared_ = cached
        return cached[1]

    def _wrap(
        self, result: Any, r: int, text: Optional[str], example_keys: Optional[Sequence[str]]
    ) -> IndexSelection:
        row = r if result.query_dependent else 0
        idx = result.indices[row]
        phi = (
            result.phi[r]
            if result.phi is not None
            else self.coverage_prior_.batched().phi_subsets(idx[None, :])[0]
        )
        cids = self.cluster_ids_[idx]
        # the selector was fitted on this index's cluster ids, so its count is the index's
        covered = (
            int(result.clusters_covered[row])
            if result.clusters_covered is not None
            else int(np.unique(cids).size)
        )
        if example_keys is None:
            exs = [dict(self.examples_[i]) for i in idx]
        else:
            exs = [{k: self.examples_[i][k] for k in example_keys if k in self.examples_[i]} for i in idx]
        return IndexSelection(
            examples=exs,
            indices=idx,
            scores=result.scores[row],
            cluster_ids=cids,
            phi=float(phi),
            clusters_covered=covered,
            method=self.method_,
            query=text,
        )

    # ------------------------------------------------------------------ persistence
    def save(self, directory: PathLike) -> Path:
        """Write the index as the next version of ``directory`` and switch readers to it with one atomic
        rename (JSON + ``.npy``, no pickle; every file's SHA-256 in the version's ``index.json``; the last
        :data:`ucs.index.storage.KEEP_VERSIONS` versions are kept). Sets ``version_``; returns the version's
        folder (``directory/versions/<n>``). See :mod:`ucs.index.storage`."""
        self._check_fitted()
        folder, self.version_ = save_index(self, Path(directory))
        return folder

    @staticmethod
    def latest_version(directory: PathLike) -> Optional[int]:
        """The version a :meth:`load` of ``directory`` would read now (0 for a folder saved before versions),
        ``None`` when it holds no index: one small file read, for a server to poll and reload when it differs
        from its index's ``version_``."""
        return latest_version(Path(directory))

    @classmethod
    def load(
        cls,
        directory: PathLike,
        embedder: Any = None,
        lm: Any = None,
        *,
        warmup: bool = True,
        version: Optional[int] = None,
    ) -> "SelectorIndex":
        """Load an index written by :meth:`save`, verifying every stored file; ``version_`` tells which
        version.

        Parameters
        ----------
        directory : path
            The folder given to :meth:`save` (its current version is read), one version's folder, or a folder
            saved before versions (version 0).
        embedder : Embedder, optional
            Embeds text queries; must have the identity the index was built with. Without it the default
            backbone is used when the index was built with it; otherwise pass ``query_embeddings``.
        lm : LanguageModel, optional
            The MDL scorer (required for ``mdl`` indexes).
        warmup : bool, default=True
            Call :meth:`warmup` before returning: the embedder is loaded and one query runs here, so the first
            request is as fast as the others. ``False`` returns at once (the model then loads on the first
            query; e.g. when every query will come as ``query_embeddings``).
        version : int, optional
            A kept older version (a rollback) instead of the current one.
        """
        index = load_index(cls, Path(directory), embedder=embedder, lm=lm, version=version)
        return index.warmup() if warmup else index

    def __repr__(self) -> str:
        fitted = (
            f", n_examples={self.n_examples_}, n_clusters={self.n_clusters_}"
            if hasattr(self, "selector_")
            else ""
        )
        return f"SelectorIndex(method={self.method!r}{fitted})"


def _packaged_retrieval_embedder(identity: Optional[Dict[str, Any]]) -> Any:
    """The installed retrieval embedder (all-MiniLM-L6-v2, all-mpnet-base-v2) whose identity is ``identity``,
    so an index built with one (``ucs compare``'s) opens without naming it; ``None`` for any other embedder or
    when its weights are not installed."""
    if not identity or identity.get("backend") != "sentence-transformers":
        return None
    from ucs.embedding.sbert import RETRIEVAL_MODELS, load_retrieval_embedder

    for short, (_, hub_id) in RETRIEVAL_MODELS.items():
        if identity.get("model") in (short, hub_id):
            try:
                emb = load_retrieval_embedder(short)
                return emb if dict(emb.identity) == identity else None
            except Exception:  # noqa: BLE001 - weights not installed: the caller's message names the fix
                return None
    return None

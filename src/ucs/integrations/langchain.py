"""A LangChain example selector backed by :class:`ucs.SelectorIndex` (extra ``langchain``: langchain-core).

``UCSExampleSelector.from_examples(examples, embeddings, k=4, input_keys=["input"], method="dpp+ucs")``
mirrors ``SemanticSimilarityExampleSelector.from_examples`` without a vector store: the index is the store, it
is saved with ``selector.index.save(dir)`` and reloaded with
``UCSExampleSelector(SelectorIndex.load(dir, ...))``. It plugs into
``FewShotPromptTemplate(example_selector=...)`` and ``FewShotChatMessagePromptTemplate``.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional

import numpy as np

from ucs import defaults as D
from ucs.embedding.adapters import DocumentsEmbedder, as_embedder
from ucs.index import IndexSelection, SelectorIndex
from ucs.index.filters import check_dedupe, normalize_where

try:
    from langchain_core.embeddings import Embeddings
    from langchain_core.example_selectors import BaseExampleSelector
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ucs.integrations.langchain needs langchain-core: pip install -e '.[langchain]' in the ucs "
        "repository (or pip install langchain-core)"
    ) from exc

__all__ = ["LangChainEmbedder", "UCSExampleSelector"]


class LangChainEmbedder(DocumentsEmbedder):
    """Any LangChain :class:`~langchain_core.embeddings.Embeddings` as a ucs embedder
    (:class:`ucs.embedding.adapters.DocumentsEmbedder`, which also accepts objects that only duck-type it).

    The cache identity names the class and its plain settings (never fields that look like credentials) and,
    where no setting names the model, a fingerprint of the vectors of a few fixed texts: two models wrapped in
    the same class never share a cache entry.
    """

    def __init__(self, embeddings: Embeddings) -> None:
        if not isinstance(embeddings, Embeddings):
            raise ValueError(f"embeddings must be a LangChain Embeddings; got {type(embeddings).__name__}")
        super().__init__(embeddings)


class UCSExampleSelector(BaseExampleSelector):
    """Select few-shot examples with UCS (or any ucs selector) inside LangChain prompt templates.

    Parameters
    ----------
    index : SelectorIndex
        A fitted index over the examples (see :meth:`from_examples`).
    k : int, default=4
        Examples per prompt.
    input_keys : list of str, optional
        Prompt variables whose values are embedded for the query (joined by a space, in this order); default
        the index's input keys, or every variable the prompt passes when the index embeds every field.
    example_keys : list of str, optional
        Fields of each example to return (default: all).
    order : {"selected", "similar_first", "similar_last", "vote_last"}, optional
        The demonstrations' order in the prompt: as chosen, or by similarity with the most similar first or
        last (next to the query), or grouped by label with the most frequent label last (``vote_last``).
        Default
        :func:`ucs.defaults.application_order`: ``vote_last`` when the examples have an output key.
    where : dict, optional
        A metadata filter applied to every call (:meth:`ucs.SelectorIndex.select`): ``{"lang": "de"}`` or
        ``{"tier": ["a", "b"]}`` over the examples' fields. Checked here against the examples.
    where_keys : list of str, optional
        Prompt variables that filter per call: the value of each (``{"lang": "de"}`` passed to the prompt)
        must equal the examples' field of the same name; it is added to ``where`` (and overrides the same
        field there) and never embedded. A list value is a membership condition.
    dedupe : float in (0, 1], optional
        No two chosen examples with cosine ``>= dedupe`` (near-duplicates); off by default.

    Attributes
    ----------
    last_selection : IndexSelection or None
        What the latest call chose: indices, scores, cluster ids and the subset's coverage Φ.
    """

    def __init__(
        self,
        index: SelectorIndex,
        k: int = 4,
        input_keys: Optional[List[str]] = None,
        example_keys: Optional[List[str]] = None,
        order: Optional[str] = None,
        *,
        where: Optional[Dict[str, Any]] = None,
        where_keys: Optional[List[str]] = None,
        dedupe: Optional[float] = None,
    ) -> None:
        if not isinstance(index, SelectorIndex):
            raise ValueError(f"index must be a fitted ucs.SelectorIndex; got {type(index).__name__}")
        index._check_fitted()
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"k must be a non-negative integer; got {k!r}")
        if isinstance(where_keys, str) or not all(isinstance(w, str) for w in where_keys or []):
            raise ValueError(f"where_keys must be a list of prompt variable names; got {where_keys!r}")
        normalize_where(where, index.examples_)
        check_dedupe(dedupe)
        self.index = index
        self.k = int(k)
        self.input_keys = None if input_keys is None else list(input_keys)
        self.example_keys = None if example_keys is None else list(example_keys)
        self.order = order
        self.where = None if where is None else dict(where)
        self.where_keys = list(where_keys or [])
        self.dedupe = dedupe
        self.last_selection: Optional[IndexSelection] = None

    @classmethod
    def load(
        cls,
        directory: Any,
        embedder: Any = None,
        k: int = 4,
        input_keys: Optional[List[str]] = None,
        example_keys: Optional[List[str]] = None,
        order: Optional[str] = None,
        *,
        where: Optional[Dict[str, Any]] = None,
        where_keys: Optional[List[str]] = None,
        dedupe: Optional[float] = None,
        **load_kwargs: Any,
    ) -> "UCSExampleSelector":
        """A selector over the index saved in ``directory`` (``SelectorIndex.save``, or ``ucs compare``'s
        recommendation), loaded and verified by :meth:`ucs.SelectorIndex.load`; an index built with an
        installed retrieval embedder (all-MiniLM-L6-v2, all-mpnet-base-v2) needs no ``embedder``."""
        index = SelectorIndex.load(directory, embedder=embedder, **load_kwargs)
        return cls(
            index,
            k=k,
            input_keys=input_keys,
            example_keys=example_keys,
            order=order,
            where=where,
            where_keys=where_keys,
            dedupe=dedupe,
        )

    @classmethod
    def from_examples(
        cls,
        examples: List[Dict[str, Any]],
        embeddings: Any,
        k: int = 4,
        input_keys: Optional[List[str]] = None,
        *,
        example_keys: Optional[List[str]] = None,
        method: str = D.METHOD,
        output_key: Optional[str] = None,
        where: Optional[Dict[str, Any]] = None,
        where_keys: Optional[List[str]] = None,
        dedupe: Optional[float] = None,
        **index_kwargs: Any,
    ) -> "UCSExampleSelector":
        """Fit a :class:`SelectorIndex` over ``examples`` and wrap it.

        Parameters
        ----------
        examples : list of dict
        embeddings : LangChain Embeddings or ucs embedder
        k : int
        input_keys : list of str, optional
            Fields embedded for examples and queries alike. Without them every field of an example is embedded
            (LangChain's behaviour), output included; give them so only the inputs are.
        example_keys : list of str, optional
            Fields returned per example.
        method : str
            ``topk`` (default, :data:`ucs.defaults.METHOD`), ``mmr``, ``labelaware``, ``dpp``, ``votek``,
            ``mdl`` (needs ``lm=``); ``topk``, ``dpp``, ``votek``, ``mdl`` with or without ``+ucs``.
        output_key : str, optional
            The label field (MDL builds labelled prompts from it).
        where, where_keys, dedupe
            Filters and near-duplicate suppression of every call (see the class).
        **index_kwargs
            Passed to :class:`SelectorIndex` (``clusterer``, ``prior``, ``selector_params``, ``lm``,
            ``candidate_search``, ``cache_dir``, ``random_state``).
        """
        embedder = as_embedder(embeddings)
        keys = list(input_keys) if input_keys is not None else None
        if keys is None and output_key is None and examples:
            keys = list(examples[0])  # LangChain's default: every field is embedded
        index = SelectorIndex(embedder, method, input_keys=keys, output_key=output_key, **index_kwargs)
        return cls(
            index.fit(examples),
            k=k,
            input_keys=input_keys,
            example_keys=example_keys,
            where=where,
            where_keys=where_keys,
            dedupe=dedupe,
        )

    # ------------------------------------------------------------------ the query
    def _query_text(self, input_variables: Dict[str, Any]) -> str:
        keys = self.input_keys or list(self.index.input_keys_)
        if all(k in input_variables for k in keys):
            return " ".join(str(input_variables[k]) for k in keys)
        if self.input_keys is None:
            return " ".join(str(v) for k, v in input_variables.items() if k not in self.where_keys)
        missing = [k for k in keys if k not in input_variables]
        raise ValueError(f"the prompt passed no variable(s) {missing}; input_keys must name prompt variables")

    def _embed_query(self, text: str) -> np.ndarray:
        emb = self.index.get_embedder()
        if isinstance(emb, DocumentsEmbedder):
            return emb.embed_query(text)
        return self.index._embed_query_texts([text])[0]

    def warmup(self) -> "UCSExampleSelector":
        """Load the embedder and run one query through :meth:`select_examples` (the first example's input as
        the prompt variables), so the application's first call is not the slow one; ``last_selection`` stays
        as it was. :meth:`ucs.SelectorIndex.load` already warms an index it loads (``warmup=True``)."""
        first = self.index.examples_[0]
        keys = self.input_keys or list(self.index.input_keys_)
        last = self.last_selection
        variables = {key: first.get(key, "") for key in keys}
        for key in self.where_keys:  # a value some example holds, so the probe's filter is a valid one
            variables[key] = next((e[key] for e in self.index.examples_ if key in e), "")
        self.select_examples(variables)
        self.last_selection = last
        return self

    def _where(self, input_variables: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """``where`` with this call's ``where_keys`` values (``None`` when neither filters)."""
        missing = [k for k in self.where_keys if k not in input_variables]
        if missing:
            raise ValueError(
                f"the prompt passed no variable(s) {missing} named in where_keys; pass them or drop "
                "them from where_keys"
            )
        if not self.where and not self.where_keys:
            return None
        return {**(self.where or {}), **{k: input_variables[k] for k in self.where_keys}}

    def _select(self, text: str, qe: Any, input_variables: Dict[str, Any]) -> List[Dict[str, Any]]:
        sel = self.index.select(
            text,
            self.k,
            query_embeddings=qe,
            example_keys=self.example_keys,
            order=self.order,
            where=self._where(input_variables),
            dedupe=self.dedupe,
        )
        return self._finish(sel)

    def _finish(self, sel: IndexSelection) -> List[Dict[str, Any]]:
        self.last_selection = sel
        return sel.examples

    # ------------------------------------------------------------------ BaseExampleSelector
    def select_examples(self, input_variables: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The ``k`` examples for the prompt variables ``input_variables`` (a list of dicts)."""
        text = self._query_text(input_variables)
        if not self.index.selector_.query_dependent:
            return self._select(text, None, input_variables)
        return self._select(text, self._embed_query(text), input_variables)

    async def aselect_examples(self, input_variables: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Async :meth:`select_examples`: the query is embedded with ``aembed_query`` when the embeddings are
        LangChain's; selection itself is CPU work of about a millisecond and runs inline."""
        emb = self.index.get_embedder()
        if not isinstance(emb, DocumentsEmbedder):
            return await super().aselect_examples(input_variables)
        text = self._query_text(input_variables)
        if not self.index.selector_.query_dependent:
            return self._select(text, None, input_variables)
        return self._select(text, await emb.aembed_query(text), input_variables)

    def add_example(self, example: Dict[str, Any]) -> None:
        """Add one example (placed into the existing clusters; see :meth:`SelectorIndex.add_examples`)."""
        self.index.add_examples([example])

    async def aadd_example(self, example: Dict[str, Any]) -> None:
        await super().aadd_example(example)

"""A LangChain example selector backed by :class:`ucs.SelectorIndex` (extra ``langchain``: langchain-core).

``UCSExampleSelector.from_examples(examples, embeddings, k=4, input_keys=["input"], method="dpp+ucs")`` mirrors
``SemanticSimilarityExampleSelector.from_examples`` without a vector store: the index is the store, it is
saved with ``selector.index.save(dir)`` and reloaded with ``UCSExampleSelector(SelectorIndex.load(dir, ...))``.
It plugs into ``FewShotPromptTemplate(example_selector=...)`` and ``FewShotChatMessagePromptTemplate``.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional

import numpy as np

from ucs import defaults as D
from ucs.embedding.adapters import DocumentsEmbedder, as_embedder
from ucs.index import IndexSelection, SelectorIndex

try:
    from langchain_core.embeddings import Embeddings
    from langchain_core.example_selectors import BaseExampleSelector
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ucs.integrations.langchain needs langchain-core: pip install -e '.[langchain]' in the ucs repository (or pip install langchain-core)"
    ) from exc

__all__ = ["LangChainEmbedder", "UCSExampleSelector"]

class LangChainEmbedder(DocumentsEmbedder):
    """Any LangChain :class:`~langchain_core.embeddings.Embeddings` as a ucs embedder
    (:class:`ucs.embedding.adapters.DocumentsEmbedder`, which also accepts objects that only duck-type it).

    The cache identity names the class and its plain settings (never fields that look like credentials) and,
    where no setting names the model, a fingerprint of the vectors of a few fixed texts: two models wrapped in the
    same class never share a cache entry.
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
        The demonstrations' order in the prompt: as chosen, or by similarity with the most similar first or last
        (next to the query), or grouped by label with the most frequent label last (``vote_last``). Default
        :func:`ucs.defaults.application_order`: ``vote_last`` when the examples have an output key.

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
    ) -> None:
        if not isinstance(index, SelectorIndex):
            raise ValueError(f"index must be a fitted ucs.SelectorIndex; got {type(index).__name__}")
        index._check_fitted()
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"k must be a non-negative integer; got {k!r}")
        self.index = index
        self.k = int(k)
        self.input_keys = None if input_keys is None else list(input_keys)
        self.example_keys = None if example_keys is None else list(example_keys)
        self.order = order
        self.last_selection: Optional[IndexSelection] = None

    @classmethod
    def load(cls, directory: Any, embedder: Any = None, k: int = 4, input_keys: Optional[List[str]] = None,
             example_keys: Optional[List[str]] = None, order: Optional[str] = None, **load_kwargs: Any
             ) -> "UCSExampleSelector":
        """A selector over the index saved in ``directory`` (``SelectorIndex.save``, or ``ucs compare``'s
        recommendation), loaded and verified by :meth:`ucs.SelectorIndex.load`; an index built with an installed
        retrieval embedder (all-MiniLM-L6-v2, all-mpnet-base-v2) needs no ``embedder``."""
        index = SelectorIndex.load(directory, embedder=embedder, **load_kwargs)
        return cls(index, k=k, input_keys=input_keys, example_keys=example_keys, order=order)

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
            ``topk`` (default, :data:`ucs.defaults.METHOD`), ``mmr``, ``labelaware``, ``dpp``, ``votek``, ``mdl``
            (needs ``lm=``); ``topk``, ``dpp``, ``votek``, ``mdl`` with or without ``+ucs``.
        output_key : str, optional
            The label field (MDL builds labelled prompts from it).
        **index_kwargs
            Passed to :class:`SelectorIndex` (``clusterer``, ``prior``, ``selector_params``, ``lm``,
            ``candidate_search``, ``cache_dir``, ``random_state``).
        """
        embedder = as_embedder(embeddings)
        keys = list(input_keys) if input_keys is not None else None
        if keys is None and output_key is None and examples:
            keys = list(examples[0])  # LangChain's default: every field is embedded
        index = SelectorIndex(embedder, method, input_keys=keys, output_key=output_key, **index_kwargs)
        return cls(index.fit(examples), k=k, input_keys=input_keys, example_keys=example_keys)

    # ------------------------------------------------------------------ the query
    def _query_text(self, input_variables: Dict[str, Any]) -> str:
        keys = self.input_keys or list(self.index.input_keys_)
        if all(k in input_variables for k in keys):
            return " ".join(str(input_variables[k]) for k in keys)
        if self.input_keys is None:
            return " ".join(str(v) for v in input_variables.values())
        missing = [k for k in keys if k not in input_variables]
        raise ValueError(f"the prompt passed no variable(s) {missing}; input_keys must name prompt variables")

    def _embed_query(self, text: str) -> np.ndarray:
        emb = self.index.get_embedder()
        if isinstance(emb, DocumentsEmbedder):
            return emb.embed_query(text)
        return self.index._embed_query_texts([text])[0]

    def warmup(self) -> "UCSExampleSelector":
        """Load the embedder and run one query through :meth:`select_examples` (the first example's input as the
        prompt variables), so the application's first call is not the slow one; ``last_selection`` stays as it
        was. :meth:`ucs.SelectorIndex.load` already warms an index it loads (``warmup=True``)."""
        first = self.index.examples_[0]
        keys = self.input_keys or list(self.index.input_keys_)
        last = self.last_selection
        self.select_examples({key: first.get(key, "") for key in keys})
        self.last_selection = last
        return self

    def _finish(self, sel: IndexSelection) -> List[Dict[str, Any]]:
        self.last_selection = sel
        return sel.examples

    # ------------------------------------------------------------------ BaseExampleSelector
    def select_examples(self, input_variables: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The ``k`` examples for the prompt variables ``input_variables`` (a list of dicts)."""
        text = self._query_text(input_variables)
        if not self.index.selector_.query_dependent and self.index.base_ != "mdl":
            return self._finish(self.index.select(text, self.k, example_keys=self.example_keys,
                                                   order=self.order))
        qe = self._embed_query(text)
        return self._finish(self.index.select(text, self.k, query_embeddings=qe, example_keys=self.example_keys,
                                                   order=self.order))

    async def aselect_examples(self, input_variables: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Async :meth:`select_examples`: the query is embedded with ``aembed_query`` when the embeddings are
        LangChain's; selection itself is CPU work of about a millisecond and runs inline."""
        emb = self.index.get_embedder()
        if not isinstance(emb, DocumentsEmbedder):
            return await super().aselect_examples(input_variables)
        text = self._query_text(input_variables)
        if not self.index.selector_.query_dependent and self.index.base_ != "mdl":
            return self._finish(self.index.select(text, self.k, example_keys=self.example_keys,
                                                   order=self.order))
        qe = await emb.aembed_query(text)
        return self._finish(self.index.select(text, self.k, query_embeddings=qe, example_keys=self.example_keys,
                                                   order=self.order))

    def add_example(self, example: Dict[str, Any]) -> None:
        """Add one example (placed into the existing clusters; see :meth:`SelectorIndex.add_examples`)."""
        self.index.add_examples([example])

    async def aadd_example(self, example: Dict[str, Any]) -> None:
        await super().aadd_example(example)

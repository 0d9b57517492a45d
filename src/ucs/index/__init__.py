"""The selector index for applications: fit once, select per query.

Fitted once over examples, saved, loaded in a service, asked per query.

:class:`SelectorIndex` embeds the examples' input fields (through the embedding cache), clusters them with a
:class:`~ucs.clustering.LatentClusterer`, fits any selector (``topk``, ``dpp``, ``mdl``, ``votek``, ``mmr``,
``bsr`` …, most with a ``+ucs`` form) and answers ``select(query, k)`` with the examples, their scores,
cluster ids and the subset's coverage. See ``docs/index.md``.
"""

from ucs.index.index import IndexSelection, SelectorIndex
from ucs.index.storage import IndexIntegrityError

__all__ = ["IndexIntegrityError", "IndexSelection", "SelectorIndex"]

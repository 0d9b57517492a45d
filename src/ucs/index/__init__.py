"""A persisted demonstration index for applications: fit once over examples, save, load, select per query.

:class:`SelectorIndex` embeds the examples' input fields (through the embedding cache), clusters them with a
:class:`~ucs.clustering.LatentClusterer`, fits any selector (``topk``, ``dpp``, ``mdl``, ``votek``, each with
``+ucs``) and answers ``select(query, k)`` with the examples, their scores, cluster ids and the subset's
coverage. See ``docs/index.md``.
"""

from ucs.index.index import IndexSelection, SelectorIndex
from ucs.index.storage import IndexIntegrityError

__all__ = ["IndexIntegrityError", "IndexSelection", "SelectorIndex"]

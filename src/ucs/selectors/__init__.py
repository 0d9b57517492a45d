"""Demonstration selectors behind one contract (SPEC §4).

UCS is a prior that composes with them.

``Selector.fit(pool_embeddings, labels=, texts=, cluster_ids=) -> self`` then
``select(query_embeddings, budget) -> Selection``. Pass ``prior=UCSPrior(cluster_ids, estimator, lam)`` to
DPP, MDL, VoteK (or TopK) for the UCS-regularised form; ``lam = 0`` is the base selector exactly.
:class:`CoverSelector` is coverage alone: one fixed set, the medoids of the largest latent clusters.
:class:`MMRSelector` (relevance minus redundancy, LangChain's MMR) and :class:`LabelAwareSelector` (nearest
neighbours with the prompt's labels spread) and :class:`BSRSelector` (Set-BSR: demonstrations covering the
query's tokens) are the relevance-keeping selectors UCS is measured against.
"""

from ucs.selectors.base import Selector
from ucs.selectors.bsr import BSRSelector
from ucs.selectors.cover import CoverSelector
from ucs.selectors.dpp import DPPSelector, dpp_kernel, greedy_map_dpp
from ucs.selectors.labelaware import LabelAwareSelector
from ucs.selectors.mdl import ContinuationScorer, MDLSelector, negative_entropy
from ucs.selectors.method import MethodSpec
from ucs.selectors.mmr import MMRSelector
from ucs.selectors.prior import CORPUS_PRIORS, SCORE_DESIGNS, UCSPrior
from ucs.selectors.random import RandomSelector
from ucs.selectors.selection import Selection
from ucs.selectors.topk import TopKSelector
from ucs.selectors.votek import VoteGraph, VoteKSelector, build_vote_graph

__all__ = [
    "BSRSelector",
    "CORPUS_PRIORS",
    "SCORE_DESIGNS",
    "ContinuationScorer",
    "CoverSelector",
    "DPPSelector",
    "LabelAwareSelector",
    "MDLSelector",
    "MMRSelector",
    "MethodSpec",
    "RandomSelector",
    "Selection",
    "Selector",
    "TopKSelector",
    "UCSPrior",
    "VoteGraph",
    "VoteKSelector",
    "build_vote_graph",
    "dpp_kernel",
    "greedy_map_dpp",
    "negative_entropy",
]

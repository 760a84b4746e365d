"""X-ACE: explainable multi-factor audio caption evaluation (audio graphs + greedy graph matching)."""

from .extractor import RuleExtractor
from .graph import AudioGraph, chain_relation, infer_chain, merge_graphs
from .scorer import XaceCaptionsScorer, XaceScorer
from .tags import TagLibrary, load_tag_library

__all__ = [
    "AudioGraph",
    "RuleExtractor",
    "TagLibrary",
    "XaceCaptionsScorer",
    "XaceScorer",
    "chain_relation",
    "infer_chain",
    "load_tag_library",
    "merge_graphs",
]

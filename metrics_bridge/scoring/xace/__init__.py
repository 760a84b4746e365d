"""X-ACE: explainable multi-factor audio caption evaluation (audio graphs + greedy graph matching)."""

from .extractor import RuleExtractor
from .graph import AudioGraph, chain_relation, infer_chain, merge_graphs
from .scorer import XaceScorer

__all__ = ["AudioGraph", "RuleExtractor", "XaceScorer", "chain_relation", "infer_chain", "merge_graphs"]

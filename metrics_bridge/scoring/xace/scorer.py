"""The X-ACE scorer (without the cross-modal term: the paper's "w/o cm" variant).

Reference graph per request: the clip's AudioCaps-F expert annotation when the context has one
(events, sources, attributes; relations come from the reference captions, since the annotation has no
temporal information), else the union of the reference captions' graphs (the paper's "w/o anno").

Version string: xace-wo-cm+<node similarity>+<extractor>. Departures from the paper, on purpose:
- S(x, y) uses all-MiniLM-L6-v2 phrase vectors instead of GloVe (protocols.md §3; GloVe 6B-50d
  measured 62.7-65.0 total on Clotho-Eval against 66.9 for MiniLM).
- "sbert-minilm-ctx" (version 2): events compare by the mean of the bare-lemma cosine and the cosine of
  the events in context ("dog barking" vs "bird chirping"); the same event lemma still scores 1. Bare
  MiniLM word vectors put unrelated sound verbs close together; the event factor alone agreed with
  people 60.6 -> 64.7 on Clotho-Eval with the context (bench/xace_agreement_bench.py).
Measured and NOT adopted (Clotho-Eval total 67.6 for this version; bench/xace_variants_bench.py):
per-reference S_G averaged (65.6) or maximised (64.8) instead of the union; union recall weighted by
how many references mention a node (67.9) and consensus precision (67.3); calibrated (67.5) or
thresholded (67.4) cosines; F-beta 0.5 / 2 (66.5 / 68.2); unequal factor weights (64.6-68.4). Each is
within about 1 point (15 of 1,555 pairs) and moves the splits in opposite directions, so the paper's
union graph, equal macro average and F1 stay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import ScoreResult, ScoringContext, ScoringRequest
from ..llm_client import ChatClient, LLMError
from .embedding import encode_phrases, model_unavailable_reason
from .extractor import RuleExtractor
from .graph import AudioGraph, merge_graphs
from .llm_extractor import LLMExtractor
from .matching import FACTORS, PhraseSimilarity, attribute_text, graph_phrases, match_graphs
from .text import packaged_attribute_tags

FACTOR_METRICS = {"event": "XACE_E", "source": "XACE_S", "attribute": "XACE_A", "relation": "XACE_R"}
_INTENSIFIERS = {"very", "quite", "really", "extremely", "slightly", "somewhat", "rather", "fairly", "so", "too"}


class TagLibrary:
    """The attribute tag library: nearest tag (sub-category) of an attribute and antonym tags."""

    def __init__(self, tags: dict[str, dict]) -> None:
        self.tags = {tag.strip().lower(): info for tag, info in tags.items()}
        self.names = list(self.tags)

    def exact(self, attribute: str) -> dict | None:
        words = [w for w in attribute_text(attribute).split() if w not in _INTENSIFIERS]
        text = " ".join(words)
        for candidate in (
            text,
            text[:-2] if text.endswith("ly") else None,
            text[:-3] + "y" if text.endswith("ily") else None,
        ):
            if candidate and candidate in self.tags:
                return self.tags[candidate]
        return None

    def are_antonyms(self, first: str, second: str) -> bool:
        a, b = self.exact(first), self.exact(second)
        if a is None or b is None or a.get("class") != b.get("class"):
            return False
        return b.get("sym") in (a.get("ant") or []) or a.get("sym") in (b.get("ant") or [])


class XaceScorer:
    metric_names = ("XACE", "XACE_E", "XACE_S", "XACE_A", "XACE_R")
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "embedding"
    # The clip's gold annotation is the reference graph when it has one.
    uses_gold_annotations = True

    def __init__(self, extractor: str | object = "rules", event_context: bool = True) -> None:
        """extractor: "rules" (offline, default), "llm" (Table 10 prompt on the context's endpoint) or an
        object with `name` and `extract(caption) -> AudioGraph`.
        event_context: compare events bare and in context (default); False gives the bare-lemma S of
        version 1 (kept for ablations: bench/xace_agreement_bench.py --bare-events)."""
        self.uses_llm = extractor == "llm"
        self.event_context = event_context
        if extractor == "rules":
            self.extractor = RuleExtractor()
        elif self.uses_llm:
            self.extractor = None  # built per batch from context.llm
        else:
            self.extractor = extractor
        extractor_name = "llm-extractor-table10" if self.uses_llm else self.extractor.name
        similarity_name = "sbert-minilm-ctx" if event_context else "sbert-minilm"
        self.version = f"xace-wo-cm+{similarity_name}+{extractor_name}"
        if self.uses_llm:
            self.needs = frozenset({"references", "llm"})

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = model_unavailable_reason()
        if reason:
            return f"XACE: {reason}"
        if self.uses_llm:
            return LLMExtractor.unavailable_reason_for(context.llm if context else None)
        return None

    def version_for(self, context: ScoringContext) -> str:
        return f"{self.version}+{(context.llm or {}).get('model', 'unknown')}" if self.uses_llm else self.version

    # -- graphs ---------------------------------------------------------------------------
    def caption_graph(self, caption: str) -> AudioGraph:
        graph = self.extractor.extract(caption)
        if graph.events:
            return graph
        # nothing recognised: the caption as a whole stands for one event
        fallback = AudioGraph()
        fallback.add_event(" ".join(caption.lower().split()) or "(empty)")
        return fallback

    def reference_graph(self, request: ScoringRequest, context: ScoringContext) -> tuple[AudioGraph, str]:
        caption_graphs = [self.caption_graph(text) for text in request.references if text and text.strip()]
        annotation = context.expert_annotations.get(request.clip_key) if request.clip_key else None
        if annotation:
            graph = AudioGraph.from_json({"node": annotation, "relationship": {}})
            if caption_graphs:
                # the annotation has no temporal information; take the references' relations, with their events
                graph.relations = list(merge_graphs(caption_graphs).relations)
                graph.has_relation_information = True
            else:
                graph.has_relation_information = False
            return graph, "expert_annotation"
        if not caption_graphs:
            raise ValueError("XACE: a request has neither references nor an expert annotation for its clip")
        return merge_graphs(caption_graphs), "reference_captions"

    # -- scoring --------------------------------------------------------------------------
    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        tags = TagLibrary(context.attribute_tags or packaged_attribute_tags())
        if self.uses_llm:
            reason = self.unavailable_reason(context)
            if reason:
                raise LLMError(reason)
            self.extractor = LLMExtractor(ChatClient.from_context(context.llm, cache=context.llm_cache))
        pairs = []
        for request in requests:
            reference, origin = self.reference_graph(request, context)
            pairs.append((self.caption_graph(request.candidate), reference, origin))
        phrases: set[str] = set(tags.names)
        for candidate, reference, _ in pairs:
            phrases |= graph_phrases(candidate) | graph_phrases(reference)
        ordered = sorted(phrases)
        vectors = dict(zip(ordered, encode_phrases(ordered), strict=False))
        similarity = PhraseSimilarity(vectors, antonyms=tags.are_antonyms, context=self.event_context)
        tag_matrix = np.stack([vectors[name] for name in tags.names]) if tags.names else None
        results: dict[str, list[ScoreResult]] = {name: [] for name in self.metric_names}
        for candidate, reference, origin in pairs:
            match = match_graphs(candidate, reference, similarity)
            details = {
                "variant": "w/o cm",
                "extractor": self.extractor.name,
                "reference_from": origin,
                "precision": round(match.precision, 4),
                "recall": round(match.recall, 4),
                "factors": {name: factor.to_json() for name, factor in match.factors.items()},
                "attribute_categories": self._attribute_categories(match, tags, vectors, tag_matrix),
                "graphs": {"candidate": candidate.to_json(), "reference": reference.to_json()},
            }
            results["XACE"].append(ScoreResult(match.score, details))
            for factor in FACTORS:
                result = match.factors[factor]
                results[FACTOR_METRICS[factor]].append(
                    ScoreResult(
                        result.f1,
                        {
                            "precision": round(result.precision, 4),
                            "recall": round(result.recall, 4),
                            "empty": not result.included,
                        },
                    )
                )
        return results

    @staticmethod
    def _attribute_categories(match, tags: TagLibrary, vectors: dict, tag_matrix) -> dict:
        """Each attribute goes to the class of its nearest tag; P and R per class (paper appendix B)."""
        if tag_matrix is None:
            return {}

        def category(attribute: str) -> str:
            exact = tags.exact(attribute)
            if exact is not None:
                return exact.get("class", "Other")
            nearest = int(np.argmax(tag_matrix @ vectors[attribute_text(attribute)]))
            return tags.tags[tags.names[nearest]].get("class", "Other")

        factor = match.factors["attribute"]
        sums: dict[str, dict[str, list[float]]] = {}
        for side, nodes in (("precision", factor.candidate_nodes), ("recall", factor.reference_nodes)):
            for node in nodes:
                sums.setdefault(category(node.node), {"precision": [], "recall": []})[side].append(node.score)
        return {
            name: {
                "precision": round(float(np.mean(values["precision"])), 4) if values["precision"] else None,
                "recall": round(float(np.mean(values["recall"])), 4) if values["recall"] else None,
                "candidate_nodes": len(values["precision"]),
                "reference_nodes": len(values["recall"]),
            }
            for name, values in sorted(sums.items())
        }

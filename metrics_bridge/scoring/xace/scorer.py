"""The X-ACE scorers (without the cross-modal term: the paper's "w/o cm"), two named variants as rows
of the paper's Table 2:

- XACE ("w/o cm"): the reference graph is the clip's gold AudioCaps-F annotation when it has one (events,
  sources, attributes; the annotation's own temporal relations when it states some, else the reference
  captions' relations, since the released AudioCaps-F file has no temporal information), else the union
  of the reference captions' graphs. `uses_gold_annotations` is True: its scores depend on the gold
  annotation (TEAM.md contract 1).
- XACE_CAPTIONS ("w/o anno & cm"): always the union of the reference captions' graphs.
Each also stores its factor scores (XACE_E/S/A/R, XACE_CAPTIONS_E/S/A/R); a factor with no node in either
graph is not applicable and stored as None (matching.py), left out of averages and agreement.

Macro average over the factors (Eq. 7-8) when a factor is not applicable: "present" (the average of the
factors present) is used. Measured on Clotho-Eval (bench/xace_agreement_bench.py, FENSE protocol, 1,555
pairs): see docs/metrics.md for the figures of both readings.

Version string: xace-wo-cm-<variant>-<macro reading>-<node similarity>-<extractor>-<model and libraries>.
Departures from the paper, on purpose:
- S(x, y) uses all-MiniLM-L6-v2 phrase vectors instead of GloVe (protocols.md §3).
- "sbert-minilm-ctx": events compare by the mean of the bare-lemma cosine and the cosine of the events in
  context ("dog barking" vs "bird chirping"); the same event lemma still scores 1. Bare MiniLM word
  vectors put unrelated sound verbs close together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import sbert
from ..base import ScoreResult, ScoringContext, ScoringRequest, installed_version
from ..llm_client import ChatClient, LLMError
from .extractor import RuleExtractor
from .graph import AudioGraph, merge_graphs
from .llm_extractor import LLMExtractor
from .matching import FACTORS, MACRO_READINGS, PhraseSimilarity, attribute_text, graph_phrases, match_graphs
from .tags import TagLibrary

FACTOR_SUFFIXES = {"event": "E", "source": "S", "attribute": "A", "relation": "R"}
IMPLEMENTATION_REVISION = 3
ANNOTATION_OR_CAPTIONS, CAPTIONS = "annotation_or_captions", "captions"


class XaceScorer:
    """XACE: gold annotation graph when the clip has one, else the reference captions."""

    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "embedding"
    # The clip's gold annotation is the reference graph when it has one.
    uses_gold_annotations = True

    def __init__(
        self,
        extractor: str | object = "rules",
        event_context: bool = True,
        *,
        reference: str = ANNOTATION_OR_CAPTIONS,
        macro: str = "present",
        name: str = "XACE",
    ) -> None:
        """extractor: "rules" (offline, default), "llm" (Table 10 prompt on the context's endpoint) or an
        object with `name` and `extract(caption) -> AudioGraph`.
        event_context: compare events bare and in context (default); False: bare lemmas only.
        reference: ANNOTATION_OR_CAPTIONS (XACE) or CAPTIONS (XACE_CAPTIONS).
        macro: "present" or "four", the reading of Eq. 7-8 when a factor is not applicable."""
        if reference not in (ANNOTATION_OR_CAPTIONS, CAPTIONS):
            raise ValueError(f"reference must be {ANNOTATION_OR_CAPTIONS!r} or {CAPTIONS!r}, not {reference!r}")
        if macro not in MACRO_READINGS:
            raise ValueError(f"macro must be one of {', '.join(MACRO_READINGS)}, not {macro!r}")
        self.reference = reference
        self.uses_gold_annotations = reference == ANNOTATION_OR_CAPTIONS
        self.macro = macro
        self.metric_names = (name, *(f"{name}_{FACTOR_SUFFIXES[factor]}" for factor in FACTORS))
        self.factor_metrics = dict(zip(FACTORS, self.metric_names[1:], strict=True))
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
        variant = "anno-or-captions" if self.uses_gold_annotations else "captions"
        self.version = (
            f"xace-wo-cm-{variant}-macro-{macro}-eq4-{similarity_name}-{extractor_name}"
            f"-{sbert.model_version()},lemminflect-{installed_version('lemminflect')}+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )
        if self.uses_llm:
            self.needs = frozenset({"references", "llm"})

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = sbert.model_unavailable_reason()
        if reason:
            return f"{self.metric_names[0]}: {reason}"
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

    def reference_graph(self, request: ScoringRequest, context: ScoringContext) -> tuple[AudioGraph, str, str]:
        """(graph, where its nodes come from, where its relations come from)."""
        caption_graphs = [self.caption_graph(text) for text in request.references if text and text.strip()]
        annotation = context.expert_annotations.get(request.clip_key) if request.clip_key else None
        if annotation and self.uses_gold_annotations:
            graph, relations_from = annotation_graph(annotation, caption_graphs)
            if graph.events:
                return graph, "expert_annotation", relations_from
        if not caption_graphs:
            raise ValueError(f"{self.metric_names[0]}: a request has neither references nor an expert annotation")
        return merge_graphs(caption_graphs), "reference_captions", "reference_captions"

    # -- scoring --------------------------------------------------------------------------
    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        tags = TagLibrary(context.attribute_tags)
        if self.uses_llm:
            reason = self.unavailable_reason(context)
            if reason:
                raise LLMError(reason)
            self.extractor = LLMExtractor(ChatClient.from_context(context.llm, cache=context.llm_cache))
        pairs = []
        for request in requests:
            reference, origin, relations_from = self.reference_graph(request, context)
            pairs.append((self.caption_graph(request.candidate), reference, origin, relations_from))
        phrases: set[str] = set(tags.names)
        for candidate, reference, _, _ in pairs:
            phrases |= graph_phrases(candidate) | graph_phrases(reference)
        ordered = sorted(phrases)
        vectors = dict(zip(ordered, sbert.encode_texts(ordered), strict=True))
        similarity = PhraseSimilarity(vectors, antonyms=tags.are_antonyms, context=self.event_context)
        tag_matrix = np.stack([vectors[name] for name in tags.names]) if tags.names else None
        results: dict[str, list[ScoreResult]] = {name: [] for name in self.metric_names}
        for candidate, reference, origin, relations_from in pairs:
            match = match_graphs(candidate, reference, similarity, macro=self.macro)
            details = {
                "variant": "w/o cm" if self.uses_gold_annotations else "w/o anno & cm",
                "extractor": self.extractor.name,
                "reference_from": origin,
                "relations_from": relations_from,
                "precision": round(match.precision, 4),
                "recall": round(match.recall, 4),
                "factors": {name: factor.to_json() for name, factor in match.factors.items()},
                "attribute_categories": self._attribute_categories(match, tags, vectors, tag_matrix),
                "graphs": {"candidate": candidate.to_json(), "reference": reference.to_json()},
            }
            results[self.metric_names[0]].append(ScoreResult(match.score, details))
            for factor in FACTORS:
                result = match.factors[factor]
                factor_details = {
                    "precision": None if result.precision is None else round(result.precision, 4),
                    "recall": None if result.recall is None else round(result.recall, 4),
                    "applicable": result.included,
                }
                results[self.factor_metrics[factor]].append(ScoreResult(result.f1, factor_details))
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


class XaceCaptionsScorer(XaceScorer):
    """XACE_CAPTIONS ("w/o anno & cm"): the reference captions' graphs, never the gold annotation."""

    def __init__(
        self, extractor: str | object = "rules", event_context: bool = True, *, macro: str = "present"
    ) -> None:
        super().__init__(extractor, event_context, reference=CAPTIONS, macro=macro, name="XACE_CAPTIONS")


def annotation_graph(annotation: dict, caption_graphs: list[AudioGraph]) -> tuple[AudioGraph, str]:
    """The reference graph of a gold annotation and where its relations come from.

    `annotation`: bare {event: {"source", "attr"}} or {"node": {...}, "relations": [[a, b, relation]]} (and
    "spans": {event: [[onset, offset]]}, which limit the relations the chain rule derives).
    Stated relations are the reference relations; without any, the reference captions' relations are used
    (the released AudioCaps-F file has no temporal information), and none at all without captions.
    """
    nodes = annotation["node"] if "node" in annotation else annotation
    stated = annotation.get("relations") if "node" in annotation else None
    if stated:
        document = {"node": nodes, "relations": stated, "spans": annotation.get("spans") or {}}
        return AudioGraph.from_json(document), "expert_annotation"
    graph = AudioGraph.from_json(dict(nodes))  # a bare annotation: no temporal information
    if caption_graphs:
        graph.relations = list(merge_graphs(caption_graphs).relations)
        graph.has_relation_information = True
        return graph, "reference_captions"
    return graph, "none"

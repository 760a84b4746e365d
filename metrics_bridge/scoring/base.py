"""What every metric scorer provides. Plain Python: no Django import anywhere under scoring/.

A *scorer* computes one or more metric names at once (BLEU_1..BLEU_4 share one pass;
XACE and its factor scores XACE_E/S/A/R too). The registry maps metric names to scorers.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ScoringRequest:
    """Score `candidate` against `references`.

    `candidate_id` is opaque to the scorer (the Django side passes a Caption id).
    `clip_key` lets scorers that need more than text (expert annotations, audio) find it
    in the ScoringContext.
    """

    candidate: str
    references: tuple[str, ...]
    candidate_id: Any = None
    clip_key: str | None = None


@dataclass
class ScoreResult:
    value: float
    details: dict = field(default_factory=dict)


@dataclass
class ScoringContext:
    """Extra inputs some scorers need, all optional.

    expert_annotations: clip_key -> the clip's gold AudioCaps-F annotation {event: {"source": [...], "attr": [...]}}
        (events may also carry "relations": {other event: before/after/simultaneous})
    audio_paths: clip_key -> local path of the clip's audio
    attribute_tags: tag text -> {"class": ..., "sym": ..., "ant": [...]} (the tag library)
    llm: settings of an OpenAI-compatible endpoint {"api_base", "api_key", "model"} or None
    llm_cache: object with get(model, prompt_hash) / put(model, prompt_hash, text, prompt_tokens, completion_tokens)
    """

    expert_annotations: dict[str, dict] = field(default_factory=dict)
    audio_paths: dict[str, str] = field(default_factory=dict)
    attribute_tags: dict[str, dict] = field(default_factory=dict)
    llm: dict | None = None
    llm_cache: Any = None


class Scorer(Protocol):
    #: metric names this scorer produces, e.g. ("BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4")
    metric_names: tuple[str, ...]
    #: changes whenever implementation, tokenizer or model changes
    version: str
    #: subset of {"references", "expert_annotations", "audio", "llm"}
    needs: frozenset[str]
    #: True when one request's score depends on the other requests of its batch
    #: (CIDEr-D document frequencies, DATE's idf and ranks): such batches are never split.
    corpus_level: bool
    #: "ngram" or "embedding": how the FENSE protocol treats MM pairs (leave-one-out or all refs)
    protocol_kind: str
    #: True when a score depends on the clip's gold annotation (context.expert_annotations): the run planner
    #: then puts gold_annotation_fingerprint() of the clip into the stored score's identity, so a changed gold
    #: annotation recomputes exactly that clip's scores. Optional: scorers without it count as False.
    uses_gold_annotations: bool

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        """None when the scorer can run here, else a sentence saying what is missing."""

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        """One ScoreResult per request for each name in metric_names, in request order."""

    # Optional, looked up with getattr (see score_batches / warm_up below):
    #   score_batches(batches, context) -> list[dict[str, list[ScoreResult]]]  several corpora at once
    #   warm_up() -> None  start slow resources (JVM, model) in the background


def uses_gold_annotations(scorer: Scorer) -> bool:
    return bool(getattr(scorer, "uses_gold_annotations", False))


def gold_annotation_fingerprint(annotation: dict | None) -> str:
    """Identifies a clip's gold annotation as scorers receive it (context.expert_annotations[clip_key]);
    "none" when the clip has none. Order counts: it is the content the scorer sees."""
    if not annotation:
        return "none"
    payload = json.dumps(annotation, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


def score_batches(
    scorer: Scorer, batches: Sequence[Sequence[ScoringRequest]], context: ScoringContext
) -> list[dict[str, list[ScoreResult]]]:
    """Score several batches, each as its own corpus; one result dict per batch.

    Scorers may offer `score_batches(batches, context)` themselves to share work across batches
    (the classic scorers tokenize every text in one JVM call and send METEOR one stream);
    otherwise this calls score_batch once per batch. Values are the same either way.
    """
    own = getattr(scorer, "score_batches", None)
    if own is not None:
        return own(batches, context)
    return [scorer.score_batch(batch, context) for batch in batches]


def warm_up(scorer: Scorer) -> None:
    """Let a scorer start slow resources early (METEOR's JVM, a model) when it offers `warm_up()`."""
    hook = getattr(scorer, "warm_up", None)
    if hook is not None:
        hook()

"""What every metric scorer provides. Plain Python: no Django import anywhere under scoring/.

A *scorer* computes one or more metric names at once (BLEU_1..BLEU_4 share one pass;
XACE and its factor scores XACE_E/S/A/R too). The registry maps metric names to scorers.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol


@dataclass(frozen=True)
class ScoringRequest:
    """Score `candidate` against `references`.

    `candidate_id` is opaque to the scorer (the Django side passes a Caption id).
    `clip_key` lets scorers that need more than text (expert annotations, audio) find it
    in the ScoringContext.
    `author` names who wrote the candidate ("human", or a captioning system); DATE scores each
    caption within the set of captions of its own author (protocols.md §4). None: one author.
    """

    candidate: str
    references: tuple[str, ...]
    candidate_id: Any = None
    clip_key: str | None = None
    author: str | None = None


@dataclass
class ScoreResult:
    """`value` is None when the metric does not apply (an X-ACE factor absent from both graphs)."""

    value: float | None
    details: dict = field(default_factory=dict)


DOMAINS = ("sound", "music", "speech")
AIRBENCH_REFERENCES = ("first", "llm")
DEFAULT_DATE_DELTA = 0.1703


@dataclass(frozen=True)
class DatasetSettings:
    """Per-dataset metric settings (the Django side copies them from the Dataset row).

    domain: sound / music / speech -- the AudioCapBench judge's category guidance.
    date_delta: DATE's tolerance band delta (protocols.md §4; the MECAT authors' value for long captions).
    airbench_reference: the AIR-Bench judge's reference answer: "first" reference caption, or an
    "llm"-written reference answer generated once per reference list and cached.
    """

    domain: str = "sound"
    date_delta: float = DEFAULT_DATE_DELTA
    airbench_reference: str = "first"

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {', '.join(DOMAINS)}, not {self.domain!r}")
        if not 0 <= self.date_delta <= 2:
            raise ValueError(f"date_delta must be within [0, 2], not {self.date_delta!r}")
        if self.airbench_reference not in AIRBENCH_REFERENCES:
            raise ValueError(
                f"airbench_reference must be one of {', '.join(AIRBENCH_REFERENCES)}, not {self.airbench_reference!r}"
            )


@dataclass(frozen=True)
class MetricResources:
    """Local resources some scorers need (the Django side copies them from settings; nothing reads os.environ).

    spice_corenlp_dir: folder with the Stanford CoreNLP 3.6.0 jars (SPICE, SPIDEr)
    spice_cache_dir: SPICE's parse cache folder (optional)
    fense_error_detector_path: FENSE error-detector checkpoint file
    fense_error_detector_base: local folder with the detector encoder's config and tokenizer (optional)
    clap_model_dir: folder with a LAION CLAP checkpoint in the transformers layout (CLAP, MACE)
    """

    spice_corenlp_dir: str | None = None
    spice_cache_dir: str | None = None
    fense_error_detector_path: str | None = None
    fense_error_detector_base: str | None = None
    clap_model_dir: str | None = None


@dataclass
class ScoringContext:
    """Extra inputs some scorers need, all optional.

    expert_annotations: clip_key -> gold AudioCaps-F annotation, either bare {event: {"source": [...],
        "attr": [...]}} (the released file) or {"node": {event: {...}}, "relations": [[event, event,
        "before" | "after" | "and"], ...]} when it has temporal relations
    audio_paths: clip_key -> local path of the clip's audio (filled for scorers whose `needs` name "audio")
    audio_hashes: clip_key -> sha256 of that audio file (audio embeddings are cached by it)
    attribute_tags: tag text -> {"class": ..., "sym": ..., "ant": [...]} (the tag library)
    clip_references: clip_key -> the clip's full reference list (DATE's discriminability compares a
        caption with every clip of the dataset; requests under the pairwise protocol carry shortened lists)
    llm: settings of an OpenAI-compatible endpoint {"api_base", "api_key", "model"} or None
    llm_cache: object with get(model, prompt_hash) / put(model, prompt_hash, text, prompt_tokens, completion_tokens)
    dataset: per-dataset settings (domain, DATE delta, AIR-Bench reference choice)
    resources: local files some scorers need (CoreNLP jars, FENSE detector)
    corpus_texts: every caption and reference text of the dataset, for scorers whose `needs` name
        "corpus_texts": a scorer with a fixed cost per call (the PTB tokenizer's JVM start) processes
        them all the first time it has to pay it, and the run's next chunks find them done
    """

    expert_annotations: dict[str, dict] = field(default_factory=dict)
    audio_paths: dict[str, str] = field(default_factory=dict)
    audio_hashes: dict[str, str] = field(default_factory=dict)
    attribute_tags: dict[str, dict] = field(default_factory=dict)
    clip_references: dict[str, tuple[str, ...]] = field(default_factory=dict)
    llm: dict | None = None
    llm_cache: Any = None
    dataset: DatasetSettings = field(default_factory=DatasetSettings)
    resources: MetricResources = field(default_factory=MetricResources)
    corpus_texts: tuple[str, ...] = ()


class Scorer(Protocol):
    #: metric names this scorer produces, e.g. ("BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4")
    metric_names: tuple[str, ...]
    #: changes whenever implementation, tokenizer or model changes
    version: str
    #: subset of {"references", "expert_annotations", "audio", "llm", "corpus_texts"}
    needs: frozenset[str]
    #: True when one request's score depends on the other requests of its batch
    #: (CIDEr-D document frequencies, DATE's idf and discriminability): such batches are never split.
    corpus_level: bool
    #: "ngram" or "embedding": how the FENSE protocol treats MM pairs (leave-one-out or all refs)
    protocol_kind: str
    #: True when scores depend on the clip's gold annotation (X-ACE's reference graph): the run planner puts
    #: gold_annotation_fingerprint() of the clip's context.expert_annotations entry into the stored score's
    #: identity, so a changed gold annotation recomputes exactly that clip's scores. Read with getattr(..., False).
    uses_gold_annotations: bool = False
    #: For corpus-level scorers, how the pairwise protocol groups requests into corpora:
    #: "fense" = the four corpora of the FENSE code (CIDEr-D), "single" = every request in one batch
    #: (DATE, which groups by author itself). Read with getattr(..., "fense").
    corpus_batching: str = "fense"

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        """None when the scorer can run here, else a sentence saying what is missing."""

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        """One ScoreResult per request for each name in metric_names, in request order."""

    # Optional, looked up with getattr (see score_batches / warm_up / scorer_version below):
    #   score_batches(batches, context) -> list[dict[str, list[ScoreResult]]]  several corpora at once
    #   warm_up() -> None  start slow resources (JVM, model) in the background
    #   uses_clip_data: bool  False when the scorer reads only its requests' texts (the context then carries
    #       no expert annotations and no clip_references; default True)
    #   version_for(context) -> str  the version when it depends on settings (judge model, DATE delta, ...)
    #   chunk_size_factor: int  chunks of this scorer hold this many times METRICS_CHUNK_SIZE requests (default 1)


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


@functools.cache
def installed_version(package: str) -> str:
    """The installed version of a package, for version strings ("missing" when it is not installed).

    Read once per process: reading it parses the package's metadata file (about 15 ms each on a busy machine, and a
    dashboard page's fingerprint asks for some twelve packages several times); a process serves the code it
    imported at start, so a package upgraded under it needs a restart anyway."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "missing"


def scorer_version(scorer: Scorer, context: ScoringContext) -> str:
    """The version scores are stored under: `version_for(context)` when the scorer has it (LLM judges add
    their model, DATE its delta, FENSE its detector), else the class version."""
    version_for = getattr(scorer, "version_for", None)
    return version_for(context) if version_for else scorer.version


def warm_up(scorer: Scorer) -> None:
    """Let a scorer start slow resources early (METEOR's JVM, a model) when it offers `warm_up()`."""
    hook = getattr(scorer, "warm_up", None)
    if hook is not None:
        hook()

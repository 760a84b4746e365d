"""Scoring plans: which (candidate caption, reference set) requests a dataset needs, in which batches.

Two kinds of request are planned for a dataset:
- protocol batches for its judged pairs: FENSE's (protocols.md §1), or BRACE's (§6) for BRACE-layout
  datasets, built by the plain-Python protocols in `metrics_bridge.agreement`, so agreement reports
  can be assembled: for
  corpus-level scorers the four corpora of the FENSE code (CIDEr-D) or one batch (DATE, which
  groups its batch by author), see `protocol.scorer_batching`;
- one "all-references" batch: every candidate caption against all references of its clip,
  the score used for leaderboards and correlation with THumBS ratings.
"""

from dataclasses import dataclass, field

from corpus.models import Caption, Dataset
from metrics_bridge.agreement import protocol, protocols
from metrics_bridge.models import ReferenceSet
from metrics_bridge.scoring.base import ScoringRequest, gold_annotation_fingerprint
from metrics_bridge.selectors.scoring_inputs import (
    ClipRows,
    caption_author,
    dataset_clip_rows,
    gold_annotations_by_clip,
)
from metrics_bridge.services.runs.reference_sets import reference_set_key

ALL_REFERENCES = "all-references"


@dataclass
class PlannedBatch:
    label: str
    # (caption id, reference texts), duplicates kept: corpus-level metrics count them.
    requests: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)

    def add(self, *, caption_id: int, references: tuple[str, ...]) -> None:
        self.requests.append((caption_id, tuple(references)))


GOLD_MARK = "|gold:"


def reference_context(*, corpus_level: bool, batch_label: str, gold_fingerprint: str | None = None) -> str:
    """What besides its texts identifies a reference set for a scorer.

    Corpus-level scores (CIDEr-D's document frequencies, DATE's ranks) depend on the batch,
    so its label is part of the identity; other scores are the same in any batch, which lets
    e.g. the MM batch and the all-references batch share SBERT scores. Scorers that read the
    clip's gold annotation (X-ACE) add its fingerprint ("none" without one): a changed gold
    annotation makes new reference sets for that clip only, so exactly its scores are recomputed.
    """
    context = batch_label if corpus_level else ""
    return context if gold_fingerprint is None else f"{context}{GOLD_MARK}{gold_fingerprint}"


def scorer_reference_context(
    *, scorer, batch_label: str, caption_id: int, gold_fingerprints: dict[int, str] | None
) -> str:
    """The reference-set context of one request for `scorer`: what the planner stores and readers look up."""
    fingerprint = None
    if getattr(scorer, "uses_gold_annotations", False):
        if gold_fingerprints is None:
            raise ValueError(f"{scorer.metric_names[0]} reads gold annotations: pass the clips' gold fingerprints")
        fingerprint = gold_fingerprints.get(caption_id, "none")
    return reference_context(corpus_level=scorer.corpus_level, batch_label=batch_label, gold_fingerprint=fingerprint)


def context_with_gold(context: str, gold_fingerprint: str) -> str:
    """`context` with its gold fingerprint replaced (a gold annotation changed between planning and scoring)."""
    return f"{context.split(GOLD_MARK, 1)[0]}{GOLD_MARK}{gold_fingerprint}"


def chunk_requests_for(
    *, batch: PlannedBatch, scorer, gold_fingerprints: dict[int, str] | None = None
) -> tuple[list[dict], dict[str, tuple[tuple[str, ...], str]]]:
    """The batch's requests as stored on chunks, and the reference sets they name (key -> (texts, context)).

    `gold_fingerprints` (caption id -> fingerprint of its clip's gold annotation) for scorers that use gold.
    """
    requests, reference_sets = [], {}
    for caption_id, references in batch.requests:
        context = scorer_reference_context(
            scorer=scorer, batch_label=batch.label, caption_id=caption_id, gold_fingerprints=gold_fingerprints
        )
        key = reference_set_key(texts=references, context=context)
        reference_sets[key] = (references, context)
        requests.append({"caption_id": caption_id, "reference_set_key": key})
    return requests, reference_sets


def protocol_clips(clip_rows: list[ClipRows]) -> list["protocol.ProtocolClip"]:
    return [protocol.clip_from_rows(rows) for rows in clip_rows if rows.pairs and rows.references]


def fense_label(batch_label: str) -> str:
    """Context of a protocol batch (FENSE's or BRACE's); part of the reference-set key (CIDEr-D depends on it)."""
    return protocols.batch_context(batch_label)


def fense_batches(
    *, clip_rows: list[ClipRows], protocol_kind: str, batching: str = "fense", protocol_name: str = protocols.FENSE
) -> list[PlannedBatch]:
    """The pair protocol's batches (FENSE's, or BRACE's for BRACE-layout datasets)."""
    batches = []
    plan = protocols.scoring_plan(
        protocol_clips(clip_rows), protocol_name=protocol_name, protocol_kind=protocol_kind, batching=batching
    )
    for planned in plan:
        batch = PlannedBatch(label=fense_label(planned.label))
        for request in planned.requests:
            batch.add(caption_id=request.candidate_id, references=tuple(request.references))
        batches.append(batch)
    return batches


def all_references_batch(*, clip_rows: list[ClipRows]) -> PlannedBatch:
    batch = PlannedBatch(label=ALL_REFERENCES)
    for rows in clip_rows:
        if not rows.references:
            continue
        for caption_id, _text in rows.candidates:
            batch.add(caption_id=caption_id, references=tuple(rows.references))
    return batch


def dataset_scoring_plan(
    *, dataset: Dataset, protocol_kind: str, batching: str = "fense", all_references: bool = True
) -> list[PlannedBatch]:
    clip_rows = dataset_clip_rows(dataset=dataset)
    batches = fense_batches(
        clip_rows=clip_rows, protocol_kind=protocol_kind, batching=batching, protocol_name=dataset.agreement_protocol
    )
    if all_references:
        batch = all_references_batch(clip_rows=clip_rows)
        if batch.requests:
            batches.append(batch)
    return batches


def gold_fingerprints_by_caption(*, dataset: Dataset) -> dict[int, str]:
    """caption id -> fingerprint of its clip's gold annotation as scorers receive it (see scoring.base)."""
    caption_clips = dict(Caption.objects.filter(clip__dataset=dataset).values_list("pk", "clip_id"))
    documents = gold_annotations_by_clip(clip_ids=set(caption_clips.values()))
    return {
        caption_id: gold_annotation_fingerprint(documents.get(str(clip_id)))
        for caption_id, clip_id in caption_clips.items()
    }


def scoring_requests_for(*, chunk_requests: list[dict]) -> tuple[list[ScoringRequest], dict[str, int]]:
    """Load texts for a chunk's requests; returns the requests and reference-set ids by key."""
    caption_ids = {request["caption_id"] for request in chunk_requests}
    rows = Caption.objects.filter(pk__in=caption_ids).values_list(
        "pk", "text", "clip_id", "author_kind", "system__name"
    )
    captions = {pk: (text, clip_id, caption_author(kind, system)) for pk, text, clip_id, kind, system in rows}
    keys = {request["reference_set_key"] for request in chunk_requests}
    reference_rows = ReferenceSet.objects.filter(key__in=keys).values_list("key", "pk", "texts")
    reference_sets = {key: (pk, texts) for key, pk, texts in reference_rows}
    requests = []
    for planned in chunk_requests:
        text, clip_id, author = captions[planned["caption_id"]]
        requests.append(
            ScoringRequest(
                candidate=text,
                references=tuple(reference_sets[planned["reference_set_key"]][1]),
                candidate_id=planned["caption_id"],
                clip_key=str(clip_id),
                author=author,
            )
        )
    return requests, {key: pk for key, (pk, _texts) in reference_sets.items()}

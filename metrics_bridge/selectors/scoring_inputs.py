"""Read-only queries that turn corpus and judgement rows into the plain data scoring code takes."""

from collections import defaultdict
from dataclasses import dataclass, field

from annotation.models import AttributeTag, ExpertAnnotation, TemporalRelation
from corpus.models import Caption, Dataset
from ratings.models import Campaign, CaptionPair, PairwiseVote
from ratings.selectors import included_votes


@dataclass
class JudgedPairRow:
    pair_id: int
    split: str
    caption_a_id: int
    caption_a: str
    caption_b_id: int
    caption_b: str
    votes: list[int] = field(default_factory=list)
    author_a: str | None = None
    author_b: str | None = None
    # BRACE-Hallucination pairs: their own references and known answer ("a" / "b": the original caption)
    references: list[str] = field(default_factory=list)
    known_answer: str | None = None


def caption_author(author_kind: str, system_name: str | None) -> str:
    """Who wrote a caption, as the scoring code names it: "human", or the system ("machine" when unknown)."""
    if author_kind == Caption.AuthorKind.HUMAN:
        return "human"
    return system_name or "machine"


@dataclass
class ClipRows:
    clip_id: int
    references: list[str]
    reference_ids: list[int]
    candidates: list[tuple[int, str]]
    pairs: list[JudgedPairRow]


def dataset_clip_rows(
    *, dataset: Dataset, included_only: bool = False, campaign: Campaign | None = None
) -> list[ClipRows]:
    """Per clip: ordered references, candidate captions and judged pairs with their votes (+1 a, -1 b, 0).

    `included_only`: only the votes every figure counts (ratings.selectors.included_votes: no excluded
    rater, attention check or preview); `campaign`: only that campaign's pairs and votes (a study's own report).
    """
    references: dict[int, list[tuple[int, str]]] = defaultdict(list)
    candidates: dict[int, list[tuple[int, str]]] = defaultdict(list)
    # Corpus captions: an HI pair's copy of another clip's caption is scored through its pair, not as a candidate.
    captions = Caption.objects.corpus().filter(clip__dataset=dataset).order_by("clip_id", "position", "pk")
    for caption_id, clip_id, text, role in captions.values_list("pk", "clip_id", "text", "role"):
        target = references if role == Caption.Role.REFERENCE else candidates
        target[clip_id].append((caption_id, text))

    votes: dict[int, list[int]] = defaultdict(list)
    vote_rows = PairwiseVote.objects.filter(pair__clip__dataset=dataset)
    if campaign is not None:
        vote_rows = vote_rows.filter(campaign=campaign)
    if included_only:
        vote_rows = included_votes(vote_rows)
    vote_rows = vote_rows.order_by("pair_id", "rater_id")
    for pair_id, choice in vote_rows.values_list("pair_id", "choice"):
        votes[pair_id].append({"a": 1, "b": -1}.get(choice, 0))

    pairs: dict[int, list[JudgedPairRow]] = defaultdict(list)
    pair_rows = CaptionPair.objects.filter(clip__dataset=dataset).order_by("clip_id", "source_key", "pk")
    if campaign is not None:
        pair_rows = pair_rows.filter(campaigns=campaign)
    columns = (
        "pk",
        "clip_id",
        "split",
        "caption_a_id",
        "caption_a__text",
        "caption_b_id",
        "caption_b__text",
        "references",
        "gold_choice",
    )
    authors = ("caption_a__author_kind", "caption_a__system__name", "caption_b__author_kind", "caption_b__system__name")
    for pair in pair_rows.values(*columns, *authors):
        pairs[pair["clip_id"]].append(
            JudgedPairRow(
                pair_id=pair["pk"],
                split=pair["split"],
                caption_a_id=pair["caption_a_id"],
                caption_a=pair["caption_a__text"],
                caption_b_id=pair["caption_b_id"],
                caption_b=pair["caption_b__text"],
                votes=votes.get(pair["pk"], []),
                author_a=caption_author(pair["caption_a__author_kind"], pair["caption_a__system__name"]),
                author_b=caption_author(pair["caption_b__author_kind"], pair["caption_b__system__name"]),
                references=list(pair["references"] or []),
                # Only a HALLU pair's answer is known rather than voted (gold QC items are judged by their votes).
                known_answer=(pair["gold_choice"] or None) if pair["split"] == CaptionPair.Split.HALLU else None,
            )
        )

    clip_ids = sorted(set(references) | set(candidates) | set(pairs))
    return [
        ClipRows(
            clip_id=clip_id,
            references=[text for _, text in references[clip_id]],
            reference_ids=[caption_id for caption_id, _ in references[clip_id]],
            candidates=candidates[clip_id],
            pairs=pairs[clip_id],
        )
        for clip_id in clip_ids
    ]


def gold_annotations_by_clip(*, clip_ids: set[int]) -> dict[str, dict]:
    """Gold AudioCaps-F annotations as the scoring code takes them, keyed by str(clip_id):
    {"node": {event: {"source": [...], "attr": [...]}}, "relations": [[event, event, "before" | "after" | "and"]]}
    ("relations" only when the annotation has temporal relations; simultaneous is X-ACE's "and"; then also
    "spans": {event: [[onset, offset], ...]} of the events that have spans)."""
    annotations = (
        ExpertAnnotation.objects.filter(clip_id__in=clip_ids, status=ExpertAnnotation.Status.GOLD)
        .prefetch_related(
            "events__sources",
            "events__attributes",
            "events__spans",
            "relations__first_event",
            "relations__second_event",
        )
        .order_by("clip_id", "pk")
    )
    graphs: dict[str, dict] = {}
    for annotation in annotations:
        if str(annotation.clip_id) in graphs:
            continue
        events = {}
        for event in annotation.events.all():
            events[event.label] = {
                "source": [source.text for source in event.sources.all()],
                "attr": [attribute.text for attribute in event.attributes.all()],
            }
        graph: dict = {"node": events}
        relations = sorted(
            [relation.first_event.label, relation.second_event.label, _RELATION_NAMES[relation.kind]]
            for relation in annotation.relations.all()
        )
        if relations:
            graph["relations"] = relations
            # the spans limit what the relations imply (common.time_relations.relations_derive)
            spans = {
                event.label: [[span.onset_seconds, span.offset_seconds] for span in event.spans.all()]
                for event in annotation.events.all()
            }
            graph["spans"] = {label: event_spans for label, event_spans in spans.items() if event_spans}
        graphs[str(annotation.clip_id)] = graph
    return graphs


_RELATION_NAMES = {
    TemporalRelation.Kind.BEFORE: "before",
    TemporalRelation.Kind.AFTER: "after",
    TemporalRelation.Kind.SIMULTANEOUS: "and",
}


def reference_lists_by_clip(
    *, clip_ids: set[int] | None = None, dataset: Dataset | None = None
) -> dict[str, tuple[str, ...]]:
    """str(clip_id) -> the clip's reference captions in order, for the given clips or every clip of a dataset."""
    rows = Caption.objects.corpus().filter(role=Caption.Role.REFERENCE)
    rows = rows.filter(clip__dataset=dataset) if dataset is not None else rows.filter(clip_id__in=clip_ids or ())
    lists: dict[str, list[str]] = defaultdict(list)
    for clip_id, text in rows.order_by("clip_id", "position", "pk").values_list("clip_id", "text"):
        lists[str(clip_id)].append(text)
    return {clip_key: tuple(texts) for clip_key, texts in lists.items()}


def dataset_texts(*, dataset: Dataset) -> tuple[str, ...]:
    """Every distinct caption text of the dataset (references and candidates, no pair artefacts)."""
    rows = Caption.objects.corpus().filter(clip__dataset=dataset).order_by("pk").values_list("text", flat=True)
    return tuple(dict.fromkeys(rows))


def attribute_tag_library() -> dict[str, dict]:
    return {
        text: {"class": category, "sym": synonym_group, "ant": antonym_groups}
        for text, category, synonym_group, antonym_groups in AttributeTag.objects.values_list(
            "text", "category", "synonym_group", "antonym_groups"
        )
    }

"""Read-only queries over the corpus."""

from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.models import AttributeTag, ExpertAnnotation, TemporalRelation
from annotation.tag_library import TagFacts, tag_facts_read
from annotation.vocabulary import AttributeVocabulary
from corpus.models import Caption, CaptioningSystem, Clip, Dataset


def attribute_vocabulary() -> AttributeVocabulary:
    """The attribute tag library (tags and templates) that attributes are linked to and checked against."""
    return AttributeVocabulary(AttributeTag.objects.order_by("pk").values_list("pk", "text", "template"))


def stored_tag_facts() -> dict[object, TagFacts]:
    """tag id -> its category, synonym group and antonym groups: what the checks call opposites or counts."""
    rows = AttributeTag.objects.values_list("pk", "text", "category", "synonym_group", "antonym_groups")
    return tag_facts_read(rows)


def _count_per_dataset(queryset: QuerySet, dataset_path: str) -> Subquery:
    """Rows of `queryset` per dataset, as a subquery (no row multiplication across several counts)."""
    counted = (
        queryset.filter(**{dataset_path: OuterRef("pk")})
        .order_by()
        .values(dataset_path)
        .annotate(count=Count("pk"))
        .values("count")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def dataset_overview() -> QuerySet[Dataset]:
    """Datasets with clip, audio, caption, expert annotation and caption pair counts (home page, API)."""
    return Dataset.objects.annotate(
        clip_count=_count_per_dataset(Clip.objects.all(), "dataset"),
        clips_with_audio_count=_count_per_dataset(Clip.objects.exclude(audio=""), "dataset"),
        reference_count=_count_per_dataset(
            Caption.objects.corpus().filter(role=Caption.Role.REFERENCE), "clip__dataset"
        ),
        candidate_count=_count_per_dataset(
            Caption.objects.corpus().filter(role=Caption.Role.CANDIDATE), "clip__dataset"
        ),
        expert_annotation_count=_count_per_dataset(ExpertAnnotation.objects.all(), "clip__dataset"),
        # Caption pairs belong to the ratings app; reaching them through the clips' reverse relation
        # keeps this module free of ratings imports.
        pair_count=Coalesce(
            Subquery(
                Clip.objects.filter(dataset=OuterRef("pk"))
                .order_by()
                .values("dataset")
                .annotate(count=Count("pairs"))
                .values("count"),
                output_field=IntegerField(),
            ),
            0,
        ),
    ).order_by("name")


def dataset_corpus_counts(*, dataset: Dataset) -> dict[str, int]:
    """Clip, caption and GOLD expert-annotation counts of one dataset, and its systems' names (corpus captions
    only: not the copies pair generation makes for HI pairs)."""
    # one aggregate query per table (the dataset page reads them on every view)
    clips = (
        Clip.objects.filter(dataset=dataset).order_by().aggregate(n=Count("pk"), audio=Count("pk", filter=~Q(audio="")))
    )
    candidate = Q(role=Caption.Role.CANDIDATE)
    captions = (
        Caption.objects.corpus()
        .filter(clip__dataset=dataset)
        .order_by()
        .aggregate(
            references=Count("pk", filter=Q(role=Caption.Role.REFERENCE)),
            candidates=Count("pk", filter=candidate),
            human=Count("pk", filter=candidate & Q(author_kind=Caption.AuthorKind.HUMAN)),
            machine=Count("pk", filter=candidate & Q(author_kind=Caption.AuthorKind.MACHINE)),
        )
    )
    gold = (
        ExpertAnnotation.objects.filter(clip__dataset=dataset, status=ExpertAnnotation.Status.GOLD)
        .order_by()
        .aggregate(n=Count("pk", distinct=True), events=Count("events"))
    )
    return {
        "clips": clips["n"],
        "clips_with_audio": clips["audio"],
        "reference_captions": captions["references"],
        "candidate_captions": captions["candidates"],
        "expert_annotations": gold["n"],
        "events": gold["events"],
        "human_candidates": captions["human"],
        "machine_candidates": captions["machine"],
        "systems": sorted(
            CaptioningSystem.objects.filter(captions__clip__dataset=dataset).values_list("name", flat=True).distinct()
        ),
    }


def dataset_gold_annotations(*, dataset: Dataset) -> QuerySet[ExpertAnnotation]:
    """GOLD annotations of the dataset in the order they were created, with events, sources, attributes, relations."""
    return _with_graph(
        ExpertAnnotation.objects.filter(clip__dataset=dataset, status=ExpertAnnotation.Status.GOLD)
        .select_related("clip")
        .order_by("pk")
    )


def _with_graph(queryset: QuerySet[ExpertAnnotation]) -> QuerySet[ExpertAnnotation]:
    relations = TemporalRelation.objects.select_related("first_event", "second_event").order_by("pk")
    return queryset.prefetch_related(
        "events__sources", "events__attributes", "events__spans", Prefetch("relations", queryset=relations)
    )


def annotation_as_audiocaps_f(annotation: ExpertAnnotation) -> dict[str, dict]:
    """{event: {"source": [...], "attr": [...]}} in order, plus "relations" ({other event: kind}, this event
    first) and "spans" ([[onset, offset], ...] in seconds) on the events that have them. Use on an annotation
    fetched with its graph (dataset_gold_annotations)."""
    document: dict[str, dict] = {}
    for event in sorted(annotation.events.all(), key=lambda e: e.position):
        node: dict = {
            "source": [source.text for source in sorted(event.sources.all(), key=lambda s: s.position)],
            "attr": [attribute.text for attribute in sorted(event.attributes.all(), key=lambda a: a.position)],
        }
        spans = sorted(event.spans.all(), key=lambda span: span.position)
        if spans:
            node["spans"] = [[span.onset_seconds, span.offset_seconds] for span in spans]
        document[event.label] = node
    for relation in annotation.relations.all():
        document[relation.first_event.label].setdefault("relations", {})[relation.second_event.label] = relation.kind
    return document


def submitted_annotation_documents(*, dataset: Dataset, campaign=None) -> dict[int, dict[str, dict]]:
    """clip id -> annotator username -> their SUBMITTED annotation as annotation_as_audiocaps_f gives it.

    One per annotator and clip (their latest, should they have submitted it in several campaigns);
    `campaign` narrows to one annotation campaign.
    """
    submitted = ExpertAnnotation.objects.filter(clip__dataset=dataset, status=ExpertAnnotation.Status.SUBMITTED)
    if campaign is not None:
        submitted = submitted.filter(campaign=campaign)
    documents: dict[int, dict[str, dict]] = {}
    for annotation in _with_graph(submitted.select_related("annotator").order_by("pk")):
        by_annotator = documents.setdefault(annotation.clip_id, {})
        by_annotator[annotation.annotator.username] = annotation_as_audiocaps_f(annotation)
    return documents


def dataset_clips_named(*, dataset: Dataset, external_ids: list[str]) -> tuple[list[Clip], list[str]]:
    """The dataset's clips with these external ids, in the order first named (repeats once), and the ids it
    lacks (in the order named): what a campaign request's list of clips resolves to."""
    found = {clip.external_id: clip for clip in Clip.objects.filter(dataset=dataset, external_id__in=external_ids)}
    missing = [external_id for external_id in external_ids if external_id not in found]
    return [found[external_id] for external_id in dict.fromkeys(external_ids) if external_id in found], missing

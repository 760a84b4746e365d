"""Read-only queries over the corpus."""
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.models import Caption, CaptioningSystem, Clip, Dataset, ExpertAnnotation, SoundEvent


def dataset_list_with_counts() -> QuerySet[Dataset]:
    return Dataset.objects.annotate(
        clip_count=Count("clips", distinct=True),
        clips_with_audio_count=Count("clips", filter=~Q(clips__audio=""), distinct=True),
        caption_count=Count("clips__captions", distinct=True),
    ).order_by("name")


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
        reference_count=_count_per_dataset(Caption.objects.filter(role=Caption.Role.REFERENCE), "clip__dataset"),
        candidate_count=_count_per_dataset(Caption.objects.filter(role=Caption.Role.CANDIDATE), "clip__dataset"),
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
    """Clip, caption and GOLD expert-annotation counts of one dataset, and its systems' names."""
    clips = Clip.objects.filter(dataset=dataset)
    captions = Caption.objects.filter(clip__dataset=dataset)
    candidates = captions.filter(role=Caption.Role.CANDIDATE)
    gold = ExpertAnnotation.objects.filter(clip__dataset=dataset, status=ExpertAnnotation.Status.GOLD)
    return {
        "clips": clips.count(),
        "clips_with_audio": clips.exclude(audio="").count(),
        "reference_captions": captions.filter(role=Caption.Role.REFERENCE).count(),
        "candidate_captions": captions.filter(role=Caption.Role.CANDIDATE).count(),
        "expert_annotations": gold.count(),
        "events": SoundEvent.objects.filter(annotation__in=gold).count(),
        "human_candidates": candidates.filter(author_kind=Caption.AuthorKind.HUMAN).count(),
        "machine_candidates": candidates.filter(author_kind=Caption.AuthorKind.MACHINE).count(),
        "systems": sorted(
            CaptioningSystem.objects.filter(captions__clip__dataset=dataset).values_list("name", flat=True).distinct()
        ),
    }


def dataset_gold_annotations(*, dataset: Dataset) -> QuerySet[ExpertAnnotation]:
    """GOLD annotations of the dataset in the order they were created, with events, sources and attributes."""
    return (
        ExpertAnnotation.objects.filter(clip__dataset=dataset, status=ExpertAnnotation.Status.GOLD)
        .select_related("clip")
        .prefetch_related("events__sources", "events__attributes")
        .order_by("pk")
    )

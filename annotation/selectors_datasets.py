"""What a dataset's page shows: its counts, clips, captioning systems, and the work done on it.

Rating campaigns and metric runs belong to the apps above this one; they are read through the dataset's
reverse relations (`campaigns`, `metric_runs`), so this module imports neither app.
"""

from django.db.models import Count, Q, QuerySet

from annotation.selectors import dataset_corpus_counts
from corpus.models import Caption, CaptioningSystem, Clip, Dataset, DatasetUpload

RECENT_ROWS = 10


def dataset_clips(*, dataset: Dataset) -> QuerySet[Clip]:
    """The dataset's clips with their reference and candidate counts, in external-id order."""
    corpus = Q(captions__pair_artefact=False)
    return (
        Clip.objects.filter(dataset=dataset)
        .annotate(
            reference_count=Count("captions", filter=corpus & Q(captions__role=Caption.Role.REFERENCE)),
            candidate_count=Count("captions", filter=corpus & Q(captions__role=Caption.Role.CANDIDATE)),
        )
        .order_by("external_id")
    )


def dataset_page_data(*, dataset: Dataset) -> dict:
    """Counts, systems, annotation and rating campaigns, recent metric runs and uploads of one dataset."""
    systems = (
        CaptioningSystem.objects.filter(captions__clip__dataset=dataset, captions__superseded_at__isnull=True)
        .annotate(caption_count=Count("captions", distinct=True))
        .order_by("name")
    )
    return {
        "counts": dataset_corpus_counts(dataset=dataset),
        "systems": list(systems),
        "annotation_campaigns": list(dataset.annotation_campaigns.order_by("name")),
        "rating_campaigns": list(dataset.campaigns.order_by("name")),
        "metric_runs": list(dataset.metric_runs.order_by("-created_at")[:RECENT_ROWS]),
        "submissions": list(dataset.system_submissions.order_by("-created_at")[:RECENT_ROWS]),
        "uploads": list(DatasetUpload.objects.filter(dataset_name=dataset.name).order_by("-created_at")[:RECENT_ROWS]),
    }


def dataset_uploads_recent() -> QuerySet[DatasetUpload]:
    """The latest uploads (the new-dataset page lists them with their state)."""
    return DatasetUpload.objects.select_related("dataset", "uploaded_by").order_by("-created_at")[:RECENT_ROWS]

"""Read-only queries over the corpus."""
from django.db.models import Count, Q, QuerySet

from annotation.models import Dataset


def dataset_list_with_counts() -> QuerySet[Dataset]:
    return Dataset.objects.annotate(
        clip_count=Count("clips", distinct=True),
        clips_with_audio_count=Count("clips", filter=~Q(clips__audio=""), distinct=True),
        caption_count=Count("clips__captions", distinct=True),
    ).order_by("name")

"""Read-only queries over human judgements."""
from django.db.models import Count

from annotation.models import Dataset
from annotation.selectors import dataset_corpus_counts
from ratings.models import CaptionPair, PairwiseVote

# --- Dataset statistics (dataset_stats command) ---------------------------------------------------


def dataset_stats(*, dataset: Dataset) -> dict:
    """The figures of `dataset_stats`, in its output order: corpus counts plus pairs per split and votes."""
    corpus = dataset_corpus_counts(dataset=dataset)
    # order_by() drops the model ordering, which would otherwise split the GROUP BY.
    per_split = {
        row["split"]: row["count"]
        for row in CaptionPair.objects.filter(clip__dataset=dataset).order_by().values("split").annotate(count=Count("pk"))
    }
    return {
        "clips": corpus["clips"],
        "clips_with_audio": corpus["clips_with_audio"],
        "reference_captions": corpus["reference_captions"],
        "candidate_captions": corpus["candidate_captions"],
        "pairs": {split: per_split.get(split, 0) for split in CaptionPair.Split.values},
        "votes": PairwiseVote.objects.filter(pair__clip__dataset=dataset).count(),
        "expert_annotations": corpus["expert_annotations"],
        "events": corpus["events"],
    }

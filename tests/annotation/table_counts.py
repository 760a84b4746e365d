"""Row counts of every table the importers may touch, to prove a second run or a failed run wrote nothing."""

from django.apps import apps


def all_table_counts() -> dict[str, int]:
    counted_apps = ("auth", "corpus", "annotation", "ratings")
    return {
        model._meta.label: model.objects.count()
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label in counted_apps
    }


def all_rows_snapshot() -> dict[str, list]:
    """Every row of the importer tables as tuples (for "nothing changed at all", not just counts)."""
    snapshot = {}
    for label in (
        "corpus.Dataset",
        "corpus.Clip",
        "corpus.Caption",
        "corpus.CaptioningSystem",
        "annotation.ExpertAnnotation",
        "annotation.SoundEvent",
        "annotation.EventSource",
        "annotation.EventAttribute",
        "annotation.EventSpan",
        "ratings.CaptionPair",
        "ratings.PairwiseVote",
    ):
        model = apps.get_model(label)
        snapshot[label] = list(model.objects.order_by("pk").values_list())
    return snapshot

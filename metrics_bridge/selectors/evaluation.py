"""Read-only queries of stored results that the evaluation pages and reports show."""

from corpus.models import Caption, Dataset


def dataset_scored_metric_names(*, dataset: Dataset, versions: dict[str, str]) -> list[str]:
    """Metric names with stored scores for the dataset at their current version (`versions`: name -> version)."""
    from metrics_bridge.models import MetricScore

    stored = set(MetricScore.objects.filter(caption__clip__dataset=dataset).values_list("metric", "version").distinct())
    return [name for name, version in versions.items() if (name, version) in stored]


def caption_scores(*, caption: Caption) -> list:
    """The caption's scores, newest version first, with their reference sets."""
    from metrics_bridge.models import MetricScore

    return list(
        MetricScore.objects.filter(caption=caption).select_related("reference_set").order_by("metric", "-created_at")
    )


def sensitivity_reports(*, dataset: Dataset, limit: int = 10) -> list:
    """The dataset's latest sensitivity reports, newest first."""
    from metrics_bridge.models import SensitivityReport

    reports = SensitivityReport.objects.filter(dataset=dataset).select_related("requested_by").order_by("-created_at")
    return list(reports[:limit])

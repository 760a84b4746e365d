"""What the run page says about a metric run: why it waits, what is being scored, and where its results are."""

from dataclasses import dataclass, field

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.timesince import timesince

from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore, WorkerHeartbeat
from metrics_bridge.scoring import registry
from metrics_bridge.services.runs.workers import worker_last_heard
from ratings.models import Campaign

#: A worker whose heartbeat started less than this ago is still loading the metric code (torch, models).
WORKER_STARTING_SECONDS = 60
#: What a slow-starting scorer does with its first chunk on a worker (registry.starts_slowly), in words.
SLOW_START_NOTES = {
    "METEOR": "METEOR starts its Java runtime with its first chunk on a worker (5-10 s to load its paraphrase "
    "table; kept for later chunks and runs).",
}
OPEN_CHUNK_STATUSES = (MetricRunChunk.Status.PENDING, MetricRunChunk.Status.RUNNING)
SLOW_START_NOTE = "{metric} loads its model with its first chunk on a worker (a few seconds; kept for later chunks)."


@dataclass
class RunActivity:
    """In words: why nothing moves, or what is being scored (empty once the run is over)."""

    waiting: str = ""
    running: list[str] = field(default_factory=list)  # "METEOR chunk 4", ...
    notes: list[str] = field(default_factory=list)


def run_activity(*, run: MetricRun, workers: list[WorkerHeartbeat], eager: bool) -> RunActivity:
    if run.is_finished or eager:
        return RunActivity()
    if not workers:
        return RunActivity(waiting=no_worker_words())
    running = list(run.chunks.filter(status=MetricRunChunk.Status.RUNNING).order_by("index").values("index", "metric"))
    if running:
        activity = RunActivity(running=[f"{chunk['metric']} chunk {chunk['index']}" for chunk in running])
        done_metrics = set(
            run.chunks.filter(status=MetricRunChunk.Status.DONE).values_list("metric", flat=True).distinct()
        )
        for metric in dict.fromkeys(chunk["metric"] for chunk in running):
            if metric not in done_metrics and registry.starts_slowly(registry.scorer_for(metric)):
                activity.notes.append(SLOW_START_NOTES.get(metric, SLOW_START_NOTE.format(metric=metric)))
        if not run.chunks_done:
            activity.notes.append("A worker's first chunk also loads the metric code (10-20 s).")
        return activity
    ahead = (
        MetricRun.objects.filter(status__in=MetricRun.ACTIVE_STATUSES, created_at__lt=run.created_at)
        .annotate(open=Count("chunks", filter=Q(chunks__status__in=OPEN_CHUNK_STATUSES)))
        .filter(open__gt=0)
        .order_by("created_at")
        .values_list("pk", "open")
    )
    if ahead:
        runs = ", ".join(f"#{pk} ({left} chunk{'s' if left != 1 else ''} left)" for pk, left in ahead)
        return RunActivity(waiting=f"Queued behind run {runs}: the workers score runs in the order they started.")
    newest = max(worker.started_at for worker in workers)
    if (timezone.now() - newest).total_seconds() < WORKER_STARTING_SECONDS:
        return RunActivity(
            waiting="A worker has just started: it loads the metric code before it takes a chunk (10-20 s)."
        )
    return RunActivity(waiting="Waiting for a worker to take the first chunk.")


def no_worker_words() -> str:
    """Why a run waits with no live worker; names the worker that stopped sending heartbeats and since when."""
    waits = (
        "the run waits until one starts (./scripts/run starts one, and again when it exits; "
        "or `celery -A config worker`)."
    )
    last = worker_last_heard()
    if last is None:
        return f"No worker is available: {waits}"
    return (
        f"No worker is available: the last one ({last.name}) stopped sending heartbeats "
        f"{timesince(last.last_seen)} ago (it exited or hangs); {waits}"
    )


def run_result_links(*, run: MetricRun) -> list[tuple[str, str, tuple]]:
    """(label, URL name, URL arguments) of the pages that show the run's results."""
    links = [
        ("Leaderboard", "metrics_bridge:leaderboard", (run.dataset_id,)),
        ("Agreement table", "metrics_bridge:dataset_agreement", (run.dataset_id,)),
    ]
    campaigns = Campaign.objects.filter(dataset_id=run.dataset_id, task_type=Campaign.TaskType.THUMBS).order_by("name")
    for pk, name in campaigns.values_list("pk", "name"):
        links.append((f"THumBS report: {name}", "metrics_bridge:thumbs_dashboard", (pk,)))
    return links


def run_example_captions(*, run: MetricRun, per_end: int = 4) -> list[dict]:
    """The captions the run scored highest and lowest by its first metric (against all references), for links."""
    if not run.metrics:
        return []
    scores = MetricScore.objects.filter(run=run, metric=run.metrics[0], value__isnull=False, reference_set__context="")
    columns = ("caption_id", "value", "caption__text", "caption__system__name")
    top = list(scores.order_by("-value", "caption_id").values_list(*columns)[:per_end])
    bottom = list(scores.order_by("value", "caption_id").values_list(*columns)[:per_end])
    rows, seen = [], set()
    for caption_id, value, text, system in top + bottom[::-1]:
        if caption_id in seen:
            continue
        seen.add(caption_id)
        rows.append({"caption_id": caption_id, "value": value, "text": text, "author": system or "human"})
    return rows


def run_live_parts(*, run: MetricRun, activity: RunActivity) -> list:
    """What the run page shows that changes while the run goes on (its live version is made of these)."""
    return [run.status, run.chunks_done, run.chunks_failed, run.chunks_total, activity.waiting, activity.running]

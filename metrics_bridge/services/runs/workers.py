"""Worker heartbeats and what the dashboards and /healthz say about the workers and their queue.

A worker writes its heartbeat row every METRICS_WORKER_HEARTBEAT_SECONDS (metrics_bridge.tasks);
it counts as alive while the row is younger than three periods. Rows name the broker the worker
listens to, so only workers that would receive this process's tasks count.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from metrics_bridge.models import MetricRun, MetricRunChunk, WorkerHeartbeat

ALIVE_PERIODS = 3


def alive_after() -> datetime:
    return timezone.now() - timedelta(seconds=ALIVE_PERIODS * settings.METRICS_WORKER_HEARTBEAT_SECONDS)


def worker_heartbeat_beat(*, name: str, pid: int, broker: str, started_at: datetime) -> None:
    WorkerHeartbeat.objects.update_or_create(
        name=name, defaults={"pid": pid, "broker": broker, "started_at": started_at, "last_seen": timezone.now()}
    )


def worker_heartbeat_remove(*, name: str) -> None:
    WorkerHeartbeat.objects.filter(name=name).delete()


def worker_has_running_chunk(*, name: str) -> bool:
    """Whether a chunk is being scored by the worker called `name` (chunks record "<name> pid <pid>")."""
    return MetricRunChunk.objects.filter(
        status=MetricRunChunk.Status.RUNNING, claimed_by__startswith=f"{name} "
    ).exists()


def live_workers(*, broker: str) -> list[WorkerHeartbeat]:
    return list(WorkerHeartbeat.objects.filter(broker=broker, last_seen__gte=alive_after()).order_by("name"))


def workers_last_seen(*, names: list[str]) -> dict[str, datetime]:
    """When each of these workers sent its last heartbeat (a worker that shut down cleanly has none)."""
    return dict(WorkerHeartbeat.objects.filter(name__in=names).values_list("name", "last_seen"))


def worker_last_heard() -> WorkerHeartbeat | None:
    """The worker heard from last, alive or not (a killed worker's row stays; a clean shutdown removes it)."""
    return WorkerHeartbeat.objects.order_by("-last_seen").first()


@dataclass
class ChunkQueue:
    queued: int  # pending chunks of active runs
    running: int  # claimed, lease still valid
    stalled: int  # claimed, lease expired: the worker died or hung; the next sweep re-sends or fails them
    failed: int  # failed for good (all runs)


def chunk_queue_counts() -> ChunkQueue:
    now = timezone.now()
    chunk_status = MetricRunChunk.Status
    counts = MetricRunChunk.objects.aggregate(
        queued=Count("pk", filter=Q(status=chunk_status.PENDING, run__status__in=MetricRun.ACTIVE_STATUSES)),
        running=Count("pk", filter=Q(status=chunk_status.RUNNING, lease_expires_at__gte=now)),
        stalled=Count("pk", filter=Q(status=chunk_status.RUNNING) & ~Q(lease_expires_at__gte=now)),
        failed=Count("pk", filter=Q(status=chunk_status.FAILED)),
    )
    return ChunkQueue(**counts)

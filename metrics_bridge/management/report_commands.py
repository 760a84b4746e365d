"""What the report commands (leaderboard, thumbs_report) share: the --metrics option and building a report
whose missing scores are computed first by the workers (a temporary one when none is alive), with progress
on stderr."""

from django.core.management.base import CommandError

from metrics_bridge.worker_process import WorkerOnDemand


def metric_names_option(value: str | None) -> list[str] | None:
    """ "BLEU_4, METEOR" -> ["BLEU_4", "METEOR"]; nothing given -> None (every available metric)."""
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


def report_with_progress(command, build, **arguments) -> dict:
    """build(**arguments, enqueue=..., watchdog=..., on_progress=...) with chunk progress on the command's
    stderr; bad input or a worker that died -> CommandError."""
    try:
        with WorkerOnDemand(say=command.stderr.write) as enqueue:
            return build(
                **arguments,
                enqueue=enqueue,
                watchdog=enqueue.check_alive,
                on_progress=lambda run: command.stderr.write(
                    f"computing missing scores: {run.chunks_done}/{run.chunks_total}"
                ),
            )
    except (ValueError, RuntimeError) as error:
        raise CommandError(str(error)) from None

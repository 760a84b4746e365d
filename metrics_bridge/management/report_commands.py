"""What the report commands (agreement_report, leaderboard, thumbs_report, compute_metrics) share: the --metrics
option, building a report whose missing scores are computed first by the workers (a temporary one when none is
alive) with progress on stderr, and the rule that a command never prints a report lacking a requested metric:
it exits non-zero naming every metric it could not compute, and why."""

from django.core.management.base import CommandError

from metrics_bridge.services.runs.runs import MetricsMissingError
from metrics_bridge.worker_process import WorkerOnDemand

#: Why the worker side could not finish: the temporary worker died or did not start in time (RuntimeError), the
#: run did not end within its deadline (TimeoutError).
RUN_FAILURES = (RuntimeError, TimeoutError)


def metric_names_option(value: str | None) -> list[str] | None:
    """ "BLEU_4, METEOR" -> ["BLEU_4", "METEOR"]; nothing given -> None (every available metric)."""
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


def not_computed_error(metric_names: list[str] | None, error: Exception) -> CommandError:
    """The CommandError for a report or run that could not deliver what was asked: it names every metric."""
    if isinstance(error, MetricsMissingError):
        return CommandError(
            f"{error}. No report was printed. Scores computed so far are stored: run the command again to compute "
            "only what is missing."
        )
    if isinstance(error, RUN_FAILURES):
        asked = ", ".join(metric_names) if metric_names else "the available metrics"
        return CommandError(f"could not compute {asked}: {error}")
    return CommandError(str(error))  # bad input (unknown metric, dataset without pairs, ...)


def report_with_progress(command, build, **arguments) -> dict:
    """build(**arguments, enqueue=..., watchdog=..., on_progress=...) with chunk progress on the command's
    stderr; bad input, a worker that died or did not start, a requested metric missing -> CommandError."""
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
    except (ValueError, *RUN_FAILURES) as error:
        raise not_computed_error(arguments.get("metric_names"), error) from None

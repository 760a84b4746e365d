from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from metrics_bridge.management.checks import check_for_computing
from metrics_bridge.management.report_commands import RUN_FAILURES, not_computed_error
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from metrics_bridge.services.runs.runs import (
    MetricsMissingError,
    metric_run_dispatch,
    metrics_missing_check,
    metrics_not_computed,
)
from metrics_bridge.tasks.runs import enqueue_chunks, execute_metric_run
from metrics_bridge.worker_process import WorkerOnDemand


class Command(BaseCommand):
    help = (
        "Compute automatic metrics for a dataset (default: every metric that can run here): caption scores for the "
        "agreement table, THumBS correlations and caption pages, and system scores for the leaderboard, as one run. "
        "The chunks go to the Celery workers; with --wait the command follows the run, and starts a temporary "
        "worker when none is alive."
    )

    # System checks run in handle() (metrics_bridge/management/checks.py): with --wait, after the temporary
    # worker is started, so that it boots (and METEOR's JVM loads) while they run.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--metrics", help="Comma-separated metric names, e.g. BLEU_4,METEOR,SBERT")
        parser.add_argument("--wait", action="store_true", help="Wait for the run and print its progress")

    def handle(self, *args, dataset: str, metrics: str | None, wait: bool, **options):
        try:
            dataset_row = Dataset.objects.get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        metric_names = [name.strip() for name in metrics.split(",") if name.strip()] if metrics else None
        if not wait:
            check_for_computing(self)
            run = self._create(dataset_row, metric_names)
            metric_run_dispatch(run=run, enqueue=enqueue_chunks)
            self.stdout.write("queued for the workers; follow it on /metrics/ or with the API")
            # Queued what can run; a metric named on the command line that cannot run here is an error.
            metrics_missing_check_or_exit(requested=metric_names or [], delivered=run.metrics, reasons=run.unavailable)
            return
        known = registry.all_metric_names()
        unknown = sorted(set(metric_names or ()) - set(known))
        if unknown:  # before a worker is started for nothing; dataset_run_create says the same
            raise CommandError(f"unknown metric(s): {', '.join(unknown)} (known: {', '.join(known)})")
        warm_up = metric_names or known
        run = None
        try:
            with WorkerOnDemand(say=self.stdout.write, warm_up=warm_up) as enqueue:
                # The temporary worker (if one is needed) boots and starts METEOR's JVM while the run is planned.
                enqueue.ensure_worker()
                check_for_computing(self)
                run = self._create(dataset_row, metric_names, slow_resources_loading=enqueue.started_worker)
                run = execute_metric_run(
                    run=run, enqueue=enqueue, watchdog=enqueue.check_alive, on_progress=self._progress
                )
        except RUN_FAILURES as error:
            asked = metric_names or (run.metrics if run else None)
            where = RuntimeError(f"metric run {run.pk}: {error}") if run else error
            raise not_computed_error(asked, where) from None
        # Every metric asked for (by default: every one that can run here) has its scores, or the command fails
        # naming those that have not, and why (unavailable here, a chunk failed, the run ended early).
        reasons = {**run.unavailable, **metrics_not_computed(run)}
        requested = metric_names or run.metrics
        metrics_missing_check_or_exit(
            requested=requested, delivered=[name for name in requested if name not in reasons], reasons=reasons
        )
        self.stdout.write(f"metric run {run.pk} done: {run.chunks_done}/{run.chunks_total} chunks")

    def _create(
        self, dataset_row: Dataset, metric_names: list[str] | None, *, slow_resources_loading: bool = False
    ) -> MetricRun:
        try:
            run = dataset_run_create(
                dataset=dataset_row, metric_names=metric_names, slow_resources_loading=slow_resources_loading
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        for name, reason in run.unavailable.items():
            self.stderr.write(f"unavailable: {name}: {reason}")
        self.stdout.write(
            f"metric run {run.pk}: {', '.join(run.metrics) or 'nothing to compute'}; "
            f"{run.chunks_total} chunk(s) to score"
        )
        return run

    def _progress(self, run: MetricRun) -> None:
        failed = f", {run.chunks_failed} failed" if run.chunks_failed else ""
        self.stdout.write(f"progress {run.chunks_done}/{run.chunks_total}{failed}")


def metrics_missing_check_or_exit(*, requested, delivered, reasons) -> None:
    try:
        metrics_missing_check(requested=requested, delivered=delivered, reasons=reasons)
    except MetricsMissingError as error:
        raise CommandError(str(error)) from None

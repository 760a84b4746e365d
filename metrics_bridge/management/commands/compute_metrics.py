from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from metrics_bridge.models import MetricRun
from metrics_bridge.services.runs import metric_run_create, metric_run_dispatch, metric_run_execute


class Command(BaseCommand):
    help = "Compute automatic metrics for a dataset (default: every metric that can run here)."

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
        try:
            run = metric_run_create(dataset=dataset_row, metric_names=metric_names)
        except ValueError as error:
            raise CommandError(str(error)) from None
        for name, reason in run.unavailable.items():
            self.stderr.write(f"unavailable: {name}: {reason}")
        self.stdout.write(f"metric run {run.pk}: {', '.join(run.metrics) or 'nothing to compute'}; {run.chunks_total} chunk(s) to score")
        if not wait:
            metric_run_dispatch(run=run)
            self.stdout.write("queued; follow it with the API or the admin")
            return
        run = metric_run_execute(run=run, on_progress=lambda r: self.stdout.write(f"progress {r.chunks_done}/{r.chunks_total}"))
        if run.status != MetricRun.Status.DONE:
            raise CommandError(f"metric run {run.pk} ended {run.status}: {run.error}")
        self.stdout.write(f"metric run {run.pk} done: {run.chunks_done}/{run.chunks_total} chunks")

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from metrics_bridge.services.agreement import SPLITS, agreement_report_build
from metrics_bridge.worker_process import WorkerOnDemand


class Command(BaseCommand):
    help = "Pairwise agreement (HC/HI/HM/MM) of automatic metrics with human judgements; computes missing scores first."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--metrics", help="Comma-separated metric names (default: every available metric)")

    def handle(self, *args, dataset: str, format: str, metrics: str | None, **options):
        try:
            dataset_row = Dataset.objects.get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        metric_names = [name.strip() for name in metrics.split(",") if name.strip()] if metrics else None
        try:
            with WorkerOnDemand(say=self.stderr.write) as enqueue:
                report = agreement_report_build(
                    dataset=dataset_row,
                    metric_names=metric_names,
                    enqueue=enqueue,
                    watchdog=enqueue.check_alive,
                    on_progress=lambda run: self.stderr.write(
                        f"computing missing scores: {run.chunks_done}/{run.chunks_total}"
                    ),
                )
        except (ValueError, RuntimeError) as error:
            raise CommandError(str(error)) from None
        if format == "json":
            self.stdout.write(json.dumps(report))
        else:
            self.stdout.write(render_table(report))


def render_table(report: dict) -> str:
    """The table; the last column counts the captions of the judged pairs scored against gold annotation graphs."""
    columns = [*SPLITS, "total"]
    pairs = report["pairs"]
    graphs = report.get("scored_against_annotation_graphs", {})
    width = max([len("metric"), *(len(name) for name in report["metrics"])]) + 2
    lines = [f"Agreement with human judgements on {report['dataset']} (% of pairs with non-zero human truth)"]
    lines.append("metric".ljust(width) + "".join(f"{column:>8}" for column in columns) + f"{'on graphs':>11}")
    lines.append("pairs".ljust(width) + "".join(f"{pairs[column]:>8}" for column in columns))
    for name, row in report["metrics"].items():
        cells = "".join(f"{row[column]:>8.1f}" if row.get(column) is not None else f"{'-':>8}" for column in columns)
        lines.append(name.ljust(width) + cells + f"{graphs.get(name, 0):>11}")
    for name, reason in report.get("unavailable", {}).items():
        lines.append(f"unavailable: {name}: {reason}")
    return "\n".join(lines)

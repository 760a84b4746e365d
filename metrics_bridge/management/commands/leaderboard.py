import json

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from metrics_bridge.exports import leaderboard_csv
from metrics_bridge.management.report_commands import metric_names_option, report_with_progress
from metrics_bridge.services.evaluation.leaderboard import leaderboard_build


class Command(BaseCommand):
    help = (
        "Leaderboard of a dataset's captioning systems: system-level metric values, human pairwise win rate, THumBS "
        "mean and Kendall tau-b of each metric against the win rates. Missing scores are computed first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--metrics", help="Comma-separated metric names (default: every available metric)")
        parser.add_argument("--format", choices=["json", "csv", "table"], default="table")

    def handle(self, *args, dataset: str, metrics: str | None, format: str, **options):  # noqa: A002
        dataset_row = Dataset.objects.filter(name=dataset).first()
        if dataset_row is None:
            raise CommandError(f'dataset "{dataset}" does not exist')
        report = report_with_progress(
            self, leaderboard_build, dataset=dataset_row, metric_names=metric_names_option(metrics)
        )
        if format == "json":
            self.stdout.write(json.dumps(report))
        elif format == "csv":
            self.stdout.write(leaderboard_csv(report), ending="")
        else:
            self.stdout.write(leaderboard_text(report))


def leaderboard_text(report: dict) -> str:
    metrics = list(report["rank_agreement"])
    width = max([len("system"), *(len(row["system"]) for row in report["systems"])]) + 2
    columns = [*metrics, "win rate", "votes", "THumBS", "ratings"]
    lines = [f"Leaderboard of {report['dataset']} ({len(report['systems'])} systems)"]
    lines.append("system".ljust(width) + f"{'captions':>9}" + "".join(f"{c:>10}" for c in columns))
    for row in sorted(report["systems"], key=lambda r: -(r["human"]["pairwise_win_rate"] or -1)):
        human = row["human"]
        cells = [*(row["metrics"][m] for m in metrics), human["pairwise_win_rate"], human["pairwise_votes"]]
        cells += [human["thumbs_overall"], human["thumbs_ratings"]]
        lines.append(row["system"].ljust(width) + f"{row['captions']:>9}" + "".join(_fixed(v) for v in cells))
    taus = [report["rank_agreement"][m]["kendall_tau"] for m in metrics]
    lines.append("Kendall tau-b".ljust(width) + " " * 9 + "".join(_fixed(v) for v in taus))
    for name, reason in report.get("unavailable", {}).items():
        lines.append(f"unavailable: {name}: {reason}")
    return "\n".join(lines)


def _fixed(value) -> str:
    if value is None:
        return f"{'-':>10}"
    if isinstance(value, int):
        return f"{value:>10}"
    return f"{value:>10.4f}"

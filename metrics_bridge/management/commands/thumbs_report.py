import json
import math

from django.core.management.base import BaseCommand, CommandError

from metrics_bridge.management.report_commands import metric_names_option, report_with_progress
from metrics_bridge.services.evaluation.thumbs_report import thumbs_report_build
from ratings.models import Campaign


class Command(BaseCommand):
    help = (
        "THumBS report of a campaign: completion per rater, Krippendorff's alpha per field, ICC(2,k) of overall, "
        "metric correlations (caption and system level, 95% bootstrap CIs), per-rater bias. "
        "Missing scores are computed first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--metrics", help="Comma-separated metric names (default: every available metric)")
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, campaign: str, metrics: str | None, format: str, **options):  # noqa: A002
        found = Campaign.objects.filter(name=campaign).select_related("dataset").first()
        if found is None:
            raise CommandError(f'campaign "{campaign}" does not exist')
        if found.task_type != Campaign.TaskType.THUMBS:
            raise CommandError(f'campaign "{campaign}" is a {found.get_task_type_display()} campaign, not THumBS')
        report = report_with_progress(
            self, thumbs_report_build, campaign=found, metric_names=metric_names_option(metrics)
        )
        if format == "json":
            self.stdout.write(json.dumps(_json_safe(report)))
        else:
            self.stdout.write(thumbs_report_text(report))


def _json_safe(value):
    """NaN (an undefined statistic) becomes null, so the output is valid JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    return value


def _number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def thumbs_report_text(report: dict) -> str:
    lines = [
        f"THumBS report: campaign {report['campaign']} on {report['dataset']}: "
        f"{report['ratings']} ratings of {report['captions']} captions"
    ]
    lines.append("Completion")
    for row in report["completion"]:
        note = " (excluded)" if row["excluded"] else ""
        done = f"{row['completed']:>5}/{row['items']:<5} {_number(row['percent'], 1):>6}%"
        lines.append(f"  {row['rater']:<20} {done}  {row['ratings']} ratings{note}")
    lines.append("Inter-rater agreement (Krippendorff's alpha, interval)")
    for field, alpha in report["agreement"]["krippendorff_alpha"].items():
        lines.append(f"  {field:<12} {_number(alpha)}")
    icc = report["agreement"]["icc2k_overall"]
    lines.append(f"  ICC(2,k) overall {_number(icc['value'])} ({icc['items']} items x {icc['raters']} raters)")
    lines.append("Correlation with THumBS overall (value [95% CI], n)")
    for metric, levels in report["correlations"].items():
        for level, fields in levels.items():
            cells = [
                f"{method} {_number(c['value'])} [{_number(c['ci_low'])}, {_number(c['ci_high'])}]"
                for method, c in fields["overall"].items()
            ]
            n = next(iter(fields["overall"].values()))["n"]
            lines.append(f"  {metric:<10} {level:<7} n={n:<5} " + "  ".join(cells))
    lines.append("Rater bias (mean difference from the other raters)")
    for row in report["rater_bias"]:
        fields = "  ".join(f"{field} {_number(row[field])}" for field in ("overall", "precision", "recall"))
        lines.append(f"  {row['rater']:<20} {fields}  ({row['items']} items)")
    for name, reason in report.get("unavailable", {}).items():
        lines.append(f"unavailable: {name}: {reason}")
    return "\n".join(lines)

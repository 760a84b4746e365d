import json

from django.core.management.base import BaseCommand, CommandError

from metrics_bridge.exports import benchmark_csv, published_records
from metrics_bridge.management.arguments import dataset_named, metric_names_from
from metrics_bridge.management.checks import check_for_computing
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.benchmark import benchmark_datasets, benchmark_table_for_command
from metrics_bridge.services.runs.runs import metric_run_create, metric_run_execute
from metrics_bridge.worker_process import WorkerOnDemand


class Command(BaseCommand):
    help = (
        "Every metric on every human-judgement dataset in the database (FENSE-layout, BRACE-layout and the "
        "platform's own studies), each under its protocol, with the published records beside ours; CALIBRATED "
        "held out (cross-validated, and trained on the other datasets). Computes missing scores first."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["table", "json", "csv"], default="table")
        parser.add_argument("--datasets", help="Comma-separated dataset names (default: every dataset with pairs)")
        parser.add_argument("--metrics", help="Comma-separated metric names (default: every available metric)")
        parser.add_argument(
            "--stored-only", action="store_true", help="Compute nothing: show the metrics whose scores are stored"
        )

    def handle(self, *args, format: str, datasets: str | None, metrics: str | None, stored_only: bool, **options):
        names = [name.strip() for name in (datasets or "").split(",") if name.strip()]
        dataset_rows = [dataset_named(name) for name in names] if names else benchmark_datasets()
        if not dataset_rows:
            raise CommandError("no dataset has judged pairs: import some with import_pairwise_judgements")
        metric_names = metric_names_from(metrics)
        unknown = [name for name in metric_names or [] if name not in registry.all_metric_names()]
        if unknown:
            raise CommandError(f"unknown metric(s): {', '.join(unknown)}")
        failures = {}
        if not stored_only:
            with WorkerOnDemand(say=self.stderr.write, warm_up=metric_names or registry.all_metric_names()) as enqueue:
                enqueue.ensure_worker()
                check_for_computing(self)
                for dataset in dataset_rows:
                    run = metric_run_create(
                        dataset=dataset,
                        metric_names=metric_names,
                        protocol_only=True,
                        slow_resources_loading=enqueue.started_worker,
                    )
                    run = metric_run_execute(
                        run=run,
                        enqueue=enqueue,
                        watchdog=enqueue.check_alive,
                        on_progress=lambda run, name=dataset.name: self.stderr.write(
                            f"{name}: computing missing scores {run.chunks_done}/{run.chunks_total}"
                        ),
                    )
                    if run.status != MetricRun.Status.DONE:
                        failures[dataset.name] = f"metric run {run.pk}: {run.error}"
        # every dataset and metric: the page's table, stored for it (the page never recomputes what was just built)
        table = benchmark_table_for_command(datasets=dataset_rows if names else None, metric_names=metric_names)
        if failures:
            table["failed_runs"] = failures
        if format == "json":
            self.stdout.write(json.dumps(table))
        elif format == "csv":
            self.stdout.write(benchmark_csv(table), ending="")
        else:
            self.stdout.write(render_table(table))


def _ours(cell: dict | None):
    return (cell or {}).get("ours", {}).get("total")


def render_table(table: dict) -> str:
    """Total agreement per metric (rows) and dataset (columns); a published record in brackets beside ours."""
    datasets = table["datasets"]
    rows = [*table["metrics"], *table["records_only"]]
    width = max([len("metric"), *(len(name) for name in rows)]) + 2
    column = max([16, *(len(d["name"]) + 2 for d in datasets)])
    lines = [
        "Agreement with people (total, %) of every metric on every human-judgement dataset; [published]; "
        "95 % bootstrap intervals over clips in the json/csv formats"
    ]
    lines += _lead_lines(datasets)
    lines.append("metric".ljust(width) + "".join(d["name"].rjust(column) for d in datasets))
    lines.append("protocol".ljust(width) + "".join(d["protocol"].rjust(column) for d in datasets))
    lines.append("pairs".ljust(width) + "".join(str(d["pairs"]["total"]).rjust(column) for d in datasets))
    for name in rows:
        cells = []
        for dataset in datasets:
            cell = table["cells"].get(name, {}).get(dataset["name"])
            ours = _ours(cell)
            text = "-" if ours is None else f"{ours:.{2 if dataset['protocol'] == 'brace' else 1}f}"
            published = [record["figures"].get("total") for record in published_records(cell)]
            if published:
                text += " [" + ",".join(f"{value}" for value in published) + "]"
            cells.append(text.rjust(column))
        lines.append(name.ljust(width) + "".join(cells))
    lines.append("")
    for dataset in datasets:
        extra = f", unscorable {dataset['pairs'].get('unscorable', 0)}" if dataset["protocol"] == "brace" else ""
        benchmark = f" = {dataset['benchmark_title']}" if dataset["benchmark_title"] else ""
        lines.append(f"{dataset['name']}{benchmark}: {dataset['layout']} layout, {dataset['protocol']} protocol{extra}")
    sources = {
        (name, record["metric"], record["source"])
        for name in rows
        for cell in table["cells"].get(name, {}).values()
        for record in published_records(cell)
    }
    for name, metric, source in sorted(sources):
        lines.append(f"[published] {metric} (row {name}): {source}")
    for dataset in datasets:
        if dataset.get("small"):
            lines.append(
                f"small set: {dataset['name']} has {dataset['pairs']['total']} counted pairs (under "
                f"{table.get('small_set_pairs')}): its figures move by several points from pair to pair"
            )
        if dataset.get("not_the_benchmark_named"):
            lines.append(
                f"{dataset['name']} is named like {dataset['not_the_benchmark_named']} but does not hold its judged "
                "pairs: its published records are not shown beside it"
            )
        if dataset.get("detector_note"):
            lines.append(f"note on {dataset['name']}: {dataset['detector_note']}")
    for dataset_name, cell in table["cells"].get("CALIBRATED (trained elsewhere)", {}).items():
        calibration = cell.get("calibration") or {}
        for source, what in calibration.get("left_out_sources", {}).items():
            lines.append(f"trained elsewhere on {dataset_name}: left out {source} (shares {what})")
        for source, left_out in calibration.get("left_out_pairs", {}).items():
            lines.append(
                f"trained elsewhere on {dataset_name}: {left_out['pairs']} pairs of {source} left out of the fit "
                f"(they hold one of the {left_out['shared_texts']} caption texts {source} shares with {dataset_name})"
            )
    for benchmark in table.get("unmatched_benchmarks", []):
        lines.append(f"[published] {benchmark['title']}: not shown, {benchmark['why']}")
    for label, reasons in table.get("unavailable", {}).items():
        for dataset, reason in reasons.items():
            lines.append(f"unavailable: {label} on {dataset}: {reason}")
    for dataset, reason in table.get("failed_runs", {}).items():
        lines.append(f"failed: scores of {dataset}: {reason}")
    return "\n".join(lines)


def _figure(figure: dict, digits: int) -> str:
    low, high = figure.get("interval") or (None, None)
    spread = f" [{low:.1f}-{high:.1f}]" if low is not None else ""
    return f"{figure['total']:.{digits}f}{spread} n={figure['pairs']}"


def _lead_lines(datasets: list[dict]) -> list[str]:
    """What the table leads with, per dataset: CALIBRATED trained elsewhere, in-study beside it, the best single
    metric (totals with 95 % intervals over clips)."""
    lines = []
    for dataset in datasets:
        lead = dataset.get("headline")
        if not lead:
            continue
        digits = 2 if dataset["protocol"] == "brace" else 1
        elsewhere, in_study = lead["trained_elsewhere"], lead["in_study"]
        text = f"{dataset['name']}: CALIBRATED trained elsewhere "
        text += _figure(elsewhere, digits) if "total" in elsewhere else f"not measured ({elsewhere['unavailable']})"
        text += "; in-study (fitted on this study's own judgements) "
        text += _figure(in_study, digits) if "total" in in_study else f"not fitted ({in_study['unavailable']})"
        if lead.get("best_single"):
            text += f"; best single {lead['best_single_name']} {_figure(lead['best_single'], digits)}"
        lines.append(text)
    return [*lines, ""] if lines else []

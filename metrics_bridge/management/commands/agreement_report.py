import json

from django.core.management.base import BaseCommand, CommandError

from metrics_bridge.management.arguments import dataset_named, metric_names_from
from metrics_bridge.management.checks import check_for_computing
from metrics_bridge.management.report_commands import RUN_FAILURES, not_computed_error
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.agreement import report_columns
from metrics_bridge.services.evaluation.calibration import dataset_detector_note, disjoint_sources
from metrics_bridge.services.evaluation.transfer import agreement_report_led
from metrics_bridge.worker_process import WorkerOnDemand


class Command(BaseCommand):
    help = (
        "Pairwise agreement of automatic metrics with human judgements under the dataset's protocol (FENSE: "
        "HC/HI/HM/MM; BRACE: HC/HM/MM or HALLU with F1); computes missing scores first."
    )

    # System checks run in handle() (metrics_bridge/management/checks.py), after a temporary worker (if one is
    # needed) is started: it boots and loads the slow resources (METEOR's JVM, the Sentence-BERT model) meanwhile.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument(
            "--metrics",
            help="Comma-separated metric names (default: every available metric and CALIBRATED); "
            "CALIBRATED adds the learned metric, held out, with the other listed metrics as its features",
        )
        parser.add_argument(
            "--calibrate-on",
            dest="calibrate_on",
            help="Fit CALIBRATED on every pair of these datasets (comma-separated, any layout) and evaluate it on "
            "--dataset (transfer)",
        )

    def handle(self, *args, dataset: str, format: str, metrics: str | None, calibrate_on: str | None = None, **options):
        dataset_row = dataset_named(dataset)
        training_datasets = [dataset_named(name.strip()) for name in (calibrate_on or "").split(",") if name.strip()]
        if any(training.pk == dataset_row.pk for training in training_datasets):
            raise CommandError(
                "--calibrate-on must name another dataset (on the same one, CALIBRATED is cross-validated)"
            )
        if len({training.pk for training in training_datasets}) != len(training_datasets):
            raise CommandError("--calibrate-on names a dataset twice")
        # by content, before anything is computed: a source holding the evaluated clips or pairs is no "elsewhere"
        _usable, overlapping = disjoint_sources(dataset=dataset_row, candidates=training_datasets)
        if overlapping:
            raise CommandError(
                "--calibrate-on: "
                + "; ".join(f"{name} shares {what} with {dataset_row.name}" for name, what in overlapping.items())
                + ". A model fitted on it would have seen the data it is evaluated on: name datasets with other "
                "recordings and pairs (docs/metrics.md, the overlap rule)."
            )
        metric_names = metric_names_from(metrics)
        try:
            with WorkerOnDemand(say=self.stderr.write, warm_up=metric_names or registry.all_metric_names()) as enqueue:
                enqueue.ensure_worker()
                check_for_computing(self)
                # led by CALIBRATED trained elsewhere, the in-study figure beside it (services/evaluation/transfer.py)
                report = agreement_report_led(
                    dataset=dataset_row,
                    metric_names=metric_names,
                    calibrate_on=training_datasets or None,
                    enqueue=enqueue,
                    slow_resources_loading=enqueue.started_worker,
                    watchdog=enqueue.check_alive,
                    on_progress=lambda run: self.stderr.write(
                        f"computing missing scores: {run.chunks_done}/{run.chunks_total}"
                    ),
                )
        except (ValueError, *RUN_FAILURES) as error:
            raise not_computed_error(metric_names, error) from None
        note = dataset_detector_note(dataset=dataset_row)
        if note:
            report["notes"] = [*report.get("notes", []), note]
        if format == "json":
            self.stdout.write(json.dumps(report))
        else:
            self.stdout.write(render_table(report))


def render_table(report: dict) -> str:
    """The table; the last column counts the captions of the judged pairs scored against gold annotation graphs."""
    columns = report_columns(report)
    brace = report.get("protocol") == "brace"
    digits = 2 if brace else 1
    pairs = report["pairs"]
    graphs = report.get("scored_against_annotation_graphs", {})
    width = max([len("metric"), *(len(name) for name in report["metrics"])]) + 2
    if brace:
        lines = [
            f"Agreement with human judgements on {report['dataset']} (BRACE protocol: % of pairs where the metric "
            f"picks the caption people preferred; F1 with caption_1 preferred as positive). "
            f"Unscorable pairs (no reference left): {pairs.get('unscorable', 0)}; ties left out: {pairs.get('ties', 0)}"
        ]
    else:
        lines = [f"Agreement with human judgements on {report['dataset']} (% of pairs with non-zero human truth)"]
    if report.get("headline"):
        lines += headline_lines(report["headline"], digits)
    lines.append("metric".ljust(width) + "".join(f"{column:>8}" for column in columns) + f"{'on graphs':>11}")
    lines.append("pairs".ljust(width) + "".join(f"{pairs.get(column, ''):>8}" for column in columns))
    for name, row in report["metrics"].items():
        cells = "".join(
            f"{row[column]:>8.{digits}f}" if row.get(column) is not None else f"{'-':>8}" for column in columns
        )
        lines.append(name.ljust(width) + cells + f"{graphs.get(name, 0):>11}")
    calibration = report.get("calibration")
    if calibration:
        lines.append(_calibration_lines(calibration))
    for name, reason in report.get("unavailable", {}).items():
        lines.append(f"unavailable: {name}: {reason}")
    for note in report.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _figure(figure: dict, digits: int) -> str:
    low, high = figure["interval"]
    spread = f" [95% {low:.1f}-{high:.1f}]" if low is not None else ""
    return f"{figure['total']:.{digits}f} total{spread}, {figure['pairs']} pairs"


def headline_lines(headline: dict, digits: int) -> list[str]:
    """What the report leads with: CALIBRATED trained elsewhere, the in-study figure beside it, the best single
    metric, each with its 95 % bootstrap interval over clips."""
    elsewhere, in_study = headline["trained_elsewhere"], headline["in_study"]
    lines = []
    if "total" in elsewhere:
        trained_on = (elsewhere.get("calibration") or {}).get("trained_on")
        lines.append(
            f"CALIBRATED trained elsewhere (fitted on {trained_on}, never on this study): {_figure(elsewhere, digits)}"
        )
    else:
        lines.append(f"CALIBRATED trained elsewhere: not measured: {elsewhere['unavailable']}")
    if "total" in in_study:
        lines.append(f"CALIBRATED {headline['in_study_label']}: {_figure(in_study, digits)}")
    else:
        lines.append(f"CALIBRATED {headline['in_study_label']}: {in_study['unavailable']}")
    best = headline.get("best_single")
    if best and "total" in best:
        line = f"best single metric: {headline['best_single_name']} {_figure(best, digits)}"
        versus = headline.get("versus_best_single")
        if versus and versus.get("difference"):
            low, high = versus["difference"]
            line += f"; trained elsewhere vs it: {low:+.1f}..{high:+.1f} points ({versus['verdict']})"
        lines.append(line)
    for name, what in (headline.get("left_out_sources") or {}).items():
        lines.append(f"left out of the training sources: {name} (shares {what})")
    return [*lines, ""]


def _calibration_lines(calibration: dict) -> str:
    if calibration["mode"] == "transfer":
        how = f"fitted on every pair of {calibration['trained_on']}, evaluated on {calibration['evaluated_on']}"
    else:
        how = (
            f"{calibration['folds']}-fold cross-validation grouped by {calibration['grouped_by']} "
            f"(seed {calibration['seed']})"
        )
    model = calibration["model_on_all_pairs"]
    lines = [f"CALIBRATED is held out: {how}."]
    for source, left_out in calibration.get("left_out_pairs", {}).items():
        lines.append(
            f"Left out of the fit: {left_out['pairs']} pairs of {source} holding one of the {left_out['shared_texts']} "
            f'caption texts it shares with {calibration["evaluated_on"]} (e.g. "{left_out["example"]}").'
        )
    lines += [
        f"Coefficients (standardised score differences, C={model['regularisation_C']:g}, "
        f"fitted on {model['training_pairs']} pairs of {calibration['trained_on']}):",
    ]
    for name, value in sorted(model["coefficients"].items(), key=lambda item: -abs(item[1])):
        lines.append(f"  {name:<12}{value:>+8.3f}")
    return "\n".join(lines)

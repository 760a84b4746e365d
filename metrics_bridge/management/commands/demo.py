"""`python manage.py demo`: a simulated study that shows what the platform is for, built in about a minute.

The command lives in metrics_bridge because it ties all three apps together (annotation <- ratings
<- metrics_bridge) and only this app may import the other two. What it builds (deterministic: the same every time
on a fresh database):
- 44 clips of synthesized sound scenes with five reference captions each and the captions of seven simulated
  captioning systems of graded quality (annotation/services/demo_scenes.py);
- an annotation study: three simulated annotators, gold published by a simulated reviewer for most clips, and a
  campaign for the demo annotator;
- a THumBS and a pairwise (HC / HI / HM / MM) study judged by twelve simulated raters, one careless and one failing
  the attention checks (ratings/services/demo.py), with the demo rater's share left to do;
- a finished metric run of the DEMO_METRICS, the dashboards computed from it, and a sensitivity report of a few
  of them (SENSITIVITY_METRICS).
The metric run is scored by a worker process (a temporary one, as `compute_metrics --wait` starts, when none is
alive) while this command builds the annotation study, so both cores work.
"""

import contextlib
import os
import socket
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.selectors import dataset_corpus_counts
from annotation.services.demo import (
    demo_accounts_ensure,
    demo_annotation_campaign_ensure,
    demo_annotation_study_ensure,
    demo_audio_ensure,
    demo_corpus_ensure,
)
from corpus.services.importing import ImportDataError
from metrics_bridge.models import MetricRun, MetricRunChunk, SensitivityReport
from metrics_bridge.scoring import registry
from metrics_bridge.services.benchmark import benchmark_state
from metrics_bridge.services.dashboards import dashboard_part_states, dashboard_refresh, dashboard_state
from metrics_bridge.services.dataset_runs import dataset_run_create
from metrics_bridge.tasks.dashboards import (
    request_benchmark_refresh,
    request_dashboard_parts,
    request_dashboard_refresh,
)
from metrics_bridge.tasks.sensitivity import request_sensitivity_report
from metrics_bridge.worker_process import WorkerOnDemand
from ratings.models import Campaign
from ratings.services.demo import SIMULATED_RATERS, demo_campaigns_ensure, demo_pairs_ensure

#: n-gram metrics, Sentence-BERT and FENSE: enough for every dashboard, computed in well under a minute. METEOR
#: (a Java runtime that loads a paraphrase table) and the others are a "Compute metrics" away on any dashboard.
DEMO_METRICS = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L", "CIDEr_D", "SBERT", "FENSE"]
#: the sensitivity page's demo report: one n-gram metric, the consensus one and an embedding one (FENSE would
#: double the worker's time for a column like SBERT's)
SENSITIVITY_METRICS = ["BLEU_4", "CIDEr_D", "SBERT"]
RUN_TIMEOUT_SECONDS = DASHBOARD_TIMEOUT_SECONDS = 600
#: the address ./scripts/run serves on, written by it at each start (relative to the project folder)
SERVED_URL_FILE = "logs/served-url"


class Command(BaseCommand):
    help = (
        "Build a simulated study on the `demo` dataset (synthesized clips, seven simulated captioning systems, "
        "twelve simulated raters, three simulated annotators and gold annotations), the accounts "
        "admin/annotator/reviewer/rater, a finished metric run and the dashboards. Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true", help="Give existing demo accounts new passwords")
        parser.add_argument("--no-metrics", action="store_true", help="Skip the metric run and the dashboards")
        parser.add_argument(
            "--metrics",
            default=",".join(DEMO_METRICS),
            help="Comma-separated metrics of the demo's run (default: %(default)s); FENSE is the slowest",
        )
        parser.add_argument(
            "--url",
            default=app_url(),
            help="Address of the app, printed for signing in (default: from HOST and PORT, as ./scripts/run "
            "serves: %(default)s)",
        )
        parser.add_argument(
            "--no-sign-in",
            action="store_true",
            help="Do not print where to sign in (./scripts/run says it once the server answers)",
        )

    def handle(
        self, *args, reset_passwords: bool, no_metrics: bool, metrics: str, url: str, no_sign_in: bool, **options
    ):
        self.metric_names = [name.strip() for name in metrics.split(",") if name.strip()]
        unknown = sorted(set(self.metric_names) - set(registry.all_metric_names()))
        if unknown:
            raise CommandError(f"unknown metric(s): {', '.join(unknown)}")
        started = time.monotonic()
        accounts = demo_accounts_ensure(reset_passwords=reset_passwords)
        try:
            self._build(no_metrics=no_metrics, started=started)
        except BaseException:
            # The passwords were just set: a failed build must not take them with it (the next start would
            # only say "unchanged").
            self.stdout.write("The demo study could not be built (the error follows); its accounts exist:")
            self.stdout.write(accounts_table(accounts))
            raise
        self.stdout.write("")
        self.stdout.write(accounts_table(accounts))
        if any(not account.password for account in accounts):
            self.stdout.write("Unchanged passwords are not shown; --reset-passwords gives those accounts new ones.")
        if not no_sign_in:
            self.stdout.write(f"Sign in at {url}")

    def _build(self, *, no_metrics: bool, started: float) -> None:
        dataset = demo_corpus_ensure()
        try:
            changed_audio = demo_audio_ensure(dataset=dataset)
        except ImportDataError as error:
            raise CommandError(f"demo audio: {error}") from None
        with WorkerOnDemand(say=self._say, warm_up=[] if no_metrics else self.metric_names) as enqueue:
            if not no_metrics:
                enqueue.ensure_worker()  # it boots, and loads its models, while the study is built
            pairs = demo_pairs_ensure(dataset=dataset)
            # the pairs and captions are there: most of the run can be scored meanwhile
            first_run = None if no_metrics else self._start_run(dataset, enqueue)
            campaigns = demo_campaigns_ensure(dataset=dataset, pairs=pairs)
            annotation_study = demo_annotation_study_ensure(dataset=dataset)
            annotation_campaign = demo_annotation_campaign_ensure(dataset=dataset)
            if not no_metrics:
                self._finish(first_run, enqueue)
                # what needed the ratings (the THumBS campaign's corpus for CIDEr-D), planned once the first run
                # stored everything else
                self._finish(self._start_run(dataset, enqueue), enqueue)
                self._refresh_dashboards(dataset, watchdog=enqueue.check_alive)
        counts = dataset_corpus_counts(dataset=dataset)
        self.stdout.write(
            f"Simulated study on dataset {dataset.name}: {counts['clips']} clips ({counts['clips_with_audio']} with "
            f"audio, {changed_audio} stored now), {counts['reference_captions']} references, "
            f"{counts['candidate_captions']} candidates, {len(pairs)} pairs"
        )
        for campaign in campaigns:
            self.stdout.write(
                f"campaign {campaign.name} ({campaign.task_type}): {campaign.assignments.count()} rater(s), "
                f"{len(SIMULATED_RATERS)} of them simulated"
            )
        self.stdout.write(
            f"annotation campaigns {annotation_study.name} (3 simulated annotators, gold published) and "
            f"{annotation_campaign.name}: {annotation_campaign.clips.count()} clips for the annotator"
        )
        self.stdout.write(f"built in {time.monotonic() - started:.0f} s")

    def _say(self, message: str) -> None:
        self.stdout.write(message)

    def _start_run(self, dataset, enqueue: WorkerOnDemand) -> MetricRun | None:
        """A metric run of the demo's metrics' missing scores, its chunks sent to the worker (scored meanwhile);
        None when nothing is missing (a demo built before: no empty run is left in the list)."""
        run = dataset_run_create(
            dataset=dataset, metric_names=self.metric_names, slow_resources_loading=True, keep_empty=False
        )
        if run is not None:
            enqueue(list(run.chunks.filter(status=MetricRunChunk.Status.PENDING).values_list("pk", flat=True)))
        return run

    def _finish(self, run: MetricRun | None, enqueue: WorkerOnDemand) -> None:
        """Wait for a run whose chunks were sent (the worker's heartbeat is watched), then report it."""
        if run is None:
            self.stdout.write(f"metric run: nothing to compute ({', '.join(self.metric_names)} are up to date)")
            return
        deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
        run.refresh_from_db()
        while not run.is_finished:
            enqueue.check_alive()
            if time.monotonic() > deadline:
                raise CommandError(f"metric run {run.pk} not finished after {RUN_TIMEOUT_SECONDS} s")
            time.sleep(0.3)
            run.refresh_from_db()
        self._report_run(run)

    def _report_run(self, run: MetricRun) -> None:
        self.stdout.write(
            f"metric run {run.pk} ({', '.join(run.metrics)}): {run.get_status_display().lower()}, "
            f"{run.chunks_done}/{run.chunks_total} chunks"
        )
        if run.status != MetricRun.Status.DONE:
            raise CommandError(f"metric run {run.pk} ended {run.get_status_display().lower()}: {run.error}")

    def _refresh_dashboards(self, dataset, *, watchdog) -> None:
        """The dashboards' numbers, so their first view shows them at once, not "computing": the THumBS reports
        (bootstrap intervals, the slowest), the agreement page's other parts (CALIBRATED's fit) and the benchmark
        table on the worker while this process computes the agreement table and leaderboard."""
        campaigns = list(Campaign.objects.filter(dataset=dataset, task_type=Campaign.TaskType.THUMBS))
        queued = [
            campaign for campaign in campaigns if not request_dashboard_refresh(kind="thumbs", object_id=campaign.pk)
        ]
        sensitivity = self._start_sensitivity(dataset)
        dashboard_refresh(kind="agreement", target=dataset)
        # the agreement table is stored: the page's other parts go to the worker
        request_dashboard_parts(kind="agreement", target=dataset)
        request_benchmark_refresh()
        dashboard_refresh(kind="leaderboard", target=dataset)
        deadline = time.monotonic() + DASHBOARD_TIMEOUT_SECONDS
        while queued or sensitivity or not self._agreement_and_benchmark_stored(dataset):
            watchdog()
            # a failed computation is sent again (up to its attempts; then it counts as settled: pages report it)
            request_dashboard_parts(kind="agreement", target=dataset)
            request_benchmark_refresh()
            queued = [campaign for campaign in queued if not dashboard_state(kind="thumbs", target=campaign).fresh]
            if sensitivity:
                sensitivity.refresh_from_db()
                if sensitivity.status == SensitivityReport.Status.FAILED:
                    raise CommandError(f"the sensitivity report failed: {sensitivity.error.splitlines()[0]}")
                if sensitivity.status == SensitivityReport.Status.DONE:
                    sensitivity = None
            if (queued or sensitivity) and time.monotonic() > deadline:
                raise CommandError(
                    "the worker did not compute the THumBS and sensitivity reports, CALIBRATED's fit and the "
                    f"benchmark table in {DASHBOARD_TIMEOUT_SECONDS} s"
                )
            time.sleep(0.5)

    @staticmethod
    def _agreement_and_benchmark_stored(dataset) -> bool:
        """Every part of the agreement page and the benchmark table are stored for the data as it is (one whose
        computation failed for good counts as settled: its page reports it)."""
        parts = dashboard_part_states(kind="agreement", target=dataset).values()
        states = [*parts, benchmark_state()]
        return all(state.fresh or (state.computation and state.computation.given_up) for state in states)

    def _start_sensitivity(self, dataset) -> SensitivityReport | None:
        """A sensitivity report of the demo's SENSITIVITY_METRICS on the worker, unless one is done already."""
        metric_names = [name for name in SENSITIVITY_METRICS if name in self.metric_names]
        done = SensitivityReport.objects.filter(dataset=dataset, status=SensitivityReport.Status.DONE)
        if not metric_names or done.exists():
            return None
        return request_sensitivity_report(dataset=dataset, metric_names=metric_names)


def app_url() -> str:
    """Where ./scripts/run serves the app: http://HOST:PORT/ from the environment when either is set, else the
    address it last served on (SERVED_URL_FILE, written at each start), else 127.0.0.1:8000. A server on every
    address is reached by the machine's name."""
    if not (os.environ.get("HOST") or os.environ.get("PORT")):
        with contextlib.suppress(OSError):
            served = (settings.BASE_DIR / SERVED_URL_FILE).read_text().strip()
            if served.startswith("http"):
                return served
    host, port = os.environ.get("HOST") or "127.0.0.1", os.environ.get("PORT") or "8000"
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def accounts_table(accounts) -> str:
    """The demo accounts as a plain-text table with headings (what ./scripts/run prints)."""
    rows = [("Account", "Roles", "Password")] + [
        (account.username, ", ".join(account.roles), account.password or "(unchanged)") for account in accounts
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]

    def line(row) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])

"""The simulated study that `manage.py demo` builds: it ties the corpus (demo/dataset.py), the judgements
(demo/judgements.py), a metric run and the dashboards together. What it builds (deterministic: the same every time
on a fresh database):
- 44 clips of synthesized sound scenes with five reference captions each and the captions of seven simulated
  captioning systems of graded quality (demo/scenes.py, from the data in demo/scene_data.py; sounds: demo/audio.py);
- an annotation study: three simulated annotators, gold published by a simulated reviewer for most clips, and a
  campaign for the demo annotator;
- a THumBS and a pairwise (HC / HI / HM / MM) study judged by twelve simulated raters, one careless and one failing
  the attention checks (demo/judgements.py), with the demo rater's share left to do;
- a finished metric run of the DEMO_METRICS, the dashboards computed from it, and a sensitivity report of a few
  of them (SENSITIVITY_METRICS).
The metric run is scored by a worker process (a temporary one, as `compute_metrics --wait` starts, when none is
alive) while the annotation study is built, so both cores work.
"""

import time
from collections.abc import Callable

from annotation.selectors import dataset_corpus_counts
from corpus.services.importing import ImportDataError
from demo.dataset import (
    demo_annotation_campaign_ensure,
    demo_annotation_study_ensure,
    demo_audio_ensure,
    demo_corpus_ensure,
)
from demo.judgements import SIMULATED_RATERS, demo_campaigns_ensure, demo_pairs_ensure
from metrics_bridge.models import MetricRun, MetricRunChunk, SensitivityReport
from metrics_bridge.services.evaluation.benchmark import benchmark_state
from metrics_bridge.services.evaluation.dashboards import dashboard_part_states, dashboard_refresh, dashboard_state
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from metrics_bridge.tasks.dashboards import (
    request_benchmark_refresh,
    request_dashboard_parts,
    request_dashboard_refresh,
)
from metrics_bridge.tasks.sensitivity import request_sensitivity_report
from metrics_bridge.worker_process import WorkerOnDemand
from ratings.models import Campaign

#: n-gram metrics, Sentence-BERT and FENSE: enough for every dashboard, computed in well under a minute. METEOR
#: (a Java runtime that loads a paraphrase table) and the others are a "Compute metrics" away on any dashboard.
DEMO_METRICS = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L", "CIDEr_D", "SBERT", "FENSE"]
#: the sensitivity page's demo report: one n-gram metric, the consensus one and an embedding one (FENSE would
#: double the worker's time for a column like SBERT's)
SENSITIVITY_METRICS = ["BLEU_4", "CIDEr_D", "SBERT"]
RUN_TIMEOUT_SECONDS = DASHBOARD_TIMEOUT_SECONDS = 600


class DemoBuildError(Exception):
    """The demo could not be built (its audio, a metric run, the dashboards); the message says what."""


class DemoStudyBuilder:
    """Builds the simulated study with the metrics `metric_names`, saying what it did through `say`."""

    def __init__(self, *, metric_names: list[str], say: Callable[[str], None]):
        self.metric_names, self.say = metric_names, say

    def build(self, *, no_metrics: bool) -> None:
        """The whole simulated study; with `no_metrics`, without the metric run and the dashboards."""
        dataset = demo_corpus_ensure()
        try:
            changed_audio = demo_audio_ensure(dataset=dataset)
        except ImportDataError as error:
            raise DemoBuildError(f"demo audio: {error}") from None
        with WorkerOnDemand(say=self.say, warm_up=[] if no_metrics else self.metric_names) as enqueue:
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
        self.say(
            f"Simulated study on dataset {dataset.name}: {counts['clips']} clips ({counts['clips_with_audio']} with "
            f"audio, {changed_audio} stored now), {counts['reference_captions']} references, "
            f"{counts['candidate_captions']} candidates, {len(pairs)} pairs"
        )
        for campaign in campaigns:
            self.say(
                f"campaign {campaign.name} ({campaign.task_type}): {campaign.assignments.count()} rater(s), "
                f"{len(SIMULATED_RATERS)} of them simulated"
            )
        self.say(
            f"annotation campaigns {annotation_study.name} (3 simulated annotators, gold published) and "
            f"{annotation_campaign.name}: {annotation_campaign.clips.count()} clips for the annotator"
        )

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
            self.say(f"metric run: nothing to compute ({', '.join(self.metric_names)} are up to date)")
            return
        deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
        run.refresh_from_db()
        while not run.is_finished:
            enqueue.check_alive()
            if time.monotonic() > deadline:
                raise DemoBuildError(f"metric run {run.pk} not finished after {RUN_TIMEOUT_SECONDS} s")
            time.sleep(0.3)
            run.refresh_from_db()
        self._report_run(run)

    def _report_run(self, run: MetricRun) -> None:
        self.say(
            f"metric run {run.pk} ({', '.join(run.metrics)}): {run.get_status_display().lower()}, "
            f"{run.chunks_done}/{run.chunks_total} chunks"
        )
        if run.status != MetricRun.Status.DONE:
            raise DemoBuildError(f"metric run {run.pk} ended {run.get_status_display().lower()}: {run.error}")

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
                    raise DemoBuildError(f"the sensitivity report failed: {sensitivity.error.splitlines()[0]}")
                if sensitivity.status == SensitivityReport.Status.DONE:
                    sensitivity = None
            if (queued or sensitivity) and time.monotonic() > deadline:
                raise DemoBuildError(
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

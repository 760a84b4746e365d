import json
import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from metrics_bridge.captioning.prompts import (
    AFTER_AUDIOCAPBENCH,
    LEGACY_NAMES,
    PromptSetError,
    prompt_set_builtin,
    prompt_set_parse,
)
from metrics_bridge.captioning.providers import DEFAULT_KEY_VARIABLES, PROVIDERS, KeyScopeError, key_variable_check
from metrics_bridge.management.report_commands import metric_names_option
from metrics_bridge.models import CaptioningJob, MetricRun
from metrics_bridge.services.captioning.jobs import (
    CaptioningSetupError,
    captioning_job_create,
    captioning_job_run,
    captioning_job_score,
    captioning_job_summary,
)
from metrics_bridge.services.runs.runs import metric_run_dispatch, metric_run_execute
from metrics_bridge.tasks.runs import enqueue_chunks
from metrics_bridge.worker_process import WorkerOnDemand


class Command(BaseCommand):
    help = (
        "Caption every clip of a dataset that has audio through an audio-language model's API, file the answers as "
        "a captioning system (default name provider/model), and score them with the default metrics. Answers are "
        "cached by endpoint (provider, base URL, model, generation parameters), prompt and audio: running the "
        "command again asks only for what is missing. The API key is read from the environment variable "
        "--api-key-env names, and never stored or printed; a server at its own --base-url needs a variable named "
        "for it. Ctrl-C marks the job interrupted: run the command again to ask for the rest."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--provider", required=True, choices=PROVIDERS)
        parser.add_argument("--model", required=True, help="e.g. gpt-4o-audio-preview, gemini-2.5-flash")
        parser.add_argument(
            "--base-url",
            default="",
            help="The API's base URL (default: the provider's own; openai-compatible needs one)",
        )
        parser.add_argument(
            "--api-key-env",
            default="",
            help="Environment variable holding the key of this server (needed with a --base-url of another server; "
            "default for the provider's own API: "
            + ", ".join(f"{name}: {variable}" for name, variable in DEFAULT_KEY_VARIABLES.items())
            + "; these are sent only to their provider's API)",
        )
        parser.add_argument("--system", default="", help="The captioning system's name (default: provider/model)")
        prompts = parser.add_mutually_exclusive_group()
        prompts.add_argument(
            "--prompt-set",
            default=AFTER_AUDIOCAPBENCH.name,
            help=f"{AFTER_AUDIOCAPBENCH.name} (default; also accepted as "
            f"{', '.join(LEGACY_NAMES)}): two prompts per domain, used alternately, written after AudioCapBench's "
            "description of its categories, NOT AudioCapBench's own prompt text; or a prompt file as with "
            "--prompt-file",
        )
        prompts.add_argument(
            "--prompt-file",
            help="A file of prompts to use instead (e.g. AudioCapBench's own, for whoever holds them): JSON "
            "{domain: [prompts]} or one prompt per line",
        )
        parser.add_argument("--concurrency", type=int, default=4, help="Clips asked at the same time (default 4)")
        parser.add_argument("--limit", type=int, default=None, help="Caption only the first N clips with audio")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--metrics",
            help="Comma-separated metrics to score the captions with (default: CAPTIONING_METRICS, else every "
            "metric that can run here)",
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="Queue the metric run for the workers and return, instead of waiting for the scores",
        )

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f'dataset "{options["dataset"]}" does not exist')
        if options["prompt_file"]:
            prompt_set = self._prompt_file(options["prompt_file"], option="--prompt-file")
        else:
            prompt_set = prompt_set_builtin(options["prompt_set"]) or self._prompt_file(
                options["prompt_set"], option="--prompt-set"
            )
        try:
            variable = key_variable_check(
                provider=options["provider"], base_url=options["base_url"], variable=options["api_key_env"]
            )
        except KeyScopeError as error:
            raise CommandError(str(error)) from None
        if not os.environ.get(variable):
            raise CommandError(
                f"the environment variable {variable} is not set (or empty): put the API key there "
                "(any value for a server without authentication), or name another variable with --api-key-env"
            )
        try:
            job = captioning_job_create(
                dataset=dataset,
                provider=options["provider"],
                model=options["model"],
                base_url=options["base_url"],
                api_key_variable=variable,
                system_name=options["system"],
                prompt_set=prompt_set,
                concurrency=options["concurrency"],
                limit=options["limit"],
                status=CaptioningJob.Status.RUNNING,
            )
        except CaptioningSetupError as error:
            raise CommandError(str(error)) from None
        self.stderr.write(
            f"captioning job {job.pk}: {job.clips_total} clip(s) of {dataset.name} through {job.provider}/{job.model}"
            + ("" if job.estimated_cost is None else f", estimated cost ${job.estimated_cost:.4f}")
        )
        try:
            job = captioning_job_run(job=job, on_progress=self._progress)
        except KeyboardInterrupt:
            raise CommandError(
                f"captioning job {job.pk} interrupted: the answers received so far are cached. Run the same "
                "command again to ask only for what is missing (or Resume on the job's page)."
            ) from None
        if job.system_id:
            self._score(job, metric_names=metric_names_option(options["metrics"]), wait=not options["no_wait"])
        summary = captioning_job_summary(job=job)
        if options["format"] == "json":
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(summary_text(summary))
        if job.status not in (CaptioningJob.Status.DONE,):
            problem = job.error or f"{len(summary['failed'])} clip(s) failed"
            raise CommandError(
                f"captioning job {job.pk} ended {job.get_status_display().lower()}: {problem}. "
                "Run the same command again to ask only for what is missing."
            )

    def _prompt_file(self, value: str, *, option: str):
        path = Path(value)
        if not path.is_file():
            known = f"neither {AFTER_AUDIOCAPBENCH.name} nor " if option == "--prompt-set" else "not "
            raise CommandError(f"{option} {value}: {known}an existing file")
        try:
            return prompt_set_parse(content=path.read_bytes(), source_name=path.name)
        except PromptSetError as error:
            raise CommandError(str(error)) from None

    def _progress(self, counts: dict) -> None:
        self.stderr.write(
            f"captioned {counts['done']}/{counts['total']} ({counts['cached']} cached, {counts['failed']} failed, "
            f"{counts['requests']} requests)"
        )

    def _score(self, job: CaptioningJob, *, metric_names: list[str] | None, wait: bool) -> None:
        """The metric run of the default metrics over the new system's captions (and any other missing)."""
        if not wait:
            run = self._plan(job, metric_names)
            metric_run_dispatch(run=run, enqueue=enqueue_chunks)
            self.stderr.write(f"metric run {run.pk} queued for the workers ({run.chunks_total} chunks)")
            return
        run = self._plan(job, metric_names)
        if run.is_finished:  # every score is there already (a re-run): no worker needed
            return
        try:
            with WorkerOnDemand(say=self.stderr.write) as enqueue:
                run = metric_run_execute(
                    run=run,
                    enqueue=enqueue,
                    watchdog=enqueue.check_alive,
                    on_progress=lambda r: self.stderr.write(f"scoring: {r.chunks_done}/{r.chunks_total} chunks"),
                )
        except RuntimeError as error:
            raise CommandError(f"captions filed as {job.system_name}, but scoring failed: {error}") from None
        if run.status != MetricRun.Status.DONE:
            self.stderr.write(f"metric run {run.pk} ended {run.get_status_display().lower()}: {run.error}")

    def _plan(self, job: CaptioningJob, metric_names: list[str] | None) -> MetricRun:
        try:
            return captioning_job_score(job=job, metric_names=metric_names)
        except ValueError as error:  # an unknown metric name
            raise CommandError(f"captions filed as {job.system_name}, but {error}") from None


def summary_text(summary: dict) -> str:
    cost = "unknown (no price for the model)" if summary["cost"] is None else f"${summary['cost']:.4f}"
    lines = [
        f"system:    {summary['system']}",
        f"clips:     {summary['clips']} ({summary['requested']} asked, {summary['cached']} from the cache, "
        f"{len(summary['failed'])} failed; {summary['requests']} requests)",
        f"cost:      {cost}",
    ]
    if summary["metric_run"]:
        run = summary["metric_run"]
        lines.append(
            f"scores:    metric run {run['id']} ({run['status']}): {', '.join(run['metrics']) or 'nothing new'}"
        )
    for failure in summary["failed"]:
        lines.append(f"failed:    {failure['clip']}: {failure['error']}")
    if summary["error"]:
        lines.append(f"error:     {summary['error']}")
    return "\n".join(lines)

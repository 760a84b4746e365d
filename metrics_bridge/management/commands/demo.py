"""`python manage.py demo`: a small, self-contained demo of the whole platform.

The command lives in metrics_bridge because it ties all three apps together (annotation <- ratings
<- metrics_bridge) and only this app may import the other two.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.selectors import dataset_corpus_counts
from annotation.services.demo import (
    demo_accounts_ensure,
    demo_audio_ensure,
    demo_corpus_ensure,
    demo_expert_annotations_ensure,
)
from annotation.services.importing import ImportDataError
from metrics_bridge.models import MetricRun
from metrics_bridge.tasks import start_metric_run
from ratings.services.demo import demo_campaigns_ensure, demo_pairs_ensure

DEMO_METRICS = ["BLEU_4", "ROUGE_L"]


class Command(BaseCommand):
    help = (
        "Build the `demo` dataset (synthetic audio, reference and candidate captions, pairs, a THumBS and a pairwise "
        "campaign, expert annotations), the accounts admin/annotator/reviewer/rater, and compute BLEU and ROUGE-L. "
        "Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true", help="Give existing demo accounts new passwords")
        parser.add_argument("--no-metrics", action="store_true", help="Skip the metric run")
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="Address of the app, printed for signing in"
        )

    def handle(self, *args, reset_passwords: bool, no_metrics: bool, url: str, **options):
        accounts = demo_accounts_ensure(reset_passwords=reset_passwords)
        dataset = demo_corpus_ensure()
        try:
            changed_audio = demo_audio_ensure(dataset=dataset)
        except ImportDataError as error:
            raise CommandError(f"demo audio: {error}") from None
        annotations = demo_expert_annotations_ensure(dataset=dataset)
        pairs = demo_pairs_ensure(dataset=dataset)
        campaigns = demo_campaigns_ensure(dataset=dataset, pairs=pairs)

        counts = dataset_corpus_counts(dataset=dataset)
        self.stdout.write(
            f"dataset {dataset.name}: {counts['clips']} clips ({counts['clips_with_audio']} with audio, "
            f"{changed_audio} stored now), {counts['reference_captions']} references, "
            f"{counts['candidate_captions']} candidates, {len(pairs)} pairs, {len(annotations)} expert annotations"
        )
        for campaign in campaigns:
            self.stdout.write(
                f"campaign {campaign.name} ({campaign.task_type}): {campaign.assignments.count()} rater(s)"
            )

        if not no_metrics:
            try:
                run = start_metric_run(dataset=dataset, metric_names=DEMO_METRICS)
            except ValueError as error:
                raise CommandError(f"metric run: {error}") from None
            run.refresh_from_db()
            self.stdout.write(
                f"metric run {run.pk} ({', '.join(run.metrics)}): {run.get_status_display().lower()}, "
                f"{run.chunks_done}/{run.chunks_total} chunks"
                + ("" if run.is_finished else " (queued: a Celery worker scores it, e.g. the one ./scripts/run starts)")
            )
            if run.status == MetricRun.Status.FAILED:
                raise CommandError(f"metric run {run.pk} failed: {run.error}")

        self.stdout.write("")
        self.stdout.write(accounts_table(accounts))
        if any(not account.password for account in accounts):
            self.stdout.write("Unchanged passwords are not shown; --reset-passwords gives those accounts new ones.")
        self.stdout.write(f"Sign in at {url}")


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

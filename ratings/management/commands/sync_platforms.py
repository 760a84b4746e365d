from django.core.management.base import BaseCommand, CommandError

from ratings.models_platforms import StudyPlatformLink
from ratings.platforms import PlatformError
from ratings.platforms.actions import PlanError, prolific_sync


class Command(BaseCommand):
    help = (
        "Sync the submissions of every crowd study linked to a Prolific study (or only --campaign's): returned and "
        "timed-out submissions free their slots, and the admission limit pauses or starts the study (it is also "
        "applied on every arrival and ending). Run it from cron; it sends no approval, rejection or payment."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", help="only the study of this campaign (its name)")

    def handle(self, *args, campaign=None, **options):
        links = StudyPlatformLink.objects.select_related("study__campaign").exclude(prolific_study_id="")
        if campaign:
            links = links.filter(study__campaign__name=campaign)
        # A study's platforms are a JSON list, which SQLite cannot search: the few linked studies are read here.
        links = [link for link in links.order_by("study__campaign__name") if link.study.on_prolific]
        if campaign and not links:
            raise CommandError(f"no crowd study of campaign {campaign!r} is linked to a Prolific study")
        failed = []
        for link in links:
            name = link.study.campaign.name
            try:
                report = prolific_sync(study=link.study)
            except (PlanError, PlatformError) as error:
                failed.append(f"{name}: {error}")
                continue
            if report.error:
                failed.append(f"{name}: {report.error}")
                continue
            line = f"{name}: {report.submissions} submissions, {len(report.freed)} freed"
            self.stdout.write(line + (f"; {report.admission}" if report.admission else ""))
        if failed:
            raise CommandError("; ".join(failed))

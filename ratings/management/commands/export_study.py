import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ratings.models import Campaign
from ratings.models_study import Study
from ratings.services.study_export import StudyExportError, study_fense_items, study_thumbs_csv


class Command(BaseCommand):
    help = (
        "Export a crowd study's included judgements as a benchmark file: a pairwise study in the FENSE JSON layout "
        "(what import_pairwise_judgements reads), a THumBS study as a flat CSV. Excluded participants, attention "
        "checks and previews are left out."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="the name of the study's campaign")
        parser.add_argument("--out", help="output file (default: standard output)")

    def handle(self, *args, campaign, out, **options):
        study = Study.objects.select_related("campaign").filter(campaign__name=campaign).first()
        if study is None:
            known = Campaign.objects.filter(name=campaign).exists()
            raise CommandError(
                f"campaign {campaign!r} is not published as a crowd study"
                if known
                else f"no campaign named {campaign!r}"
            )
        try:
            if study.campaign.task_type == Campaign.TaskType.PAIRWISE:
                content = json.dumps(study_fense_items(study=study), ensure_ascii=False, indent=1)
            else:
                content = study_thumbs_csv(study=study)
        except StudyExportError as error:
            raise CommandError(f"campaign {campaign}: {error}") from None
        if out:
            Path(out).write_text(content, encoding="utf-8")
            self.stderr.write(f"study of {campaign} -> {out}")
        else:
            self.stdout.write(content)

"""Make the rater copies (samples only, no metadata) of clips stored before copies existed.

    python manage.py build_rater_audio [--dataset NAME]

New audio gets its copy when it is stored; a clip without one gets it the first time a rater asks
for it, so this command only does that work ahead of time. Undecodable files are listed, not fatal.
"""

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Clip, Dataset
from corpus.services.rater_audio import rater_audio_build_missing


class Command(BaseCommand):
    help = "Make the metadata-free rater copy of every clip's audio that has none yet."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="only this dataset's clips (default: every dataset)")

    def handle(self, *args, dataset=None, **options):
        clips = Clip.objects.exclude(audio="").select_related("dataset").order_by("pk")
        if dataset:
            if not Dataset.objects.filter(name=dataset).exists():
                raise CommandError(f"no dataset named {dataset!r}")
            clips = clips.filter(dataset__name=dataset)
        summary = rater_audio_build_missing(clips=clips.iterator())
        self.stdout.write(
            f"rater copies built: {summary['built']}, already there: {summary['already_there']}, "
            f"failed: {len(summary['failed'])}"
        )
        for failure in summary["failed"]:
            self.stdout.write(f"  {failure}")

from django.core.management.base import BaseCommand, CommandError

from annotation.services.audiocaps_f import audiocaps_f_export_to_path
from annotation.services.importing import ImportDataError


class Command(BaseCommand):
    help = "Export the GOLD expert annotations of a dataset in the AudioCaps-F JSON format."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--out", required=True, help="the JSON file to write")

    def handle(self, *args, dataset, out, **options):
        try:
            clip_count = audiocaps_f_export_to_path(dataset_name=dataset, path=out)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Wrote {clip_count} annotated clips to {out}")

from django.core.management.base import BaseCommand, CommandError

from annotation.services.audiocaps_f import audiocaps_f_import_from_path
from annotation.services.importing import ImportDataError


class Command(BaseCommand):
    help = (
        'Import AudioCaps-F expert annotations ({"Y<id>.wav": {event: {"source": [...], "attr": [...]}}}) '
        "as GOLD annotations of the user audiocaps-f-experts. All or nothing; running it again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file, e.g. audiocaps_f_annotations.json")
        parser.add_argument("--dataset", required=True, help="dataset name (created if missing)")

    def handle(self, *args, path, dataset, **options):
        try:
            summary = audiocaps_f_import_from_path(path=path, dataset_name=dataset)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

from django.core.management.base import BaseCommand, CommandError

from corpus.services.importing import ImportDataError
from corpus.services.references_import import references_import_from_path


class Command(BaseCommand):
    help = (
        "Import reference captions from a Clotho CSV (file_name,caption_1..caption_5) or an AudioCaps CSV "
        "(audiocap_id,youtube_id,start_time,caption). All or nothing; running it twice changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--dataset", required=True)

    def handle(self, *args, path: str, dataset: str, **options):
        try:
            summary = references_import_from_path(path=path, dataset_name=dataset)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

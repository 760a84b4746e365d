from django.core.management.base import BaseCommand, CommandError

from corpus.services.importing import ImportDataError
from corpus.services.system_captions import system_captions_import_from_path


class Command(BaseCommand):
    help = (
        "Import a captioning system's captions for a dataset: CSV `file_name,caption_predicted` (DCASE) or JSON "
        "{clip: caption}. All or nothing; a changed caption replaces the system's caption for that clip."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--system", required=True)

    def handle(self, *args, path: str, dataset: str, system: str, **options):
        try:
            summary = system_captions_import_from_path(path=path, dataset_name=dataset, system_name=system)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

from django.core.management.base import BaseCommand, CommandError

from corpus.services.audio_import import audio_directory_import
from corpus.services.importing import ImportDataError


class Command(BaseCommand):
    help = (
        "Attach the audio files of a folder to the clips of a dataset, matched by file name or external id "
        "(with or without extension; Y<id>.wav matches external id <id>). All files are decoded first: one "
        "file that is not audio fails the command and nothing is attached."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--dataset", required=True)

    def handle(self, *args, directory, dataset, **options):
        try:
            summary = audio_directory_import(directory=directory, dataset_name=dataset)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

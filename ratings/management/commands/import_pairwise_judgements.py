from django.core.management.base import BaseCommand, CommandError

from corpus.services.importing import ImportDataError
from ratings.services.pairwise_import import pairwise_judgements_import_from_path


class Command(BaseCommand):
    help = (
        "Import pairwise human judgements in the FENSE JSON format (Clotho-Eval, AudioCaps-Eval): clips, "
        "reference and candidate captions, HC/HI/HM/MM pairs and one vote per judge. All or nothing; "
        "running it again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file, e.g. clotho_eval.json")
        parser.add_argument("--dataset", required=True, help="dataset name (created if missing), e.g. clotho-eval")

    def handle(self, *args, path, dataset, **options):
        try:
            summary = pairwise_judgements_import_from_path(path=path, dataset_name=dataset)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from corpus.services.dataset_settings import dataset_settings_update


class Command(BaseCommand):
    help = "Show or change a dataset's metric settings (domain, DATE delta, AIR-Bench reference answer)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument(
            "--domain", choices=Dataset.Domain.values, help="sound, music or speech (LLM judge guidance)"
        )
        parser.add_argument("--date-delta", type=float, help="DATE's tolerance band (default 0.1703)")
        parser.add_argument(
            "--airbench-reference",
            choices=Dataset.AirBenchReference.values,
            help="first reference caption or llm-written",
        )

    def handle(self, *args, dataset, domain, date_delta, airbench_reference, **options):
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f'dataset "{dataset}" does not exist')
        try:
            settings = dataset_settings_update(
                dataset=found, domain=domain, date_delta=date_delta, airbench_reference=airbench_reference
            )
        except ValidationError as error:
            problems = error.message_dict if hasattr(error, "error_dict") else {"settings": error.messages}
            raise CommandError("; ".join(f"{field}: {' '.join(texts)}" for field, texts in problems.items())) from None
        self.stdout.write(json.dumps({"dataset": found.name, **settings}))

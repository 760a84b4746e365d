import json

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from ratings.selectors import dataset_stats


class Command(BaseCommand):
    help = "Counts of one dataset: clips, captions, pairs per split, votes, GOLD expert annotations and their events."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, dataset, format, **options):  # noqa: A002 - the option is called --format
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f'dataset "{dataset}" does not exist')
        stats = dataset_stats(dataset=found)
        if format == "json":
            self.stdout.write(json.dumps(stats))
            return
        rows = [(name, value) for name, value in stats.items() if name not in ("pairs", "systems")]
        rows[4:4] = [(f"pairs {split}", count) for split, count in stats["pairs"].items()]
        width = max(len(name) for name, _ in rows)
        self.stdout.write(f"Dataset {found.name}")
        for name, value in rows:
            self.stdout.write(f"  {name.replace('_', ' ').ljust(width)}  {value:>8}")
        self.stdout.write(f"  {'systems'.ljust(width)}  {', '.join(stats['systems']) or '-'}")

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import AnnotationCampaign
from corpus.models import Dataset
from metrics_bridge.agreement.annotation_agreement import FACTORS
from metrics_bridge.services.evaluation.annotation_agreement import dataset_annotation_agreement


class Command(BaseCommand):
    help = (
        "Inter-annotator agreement of a dataset's submitted AudioCaps-F annotations per factor (event, source, "
        "attribute, relation): X-ACE F-measure between each pair of annotators of a clip, averaged over pairs "
        "then clips; null where a factor is absent from every pair's graphs. clips = clips with >= 2 submissions."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--campaign", help="only the submissions of this annotation campaign")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument(
            "--per-annotator", action="store_true", help="add each annotator's agreement with the others"
        )

    def handle(self, *args, dataset, campaign, format, per_annotator, **options):  # noqa: A002 - the option is --format
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f'dataset "{dataset}" does not exist')
        chosen = None
        if campaign:
            chosen = AnnotationCampaign.objects.filter(name=campaign, dataset=found).first()
            if chosen is None:
                raise CommandError(f'dataset "{dataset}" has no annotation campaign "{campaign}"')
        report = dataset_annotation_agreement(dataset=found, campaign=chosen)
        result = report.summary()
        if per_annotator:
            result["per_annotator"] = report.per_annotator
        if format == "json":
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"Annotation agreement of {found.name}{f' ({chosen.name})' if chosen else ''}: "
            f"{report.clips} clips with >= 2 submissions, {report.annotators} annotators, {report.pairs} pairs"
        )
        self.stdout.write(f"  {'':<16}" + "".join(f"{factor:>11}" for factor in FACTORS))
        rows = [("all", report.factors)]
        if per_annotator:
            rows += [(name, entry["factors"]) for name, entry in report.per_annotator.items()]
        for name, factors in rows:
            cells = "".join(f"{'n/a' if factors[f] is None else f'{factors[f]:.3f}':>11}" for f in FACTORS)
            self.stdout.write(f"  {name:<16}{cells}")

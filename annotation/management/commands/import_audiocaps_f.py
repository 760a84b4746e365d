from django.core.management.base import BaseCommand, CommandError

from annotation.services.audiocaps_f import IMPORT_STATUSES, audiocaps_f_import_from_path
from annotation.services.audiocaps_f_checks import CONFLICTING_AS, DUPLICATES_AS
from corpus.services.importing import ImportDataError


class Command(BaseCommand):
    help = (
        'Import AudioCaps-F expert annotations ({"Y<id>.wav": {event: {"source": [...], "attr": [...]}}}) '
        "as GOLD annotations of the user audiocaps-f-experts, or with --annotator as that annotator's "
        "submitted annotations (not gold). All or nothing; running it again changes nothing. A clip whose gold "
        "another account published is refused unless --replace-gold is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file, e.g. audiocaps_f_annotations.json")
        parser.add_argument("--dataset", required=True, help="dataset name (created if missing)")
        parser.add_argument(
            "--annotator", help="import as this existing annotator's annotations (default: the gold expert account)"
        )
        parser.add_argument(
            "--status",
            choices=IMPORT_STATUSES,
            help="status of the imported annotations (default: gold, or submitted with --annotator)",
        )
        parser.add_argument(
            "--replace-gold",
            action="store_true",
            help="let imported gold supersede gold another account (a reviewer) published for the same clip",
        )
        parser.add_argument(
            "--conflicting-attributes",
            choices=CONFLICTING_AS,
            default=CONFLICTING_AS[0],
            help="in a gold import, the status of clips with attributes the tag library calls opposites or "
            "different counts (flagged in the summary either way; default gold, as the released file gives them)",
        )
        parser.add_argument(
            "--duplicate-events",
            choices=DUPLICATES_AS,
            default=DUPLICATES_AS[0],
            help="in a gold import, a clip with two events that may be one sound (as gold publishing finds them; "
            "checked where every event of the clip has spans): refuse the file (default), or import the clip as "
            "submitted, flagged in the summary",
        )

    def handle(
        self, *args, path, dataset, annotator, status, replace_gold, conflicting_attributes, duplicate_events, **options
    ):
        try:
            summary = audiocaps_f_import_from_path(
                path=path,
                dataset_name=dataset,
                annotator_username=annotator,
                status=status,
                replace_gold=replace_gold,
                conflicting_as=conflicting_attributes,
                duplicates_as=duplicate_events,
            )
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("\n".join(summary.lines()))

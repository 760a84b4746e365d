import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services.audiocaps_f_exporting import audiocaps_f_export_notes, audiocaps_f_export_to_path
from corpus.services.importing import ImportDataError


class Command(BaseCommand):
    help = "Export the GOLD expert annotations of a dataset in the AudioCaps-F JSON format."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--out", required=True, help="the JSON file to write")
        parser.add_argument("--notes", help="also write the annotations' notes here as JSON {clip key: note}")

    def handle(self, *args, dataset, out, notes=None, **options):
        try:
            clip_count = audiocaps_f_export_to_path(dataset_name=dataset, path=out)
        except ImportDataError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Wrote {clip_count} annotated clips to {out}")
        if notes:
            written = audiocaps_f_export_notes(dataset_name=dataset)
            Path(notes).write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            self.stdout.write(f"Wrote {len(written)} notes to {notes}")

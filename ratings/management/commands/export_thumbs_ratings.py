from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ratings.models import Campaign
from ratings.services.thumbs_export import (
    average_columns,
    averages_json,
    rating_columns,
    ratings_json,
    ratings_xlsx,
    rows_csv,
    thumbs_caption_averages,
    thumbs_rating_rows,
)


class Command(BaseCommand):
    help = (
        "Export a campaign's THumBS ratings, one row per rating (rater, record_id, caption, P, R, F, C, I, "
        "synthesized, comment, overall). xlsx adds a 'Per clip' sheet of averages; --per-clip gives those "
        "averages instead of the ratings for json/csv. Caption authorship only with --include-authorship (admins)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--format", choices=["json", "csv", "xlsx"], required=True)
        parser.add_argument("--out", help="output file (default: standard output)")
        parser.add_argument("--per-clip", action="store_true", help="json/csv: averages per clip and caption instead")
        parser.add_argument("--include-authorship", action="store_true", help="add caption author kind and system")
        parser.add_argument("--skip-excluded", action="store_true", help="leave out the campaign's excluded raters")

    def handle(self, *args, campaign, format, out, per_clip, include_authorship, skip_excluded, **options):  # noqa: A002
        found = Campaign.objects.filter(name=campaign).first()
        if found is None:
            raise CommandError(f"no campaign named {campaign!r}")
        if format == "xlsx" and not out:
            raise CommandError("--format xlsx needs --out FILE.xlsx")
        rows = thumbs_rating_rows(campaign=found, include_authorship=include_authorship, skip_excluded=skip_excluded)
        if format == "xlsx":
            content = ratings_xlsx(rows, include_authorship=include_authorship)
        elif per_clip:
            averages = thumbs_caption_averages(rows)
            columns = average_columns(include_authorship=include_authorship)
            content = rows_csv(averages, columns) if format == "csv" else averages_json(averages, columns)
        else:
            content = (
                rows_csv(rows, rating_columns(include_authorship=include_authorship))
                if format == "csv"
                else ratings_json(rows)
            )
        if out:
            Path(out).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
            self.stderr.write(f"{len(rows)} ratings of campaign {campaign} -> {out}")
        else:
            self.stdout.write(content)

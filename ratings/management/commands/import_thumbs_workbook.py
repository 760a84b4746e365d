from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ratings.services.workbooks import WorkbookImportError, workbook_import

SUMMARY_ORDER = (
    "clips",
    "clips_created",
    "captions_created",
    "captions_added_to_campaign",
    "assignment_items_added",
    "assignment_items_completed",
    "items_with_changed_answers",
    "rated_rows",
    "unrated_rows_skipped",
    "ratings_created",
    "ratings_updated",
    "ratings_unchanged",
)


class Command(BaseCommand):
    help = (
        "Import a filled THumBS workbook for one rater of one campaign. A workbook this app exported belongs to "
        "exactly one campaign and rater and is refused anywhere else. A workbook of a study run outside the app "
        "(e.g. the study's hand-made P1 layout) goes into a campaign made for that study: --create-campaign creates "
        "it (and so does naming a campaign that does not exist yet; the command says so), with this rater as its "
        "first rater. Every wrong cell is listed and nothing is written; importing the same file again changes "
        "nothing; an edited file updates that campaign's ratings in place and says how many changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the .xlsx file")
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--rater", required=True, help="username of the rater who filled the workbook")
        parser.add_argument(
            "--create-campaign",
            action="store_true",
            help="create the campaign for a study run outside the app (refused if it exists)",
        )
        parser.add_argument(
            "--replace-newer",
            action="store_true",
            help="overwrite answers the rater gave again (on the web) after this workbook was exported",
        )
        parser.add_argument("--dry-run", action="store_true", help="check and count everything, write nothing")

    def handle(self, *args, path, campaign, rater, create_campaign, replace_newer, dry_run, **options):
        file_path = Path(path)
        if not file_path.is_file():
            raise CommandError(f"{path}: no such file")
        user = get_user_model().objects.filter(username=rater).first()
        if user is None:
            raise CommandError(f"no user named {rater!r}")
        try:
            summary = workbook_import(
                content=file_path.read_bytes(),
                file_name=file_path.name,
                campaign_name=campaign,
                rater=user,
                dry_run=dry_run,
                create_campaign=create_campaign,
                create_if_missing=True,
                replace_newer=replace_newer,
            )
        except WorkbookImportError as error:
            for line in error.errors:
                self.stderr.write(line)
            detail = error.errors[0] if len(error.errors) == 1 else "see the list above"
            raise CommandError(
                f"{file_path.name}: import refused, {len(error.errors)} error(s), nothing was written ({detail})"
            ) from None
        prefix = "dry run (nothing written): " if dry_run else ""
        self.stdout.write(
            f"{prefix}{file_path.name} ({summary['workbook_kind']}) -> campaign {campaign}, rater {rater}, "
            f"sha256 {summary['sha256'][:12]}"
        )
        if summary["campaign_created"]:
            self.stdout.write(
                f"  campaign {campaign} did not exist: created it for a study run outside the app, "
                f"with {rater} as its first rater"
            )
        for key in SUMMARY_ORDER:
            self.stdout.write(f"  {key.replace('_', ' ')}: {summary[key]}")
        for warning in summary["warnings"]:
            self.stdout.write(f"  warning: {warning}")

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ratings.models import Campaign
from ratings.services.workbooks import (
    LINKS_LOCAL,
    LINKS_URL,
    WorkbookExportError,
    rater_workbook_export,
    rater_workbook_save,
)
from ratings.workbooks.links import DEFAULT_LINK_DAYS, LinkMapError, audio_token_make, link_map_load


class Command(BaseCommand):
    help = (
        "Write each rater's THumBS workbook in the study's layout (DIR/study<id>_P<n>_<user>/P<n>_excel.xlsx with "
        "an audio/ folder, or P<n>_url.xlsx with URL links) and the same as a zip. Record IDs are the rater's own "
        "opaque item tokens. A named user not yet in the campaign is assigned to it first (the command says so)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--rater", action="append", default=[], help="username (repeatable; default: every rater)")
        parser.add_argument(
            "--links",
            choices=[LINKS_LOCAL, LINKS_URL],
            required=True,
            help="local: record IDs link to audio/<file> in the zip; url: to URLs (--url-map or --base-url)",
        )
        parser.add_argument("--out", required=True, help="output directory (created if missing)")
        parser.add_argument(
            "--url-map",
            help="CSV (record_id,url) or JSON ({record_id: url}) of cloud-drive links, keyed by the clip's id in its "
            "dataset; raters see these URLs, so use links that do not name the clip",
        )
        parser.add_argument("--base-url", help="site address for signed audio links, e.g. https://eval.example.org")
        parser.add_argument("--link-days", type=int, default=DEFAULT_LINK_DAYS, help="how long signed links work")

    def _url_for(self, *, links, url_map, base_url, link_days):
        if links != LINKS_URL:
            return None
        if url_map:
            try:
                mapping = link_map_load(Path(url_map))
            except (LinkMapError, OSError, UnicodeDecodeError) as error:
                raise CommandError(str(error)) from None

            def from_map(item):
                # The mapping file is the admin's: keyed by the clip's own id (its file name in the study).
                external_id = item.clip.external_id
                if external_id not in mapping:
                    raise WorkbookExportError(f"{url_map}: no URL for clip {external_id!r}")
                return mapping[external_id]

            return from_map
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise CommandError("--links url needs --url-map FILE or --base-url https://your.site for signed links")
        from django.urls import reverse

        return lambda item: base_url.rstrip("/") + reverse(
            "ratings:workbook_audio", args=[audio_token_make(item_token=item.token, days=link_days)]
        )

    def handle(self, *args, campaign, rater, links, out, url_map, base_url, link_days, **options):
        found = Campaign.objects.filter(name=campaign).first()
        if found is None:
            raise CommandError(f"no campaign named {campaign!r}")
        users = get_user_model().objects
        if rater:
            raters = []
            for username in rater:
                user = users.filter(username=username).first()
                if user is None:
                    raise CommandError(f"no user named {username!r}")
                raters.append(user)
        else:
            raters = [
                assignment.rater
                for assignment in found.assignments.select_related("rater").order_by("created_at", "pk")
            ]
            if not raters:
                raise CommandError(f"campaign {campaign} has no raters yet: name one with --rater")
        url_for = self._url_for(links=links, url_map=url_map, base_url=base_url, link_days=link_days)
        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        for user in raters:
            try:
                export = rater_workbook_export(campaign=found, rater=user, links=[links], url_for=url_for)
            except WorkbookExportError as error:
                raise CommandError(str(error)) from None
            if export.rater_assigned:
                self.stdout.write(f"{export.rater} was not a rater of {campaign}: assigned now (P{export.participant})")
            folder, zip_path = rater_workbook_save(export=export, directory=directory)
            self.stdout.write(
                f"P{export.participant} {export.rater}: {export.clip_count} clips, {export.caption_count} captions, "
                f"{len(export.audio)} audio files -> {folder} and {zip_path.name}"
            )
            if export.missing_audio:
                shown = ", ".join(export.missing_audio[:5]) + (" ..." if len(export.missing_audio) > 5 else "")
                self.stdout.write(
                    f"  warning: {len(export.missing_audio)} clips have no audio file to include ({shown})"
                )

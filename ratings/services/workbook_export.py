"""Export a rater's offline THumBS workbook (P1 layout) and the zip sent to them.

The rater's clips come in their assignment order, each clip's campaign captions in the rater's caption
order, blinded (text only), both from the rater projection (ratings/projection.py); the audio files are
the clips' rater copies (samples only, no metadata). Record IDs are the rater's own: the random token of
each assignment item (or, for a study run outside the app, the record ID the rater's original workbook
used), so nothing in the file (cells, links, audio file names, zip entries) names a clip, dataset, system
or author. The mapping back stays on the server. A hidden sheet keeps each item's answer version, so an import notices
answers changed on the web after the export.

A rater not yet in the campaign is assigned first when the caller allows it (the command does, and
says so); the campaign page only offers workbooks of assigned raters.
"""

import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser

from corpus.services.rater_audio import clip_rater_audio_ensure
from ratings import projection
from ratings.models import Assignment, AssignmentItem, Campaign, ThumbsRating, campaign_rater_code
from ratings.projection import RaterCaption
from ratings.services.campaigns import CampaignSetupError, assignment_sync_captions, campaign_add_raters
from ratings.workbooks.packaging import AUDIO_FOLDER, AudioEntry, audio_file_name, rater_zip_write
from ratings.workbooks.writer import SheetCaption, SheetClip, thumbs_workbook_build

LINKS_LOCAL = "local"
LINKS_URL = "url"
WORKBOOK_SUFFIX = {LINKS_LOCAL: "excel", LINKS_URL: "url"}
QUERY_CHUNK = 900  # ids per IN (...) clause, well under every backend's parameter limit
RATER_AUDIO_NAME = "rater.wav"  # audio files in the zip are rater copies: WAV, samples only


class WorkbookExportError(Exception):
    pass


def chunks(values: Sequence, size: int = QUERY_CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


@dataclass
class RaterWorkbook:
    """One rater's export: workbook files by name, the audio their local links point to, and gaps."""

    participant: int
    rater: str
    folder_name: str
    workbooks: dict[str, bytes]
    audio: list[AudioEntry] = field(default_factory=list)
    missing_audio: list[str] = field(default_factory=list)
    clip_count: int = 0
    caption_count: int = 0
    rater_assigned: bool = False


def participant_number(*, campaign: Campaign, rater: AbstractBaseUser) -> int:
    """The rater's P-number in the campaign: their place among its assignments, oldest first."""
    rater_ids = list(campaign.assignments.order_by("created_at", "pk").values_list("rater_id", flat=True))
    return rater_ids.index(rater.pk) + 1


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "rater"


def _rater_audio(item: AssignmentItem):
    """The clip's rater copy (samples only, no metadata) if its audio can be had, else None."""
    if not item.clip.audio:
        return None
    try:
        audio = clip_rater_audio_ensure(clip=item.clip)
        return audio if audio.storage.exists(audio.name) else None
    except Exception:  # missing or undecodable stored audio: listed as missing, the export goes on
        return None


def _captions_missing_from_order(assignment: Assignment) -> bool:
    """Whether campaign captions arrived after the assignment was made (the sync runs a query per item)."""
    items = assignment.items.filter(pair__isnull=True)
    ordered = {
        (clip_id, caption_id)
        for clip_id, order in items.values_list("clip_id", "caption_order")
        for caption_id in order
    }
    wanted = assignment.campaign.captions.filter(clip__assignment_items__assignment=assignment).values_list(
        "clip_id", "pk"
    )
    return any(pair not in ordered for pair in wanted)


def _sheet_rows(*, assignment: Assignment) -> list[tuple[AssignmentItem, list[RaterCaption], dict[int, ThumbsRating]]]:
    """The rater's clips and captions as the rater projection orders them, with the rater's ratings."""
    campaign = assignment.campaign
    rows = projection.thumbs_rows(assignment)
    caption_ids = [caption.caption_id for _, captions in rows for caption in captions]
    ratings: dict[int, ThumbsRating] = {}
    for chunk in chunks(caption_ids):
        ratings.update(
            (rating.caption_id, rating)
            for rating in ThumbsRating.objects.filter(
                campaign=campaign, rater_id=assignment.rater_id, caption_id__in=chunk
            )
        )
    return [(item, captions, ratings) for item, captions in rows if captions]


def rater_workbook_export(
    *,
    campaign: Campaign,
    rater: AbstractBaseUser,
    links: Sequence[str] = (LINKS_LOCAL,),
    url_for: Callable[[AssignmentItem], str] | None = None,
    assign_if_missing: bool = True,
) -> RaterWorkbook:
    """Build the rater's workbook(s): one per link kind in `links` ("local": relative paths into the
    audio folder; "url": `url_for(item)`). The rater's existing ratings in this campaign are filled in."""
    if campaign.task_type != Campaign.TaskType.THUMBS:
        raise WorkbookExportError(f"campaign {campaign.name} is a {campaign.task_type} campaign, not THumBS")
    if LINKS_URL in links and url_for is None:
        raise WorkbookExportError("URL links need a mapping file or a base URL for signed links")
    assignment = Assignment.objects.filter(campaign=campaign, rater=rater).select_related("campaign").first()
    assigned_now = False
    if assignment is None:
        if not assign_if_missing:
            raise WorkbookExportError(f"{rater} is not a rater of campaign {campaign.name}")
        try:
            assignment = campaign_add_raters(campaign=campaign, raters=[rater])[0]
        except CampaignSetupError as error:
            raise WorkbookExportError(str(error)) from None
        assigned_now = True
    if _captions_missing_from_order(assignment):
        assignment_sync_captions(assignment=assignment)
    rows = _sheet_rows(assignment=assignment)
    number = participant_number(campaign=campaign, rater=rater)
    taken: set[str] = set()
    export = RaterWorkbook(
        participant=number,
        rater=rater.get_username(),
        # The campaign's name may carry a dataset or system name, its id counts campaigns: the rater sees only
        # the study's opaque code and their P-number.
        folder_name=_safe(f"study-{campaign_rater_code(campaign.pk)}_P{number}_{rater.get_username()}"),
        workbooks={},
        clip_count=len(rows),
        caption_count=sum(len(captions) for _, captions, _ in rows),
        rater_assigned=assigned_now,
    )
    local_names: dict[int, str] = {}
    for item, _, _ in rows:
        local_names[item.pk] = audio_file_name(item.record_id, stored_name=RATER_AUDIO_NAME, taken=taken)
        if LINKS_LOCAL in links:
            audio = _rater_audio(item)
            if audio is not None:
                entry = AudioEntry(file_name=local_names[item.pk], open=lambda audio=audio: audio.open("rb"))
                export.audio.append(entry)
            else:
                export.missing_audio.append(item.record_id)
    versions = {item.record_id: item.version for item, _, _ in rows}
    for kind in links:
        sheet_clips = [
            SheetClip(
                record_id=item.record_id,
                link=f"{AUDIO_FOLDER}/{local_names[item.pk]}" if kind == LINKS_LOCAL else url_for(item),
                captions=[_sheet_caption(caption, ratings.get(caption.caption_id)) for caption in captions],
                synthesized=_synthesized_known(captions, ratings),
            )
            for item, captions, ratings in rows
        ]
        export.workbooks[f"P{number}_{WORKBOOK_SUFFIX[kind]}.xlsx"] = thumbs_workbook_build(
            clips=sheet_clips, versions=versions
        )
    return export


def _sheet_caption(caption: RaterCaption, rating: ThumbsRating | None) -> SheetCaption:
    if rating is None:
        return SheetCaption(text=caption.text)
    scores = {name: getattr(rating, name) for name in ("precision", "recall", "fluency", "conciseness", "irrelevance")}
    return SheetCaption(text=caption.text, scores=scores, comment=rating.comment)


def _synthesized_known(captions: list[RaterCaption], ratings: dict[int, ThumbsRating]) -> bool | None:
    for caption in captions:
        rating = ratings.get(caption.caption_id)
        if rating is not None and rating.synthesized:
            return rating.synthesized == ThumbsRating.Synthesized.YES
    return None


def rater_workbook_zip(*, export: RaterWorkbook, stream) -> None:
    """The rater's zip: workbook(s) at the top, audio/ beside them."""
    rater_zip_write(stream=stream, workbooks=export.workbooks, audio=export.audio)


def rater_workbook_save(*, export: RaterWorkbook, directory: Path) -> tuple[Path, Path]:
    """Write the export unpacked (DIR/<folder>/P<n>_excel.xlsx, audio/...) and as DIR/<folder>.zip."""
    folder = directory / export.folder_name
    (folder / AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
    for name, content in export.workbooks.items():
        (folder / name).write_bytes(content)
    zip_path = directory / f"{export.folder_name}.zip"
    with open(zip_path, "wb") as stream:
        rater_workbook_zip(export=export, stream=stream)
    with zipfile.ZipFile(zip_path) as archive:
        for entry in export.audio:
            (folder / AUDIO_FOLDER / entry.file_name).write_bytes(archive.read(f"{AUDIO_FOLDER}/{entry.file_name}"))
    return folder, zip_path

"""Offline THumBS workbooks: export one per rater, import filled ones (command or upload page).

Export: the rater's clips in their assignment order, each clip's campaign captions in the rater's
caption order, blinded (text only). A rater not yet in the campaign is assigned first.

Import: the Assessment sheet is parsed and checked completely before anything is written; any
error fails the whole import. Then, in one transaction and with bulk queries only:
- a campaign that does not exist yet is created (THumBS, with a dataset of the same name if needed);
- clips are found by record ID (`Clip.external_id`, e.g. "3.wav") in the campaign's dataset and
  created when missing; captions are found by exact text within their clip (whitespace-trimmed text
  as a fallback when that is unambiguous) and created when missing;
- created captions are candidates of unknown authorship. The Caption model has no "unknown" kind, so
  they are stored as `author_kind=human`, no system, `source_label=WORKBOOK_CAPTION_LABEL`, for an
  admin to correct; raters never see authorship, and exports show it only with --include-authorship;
- the captions join the campaign and the rater's assignment gets the workbook's clips (in workbook
  order) with the workbook's caption order;
- ratings are upserted on (rater, caption) with source=workbook and the file's sha256, so importing
  the same file again changes nothing and an edited file updates in place. Ratings missing from the
  file (blank rows) are left as they are, never deleted.
"""

import hashlib
import io
import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone

from annotation.models import Caption, Clip, Dataset
from config.structured_log import logged_import
from ratings.models import Assignment, AssignmentItem, Campaign, Source, ThumbsRating, WorkbookUpload
from ratings.services.campaigns import assignment_sync_captions, campaign_add_raters, campaign_create
from ratings.workbooks.packaging import AUDIO_FOLDER, AudioEntry, audio_file_name, rater_zip_write
from ratings.workbooks.reader import ParsedWorkbook, WorkbookRating, thumbs_workbook_parse
from ratings.workbooks.safety import WorkbookRejectedError, xlsx_check
from ratings.workbooks.writer import SheetCaption, SheetClip, thumbs_workbook_build

LINKS_LOCAL = "local"
LINKS_URL = "url"
WORKBOOK_SUFFIX = {LINKS_LOCAL: "excel", LINKS_URL: "url"}
WORKBOOK_CAPTION_LABEL = "workbook import (authorship unknown)"
QUERY_CHUNK = 900  # ids per IN (...) clause, well under every backend's parameter limit
RATING_VALUE_FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance", "synthesized", "comment")


class WorkbookExportError(Exception):
    pass


class WorkbookImportError(Exception):
    """The import was refused; `errors` lists every problem (cell by cell when the file was readable)."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""))
        self.errors = errors


def _chunks(values: Sequence, size: int = QUERY_CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# --- Export -----------------------------------------------------------------------------------


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


def participant_number(*, campaign: Campaign, rater: AbstractBaseUser) -> int:
    """The rater's P-number in the campaign: their place among its assignments, oldest first."""
    rater_ids = list(campaign.assignments.order_by("created_at", "pk").values_list("rater_id", flat=True))
    return rater_ids.index(rater.pk) + 1


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "rater"


def _audio_available(clip: Clip) -> bool:
    if not clip.audio:
        return False
    try:
        return clip.audio.storage.exists(clip.audio.name)
    except (OSError, ValueError):
        return False


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


def _sheet_clips(*, assignment: Assignment) -> list[tuple[Clip, list[Caption], dict[int, ThumbsRating]]]:
    campaign = assignment.campaign
    items = list(assignment.items.filter(pair__isnull=True).select_related("clip").order_by("position"))
    caption_ids = [caption_id for item in items for caption_id in item.caption_order]
    captions: dict[int, Caption] = {}
    ratings: dict[int, ThumbsRating] = {}
    for chunk in _chunks(caption_ids):
        captions.update((caption.pk, caption) for caption in campaign.captions.filter(pk__in=chunk).only("pk", "text"))
        ratings.update(
            (rating.caption_id, rating)
            for rating in ThumbsRating.objects.filter(rater_id=assignment.rater_id, caption_id__in=chunk)
        )
    rows = []
    for item in items:
        item_captions = [captions[caption_id] for caption_id in item.caption_order if caption_id in captions]
        if item_captions:
            rows.append((item.clip, item_captions, ratings))
    return rows


def rater_workbook_export(
    *,
    campaign: Campaign,
    rater: AbstractBaseUser,
    links: Sequence[str] = (LINKS_LOCAL,),
    url_for: Callable[[Clip], str] | None = None,
    assign_if_missing: bool = True,
) -> RaterWorkbook:
    """Build the rater's workbook(s): one per link kind in `links` ("local": relative paths into the
    audio folder; "url": `url_for(clip)`). Existing ratings of the rater are filled in."""
    if campaign.task_type != Campaign.TaskType.THUMBS:
        raise WorkbookExportError(f"campaign {campaign.name} is a {campaign.task_type} campaign, not THumBS")
    if LINKS_URL in links and url_for is None:
        raise WorkbookExportError("URL links need a mapping file or a base URL for signed links")
    assignment = Assignment.objects.filter(campaign=campaign, rater=rater).select_related("campaign").first()
    if assignment is None:
        if not assign_if_missing:
            raise WorkbookExportError(f"{rater} is not a rater of campaign {campaign.name}")
        assignment = campaign_add_raters(campaign=campaign, raters=[rater])[0]
    if _captions_missing_from_order(assignment):
        assignment_sync_captions(assignment=assignment)
    rows = _sheet_clips(assignment=assignment)
    number = participant_number(campaign=campaign, rater=rater)
    taken: set[str] = set()
    export = RaterWorkbook(
        participant=number,
        rater=rater.get_username(),
        folder_name=_safe(f"{campaign.name}_P{number}_{rater.get_username()}"),
        workbooks={},
        clip_count=len(rows),
        caption_count=sum(len(captions) for _, captions, _ in rows),
    )
    local_names: dict[int, str] = {}
    for clip, _, _ in rows:
        local_names[clip.pk] = audio_file_name(clip.external_id, stored_name=clip.audio.name or "", taken=taken)
        if LINKS_LOCAL in links:
            if _audio_available(clip):
                export.audio.append(
                    AudioEntry(file_name=local_names[clip.pk], open=lambda clip=clip: clip.audio.open("rb"))
                )
            else:
                export.missing_audio.append(clip.external_id)
    for kind in links:
        sheet_clips = [
            SheetClip(
                record_id=clip.external_id,
                link=f"{AUDIO_FOLDER}/{local_names[clip.pk]}" if kind == LINKS_LOCAL else url_for(clip),
                captions=[_sheet_caption(caption, ratings.get(caption.pk)) for caption in captions],
                synthesized=_synthesized_known(captions, ratings),
            )
            for clip, captions, ratings in rows
        ]
        export.workbooks[f"P{number}_{WORKBOOK_SUFFIX[kind]}.xlsx"] = thumbs_workbook_build(clips=sheet_clips)
    return export


def _sheet_caption(caption: Caption, rating: ThumbsRating | None) -> SheetCaption:
    if rating is None:
        return SheetCaption(text=caption.text)
    scores = {name: getattr(rating, name) for name in ("precision", "recall", "fluency", "conciseness", "irrelevance")}
    return SheetCaption(text=caption.text, scores=scores, comment=rating.comment)


def _synthesized_known(captions: list[Caption], ratings: dict[int, ThumbsRating]) -> bool | None:
    for caption in captions:
        rating = ratings.get(caption.pk)
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


# --- Import -----------------------------------------------------------------------------------


def workbook_parse_checked(*, content: bytes, name: str) -> ParsedWorkbook:
    """Safety checks, then parsing; raises WorkbookImportError with every problem found."""
    try:
        xlsx_check(io.BytesIO(content), max_uncompressed_bytes=settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES, name=name)
    except WorkbookRejectedError as error:
        raise WorkbookImportError([str(error)]) from None
    parsed = thumbs_workbook_parse(io.BytesIO(content), name=name)
    max_length = Clip._meta.get_field("external_id").max_length
    for clip in parsed.clips:
        if len(clip.record_id) > max_length:
            parsed.errors.append(f"{clip.cell}: {clip.record_id[:40]}… — record ID longer than {max_length} characters")
    if parsed.errors:
        raise WorkbookImportError(parsed.errors)
    return parsed


def _campaign_for_import(name: str) -> tuple[Campaign, bool]:
    try:
        validate_slug(name)
    except ValidationError:
        raise WorkbookImportError([f"campaign name {name!r} must use only letters, digits, - and _"]) from None
    campaign = Campaign.objects.filter(name=name).select_related("dataset").first()
    if campaign is not None:
        if campaign.task_type != Campaign.TaskType.THUMBS:
            raise WorkbookImportError([f"campaign {name} is a {campaign.task_type} campaign, not THumBS"])
        return campaign, False
    dataset, _ = Dataset.objects.get_or_create(
        name=name, defaults={"description": "Created by a THumBS workbook import"}
    )
    return campaign_create(name=name, dataset=dataset, task_type=Campaign.TaskType.THUMBS), True


def _clips_ensure(*, dataset: Dataset, record_ids: list[str]) -> tuple[dict[str, int], int]:
    def lookup() -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in _chunks(record_ids):
            found.update(Clip.objects.filter(dataset=dataset, external_id__in=chunk).values_list("external_id", "pk"))
        return found

    clip_ids = lookup()
    missing = [record_id for record_id in record_ids if record_id not in clip_ids]
    if missing:
        Clip.objects.bulk_create(
            [Clip(dataset=dataset, external_id=record_id, file_name=record_id) for record_id in missing]
        )
        clip_ids = lookup()
    return clip_ids, len(missing)


def _captions_ensure(*, parsed: ParsedWorkbook, clip_ids: dict[str, int]) -> tuple[dict[tuple[str, str], int], int]:
    """(record ID, caption text) -> caption id, creating the captions the clips lack."""

    def lookup() -> tuple[dict, dict]:
        exact: dict[tuple[int, str], int] = {}
        trimmed: dict[tuple[int, str], list[int]] = {}
        for chunk in _chunks(list(clip_ids.values())):
            for pk, clip_id, text in (
                Caption.objects.filter(clip_id__in=chunk).order_by("pk").values_list("pk", "clip_id", "text")
            ):
                exact.setdefault((clip_id, text), pk)
                trimmed.setdefault((clip_id, text.strip()), []).append(pk)
        return exact, trimmed

    def find(exact: dict, trimmed: dict, clip_id: int, text: str) -> int | None:
        if (clip_id, text) in exact:
            return exact[(clip_id, text)]
        candidates = trimmed.get((clip_id, text.strip()), [])
        return candidates[0] if len(candidates) == 1 else None

    exact, trimmed = lookup()
    new = [
        Caption(
            clip_id=clip_ids[clip.record_id],
            text=text,
            role=Caption.Role.CANDIDATE,
            author_kind=Caption.AuthorKind.HUMAN,
            source_label=WORKBOOK_CAPTION_LABEL,
        )
        for clip in parsed.clips
        for text in clip.captions
        if find(exact, trimmed, clip_ids[clip.record_id], text) is None
    ]
    if new:
        Caption.objects.bulk_create(new)
        exact, trimmed = lookup()
    caption_ids = {
        (clip.record_id, text): find(exact, trimmed, clip_ids[clip.record_id], text)
        for clip in parsed.clips
        for text in clip.captions
    }
    return caption_ids, len(new)


def _campaign_captions_add(*, campaign: Campaign, caption_ids: list[int]) -> int:
    present: set[int] = set()
    for chunk in _chunks(caption_ids):
        present.update(campaign.captions.filter(pk__in=chunk).values_list("pk", flat=True))
    through = Campaign.captions.through
    missing = [caption_id for caption_id in dict.fromkeys(caption_ids) if caption_id not in present]
    through.objects.bulk_create([through(campaign_id=campaign.pk, caption_id=caption_id) for caption_id in missing])
    return len(missing)


def _assignment_items_ensure(
    *, campaign: Campaign, rater: AbstractBaseUser, order: list[tuple[int, list[int]]]
) -> tuple[Assignment, dict[int, AssignmentItem], int]:
    """The rater's assignment holds every workbook clip, with the workbook's caption order appended."""
    assignment, _ = Assignment.objects.get_or_create(campaign=campaign, rater=rater)
    items = {item.clip_id: item for item in assignment.items.filter(pair__isnull=True)}
    next_position = max((item.position for item in assignment.items.all()), default=0) + 1
    new_items, changed = [], []
    for clip_id, caption_ids in order:
        item = items.get(clip_id)
        if item is None:
            new_items.append(
                AssignmentItem(
                    assignment=assignment, position=next_position, clip_id=clip_id, caption_order=caption_ids
                )
            )
            next_position += 1
            continue
        missing = [caption_id for caption_id in caption_ids if caption_id not in item.caption_order]
        if missing:
            item.caption_order = item.caption_order + missing
            changed.append(item)
    AssignmentItem.objects.bulk_create(new_items)
    AssignmentItem.objects.bulk_update(changed, ["caption_order"])
    items = {item.clip_id: item for item in assignment.items.filter(pair__isnull=True)}
    return assignment, items, len(new_items)


def _rating_values(rating: WorkbookRating) -> dict:
    synthesized = {True: ThumbsRating.Synthesized.YES, False: ThumbsRating.Synthesized.NO}.get(rating.synthesized, "")
    return {
        "precision": rating.precision,
        "recall": rating.recall,
        "fluency": rating.fluency,
        "conciseness": rating.conciseness,
        "irrelevance": rating.irrelevance,
        "synthesized": synthesized,
        "comment": rating.comment,
    }


def _ratings_upsert(
    *, parsed: ParsedWorkbook, caption_ids: dict, campaign: Campaign, rater: AbstractBaseUser, sha256: str
) -> dict[str, int]:
    wanted = {caption_ids[(rating.record_id, rating.caption)]: _rating_values(rating) for rating in parsed.ratings}
    existing: dict[int, dict] = {}
    for chunk in _chunks(list(wanted)):
        for row in ThumbsRating.objects.filter(rater=rater, caption_id__in=chunk).values(
            "caption_id", "campaign_id", "source", "workbook_sha256", *RATING_VALUE_FIELDS
        ):
            existing[row["caption_id"]] = row
    rows, created, unchanged = [], 0, 0
    for caption_id, values in wanted.items():
        old = existing.get(caption_id)
        if old is None:
            created += 1
        elif all(old[name] == values[name] for name in RATING_VALUE_FIELDS) and (
            old["campaign_id"],
            old["source"],
            old["workbook_sha256"],
        ) == (campaign.pk, Source.WORKBOOK, sha256):
            unchanged += 1
            continue
        rows.append(
            ThumbsRating(
                rater=rater,
                caption_id=caption_id,
                campaign=campaign,
                source=Source.WORKBOOK,
                workbook_sha256=sha256,
                **values,
            )
        )
    ThumbsRating.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["rater", "caption"],
        update_fields=["campaign", *RATING_VALUE_FIELDS, "source", "workbook_sha256", "updated_at"],
    )
    return {"ratings_created": created, "ratings_updated": len(rows) - created, "ratings_unchanged": unchanged}


def _items_complete(*, rater: AbstractBaseUser, items: list[AssignmentItem]) -> int:
    """Mark items done whose every caption now has a rating of this rater (as the web page does)."""
    open_items = [item for item in items if item.completed_at is None and item.caption_order]
    caption_ids = [caption_id for item in open_items for caption_id in item.caption_order]
    rated: set[int] = set()
    for chunk in _chunks(caption_ids):
        rated.update(
            ThumbsRating.objects.filter(rater=rater, caption_id__in=chunk).values_list("caption_id", flat=True)
        )
    done = [item.pk for item in open_items if all(caption_id in rated for caption_id in item.caption_order)]
    now = timezone.now()
    for chunk in _chunks(done):
        AssignmentItem.objects.filter(pk__in=chunk).update(completed_at=now)
    return len(done)


@logged_import("thumbs_workbook")
def workbook_import(
    *, content: bytes, file_name: str, campaign_name: str, rater: AbstractBaseUser, dry_run: bool = False
) -> dict:
    """Import a filled workbook for `rater` into campaign `campaign_name` (see the module docstring).

    Returns a summary (counts, warnings); raises WorkbookImportError, with nothing written, when the
    file is refused or any cell is wrong. A dry run does all the work and then rolls it back.
    """
    sha256 = hashlib.sha256(content).hexdigest()
    parsed = workbook_parse_checked(content=content, name=file_name)
    with transaction.atomic():
        campaign, campaign_created = _campaign_for_import(campaign_name)
        clip_ids, clips_created = _clips_ensure(
            dataset=campaign.dataset, record_ids=[clip.record_id for clip in parsed.clips]
        )
        caption_ids, captions_created = _captions_ensure(parsed=parsed, clip_ids=clip_ids)
        order = [
            (clip_ids[clip.record_id], [caption_ids[(clip.record_id, text)] for text in clip.captions])
            for clip in parsed.clips
        ]
        captions_added = _campaign_captions_add(campaign=campaign, caption_ids=[pk for _, pks in order for pk in pks])
        _, items, items_added = _assignment_items_ensure(campaign=campaign, rater=rater, order=order)
        counts = _ratings_upsert(parsed=parsed, caption_ids=caption_ids, campaign=campaign, rater=rater, sha256=sha256)
        items_completed = _items_complete(rater=rater, items=[items[clip_id] for clip_id, _ in order])
        if dry_run:
            transaction.set_rollback(True)
    return {
        "file": file_name,
        "sha256": sha256,
        "campaign": campaign_name,
        "campaign_created": campaign_created,
        "rater": rater.get_username(),
        "dry_run": dry_run,
        "clips": len(parsed.clips),
        "clips_created": clips_created,
        "captions_created": captions_created,
        "captions_added_to_campaign": captions_added,
        "assignment_items_added": items_added,
        "assignment_items_completed": items_completed,
        "rated_rows": parsed.rated_rows,
        "unrated_rows_skipped": parsed.unrated_rows,
        **counts,
        "warnings": parsed.warnings,
    }


# --- Uploads (web page) ------------------------------------------------------------------------


def workbook_upload_create(
    *, uploaded_file, campaign_name: str, rater: AbstractBaseUser, uploaded_by: AbstractBaseUser
) -> WorkbookUpload:
    """Keep the uploaded file (whatever happens next) as a pending WorkbookUpload."""
    content = b"".join(uploaded_file.chunks())
    upload = WorkbookUpload(
        original_name=Path(uploaded_file.name).name[:255],
        sha256=hashlib.sha256(content).hexdigest(),
        campaign_name=campaign_name,
        rater=rater,
        uploaded_by=uploaded_by,
    )
    upload.file.save(Path(uploaded_file.name).name, ContentFile(content), save=False)
    upload.save()
    return upload


def workbook_upload_import(*, upload: WorkbookUpload, dry_run: bool = False) -> WorkbookUpload:
    """Import a kept upload and record the outcome on it (status, every error, or the summary)."""
    with upload.file.open("rb") as handle:
        content = handle.read()
    try:
        summary = workbook_import(
            content=content,
            file_name=upload.original_name,
            campaign_name=upload.campaign_name,
            rater=upload.rater,
            dry_run=dry_run,
        )
    except WorkbookImportError as error:
        upload.status, upload.errors, upload.summary = WorkbookUpload.Status.FAILED, error.errors, {}
    else:
        upload.status = WorkbookUpload.Status.PENDING if dry_run else WorkbookUpload.Status.IMPORTED
        upload.errors, upload.summary = [], summary
    upload.save(update_fields=["status", "errors", "summary", "updated_at"])
    return upload

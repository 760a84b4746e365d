"""Import a filled THumBS workbook for one rater into one campaign (command or upload page).

Which campaign and which rater (the rule; docs/studies.md, "Offline workbooks"):

1. A workbook exported by this app has the rater's item tokens as record IDs. They resolve to exactly
   one (campaign, rater), and the import must name that campaign and that rater or it is refused:
   a workbook can never land in another campaign or on another rater. It never creates anything.
2. A workbook of a study run outside the app (none of its record IDs is a token, e.g. the shared
   P1_excel.xlsx) goes into a campaign of origin "outside" to which the rater is assigned. A
   campaign created in the app refuses it (its workbooks carry tokens).
   Creating the campaign is only possible with such a workbook: explicitly with `--create-campaign`
   or the upload page's checkbox (refused if the campaign exists), and from the command line also
   when the named campaign does not exist yet (the command prints that it created it). Creating the
   campaign makes the importing account its first rater. Further raters are assigned on the campaign
   page (or by exporting a workbook for them). Outside data never enters the corpus: the campaign
   gets a new dataset of its own, named after it, and a name that is already a dataset's is refused,
   so outside record IDs can only ever match the clips its own workbooks created.
3. A file mixing tokens and other record IDs is refused, naming the cells.

Then, in one transaction, with bulk queries only, after the whole file was checked:
- outside workbooks: clips are found by record ID (`Clip.external_id`) in the campaign's dataset and
  created when missing; captions by exact text within their clip (trimmed text when unambiguous) and
  created when missing (as candidates of unknown authorship: `author_kind=human`, no system,
  `source_label=WORKBOOK_CAPTION_LABEL`; raters never see authorship); the rater's items get the
  workbook's clips and caption order, and remember the record ID the rater's workbook used;
- app workbooks: each clip is the item the token names; a caption text that is not one of that
  item's captions is an error (the workbook was edited);
- ratings are upserted on (campaign, rater, caption): importing the same file again changes nothing,
  an edited file updates that campaign's ratings in place, nothing of another campaign is touched; a rating
  whose values the file repeats (a web answer the exported workbook carried, a row an earlier workbook gave)
  is left exactly as it is, its source and workbook hash included: only changed values are written, and each
  change has its audit event;
  ratings missing from the file (blank rows) are left alone, never deleted;
- an item whose answer changed gets a new version and an audit event, so a web page still open on the
  old answer cannot overwrite it silently; and an app workbook whose item was answered again (on the
  web) after the export is refused for that item unless `replace_newer` is set.
"""

import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common.structured_log import logged_import
from corpus.models import Caption, Clip, Dataset
from ratings.models import Assignment, AssignmentItem, Campaign, ItemEvent, Source, ThumbsRating, WorkbookUpload
from ratings.services.campaigns import campaign_create, campaign_name_clash
from ratings.services.judgements import RATING_VALUE_FIELDS, thumbs_answer
from ratings.services.workbook_export import chunks
from ratings.workbooks.reader import ParsedWorkbook, WorkbookRating, thumbs_workbook_parse
from ratings.workbooks.safety import WorkbookRejectedError, xlsx_check

WORKBOOK_CAPTION_LABEL = "workbook import (authorship unknown)"
PATH_SEPARATOR = re.compile(r"[/\\]")
OUTSIDE_DATASET_DESCRIPTION = "Created by a THumBS workbook import"


class WorkbookImportError(Exception):
    """The import was refused; `errors` lists every problem (cell by cell when the file was readable)."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""))
        self.errors = errors


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
        elif PATH_SEPARATOR.search(clip.record_id):
            # A record ID names the clip's file in a rater's audio folder: a separator would make it a path.
            parsed.errors.append(
                f"{clip.cell}: {clip.record_id!r} — a record ID must not contain a path separator (/ or \\)"
            )
    if parsed.errors:
        raise WorkbookImportError(parsed.errors)
    return parsed


# --- Which campaign, which rater -------------------------------------------------------------------------


@dataclass
class ImportTarget:
    campaign: Campaign
    campaign_created: bool
    # App workbooks: record ID -> the item it names. Outside workbooks: empty.
    items_by_token: dict[str, AssignmentItem]
    rater_assigned: bool = False

    @property
    def is_app_workbook(self) -> bool:
        return bool(self.items_by_token)


def _items_by_token(record_ids: list[str]) -> dict[str, AssignmentItem]:
    found: dict[str, AssignmentItem] = {}
    for chunk in chunks(record_ids):
        for item in AssignmentItem.objects.filter(token__in=chunk).select_related("assignment__campaign", "clip"):
            found[item.token] = item
    return found


def _app_target(parsed: ParsedWorkbook, items: dict, *, campaign_name: str, rater, create_campaign: bool):
    assignments = {item.assignment for item in items.values()}
    if len(assignments) > 1:
        cells = ", ".join(clip.cell for clip in parsed.clips[:5])
        raise WorkbookImportError(
            [f"record IDs from more than one rater's workbook ({cells}, ...): import each rater's file"]
        )
    assignment = assignments.pop()
    campaign = assignment.campaign
    errors = []
    if create_campaign:
        errors.append(
            f"this workbook was exported from campaign {campaign.name}: it cannot create a campaign; "
            "import it into that campaign"
        )
    if campaign.name != campaign_name or assignment.rater_id != rater.pk:
        errors.append(
            f"this workbook was exported for rater {assignment.rater.get_username()} of campaign {campaign.name}; "
            f"it cannot be imported for rater {rater.get_username()} of campaign {campaign_name} "
            "(its record IDs belong to that rater and campaign only)"
        )
    if campaign.task_type != Campaign.TaskType.THUMBS:
        errors.append(f"campaign {campaign.name} is a {campaign.task_type} campaign, not THumBS")
    if not campaign.is_active:
        errors.append(f"campaign {campaign.name} is closed: reopen it on the campaign page to import into it")
    if errors:
        raise WorkbookImportError(errors)
    return ImportTarget(campaign=campaign, campaign_created=False, items_by_token=items)


def _outside_target(
    parsed: ParsedWorkbook, *, campaign_name: str, rater, create_campaign: bool, create_if_missing: bool
):
    try:
        validate_slug(campaign_name)
    except ValidationError:
        raise WorkbookImportError([f"campaign name {campaign_name!r} must use only letters, digits, - and _"]) from None
    campaign = Campaign.objects.filter(name=campaign_name).select_related("dataset").first()
    example = parsed.clips[0]
    if campaign is None and (clash := campaign_name_clash(campaign_name)):
        raise WorkbookImportError([clash])
    if campaign is None:
        if not (create_campaign or create_if_missing):
            raise WorkbookImportError(
                [
                    f"no campaign named {campaign_name}: to start one for a study run outside the app from this "
                    "workbook, tick 'create the campaign' (command: --create-campaign)"
                ]
            )
        dataset_name = Dataset.objects.filter(name__iexact=campaign_name).values_list("name", flat=True).first()
        if dataset_name is not None:
            raise WorkbookImportError(
                [
                    f"campaign name {campaign_name!r} is the name of an existing dataset ({dataset_name!r}; names "
                    "are compared without case): a study run outside the "
                    "app gets a dataset of its own, named after its campaign, and never adds to another one; "
                    "choose another campaign name"
                ]
            )
        dataset = Dataset.objects.create(name=campaign_name, description=OUTSIDE_DATASET_DESCRIPTION)
        campaign = campaign_create(
            name=campaign_name, dataset=dataset, task_type=Campaign.TaskType.THUMBS, origin=Campaign.Origin.OUTSIDE
        )
        Assignment.objects.create(campaign=campaign, rater=rater)
        return ImportTarget(campaign=campaign, campaign_created=True, items_by_token={}, rater_assigned=True)
    errors = []
    if create_campaign:
        errors.append(f"campaign {campaign_name} exists already: choose it instead of creating it, or pick a new name")
    if campaign.task_type != Campaign.TaskType.THUMBS:
        errors.append(f"campaign {campaign_name} is a {campaign.task_type} campaign, not THumBS")
    elif campaign.origin != Campaign.Origin.OUTSIDE:
        errors.append(
            f"{example.cell}: record ID {example.record_id!r} was not issued by this app, but campaign {campaign_name} "
            "was created in the app and takes only its own exported workbooks (download the rater's workbook from "
            "the campaign page); a study run outside the app needs a campaign of its own"
        )
    elif not campaign.is_active:
        errors.append(f"campaign {campaign_name} is closed: reopen it on the campaign page to import into it")
    elif not _has_own_dataset(campaign):
        errors.append(
            f"campaign {campaign_name} keeps its data in dataset {campaign.dataset.name}, which other campaigns or "
            "corpus data use: outside record IDs could match that dataset's clips, so nothing more is imported "
            "into it; create a new campaign for this study"
        )
    elif not Assignment.objects.filter(campaign=campaign, rater=rater).exists():
        errors.append(
            f"{rater.get_username()} is not a rater of campaign {campaign_name}: add them on the campaign page "
            "(or export a workbook for them) first"
        )
    if errors:
        raise WorkbookImportError(errors)
    return ImportTarget(campaign=campaign, campaign_created=False, items_by_token={})


def _has_own_dataset(campaign: Campaign) -> bool:
    """An outside campaign's dataset is its own: named after it, used by no other campaign (campaigns made
    before outside data got datasets of their own may sit on a corpus dataset)."""
    dataset = campaign.dataset
    return dataset.name == campaign.name and not dataset.campaigns.exclude(pk=campaign.pk).exists()


def import_target_resolve(
    parsed: ParsedWorkbook, *, campaign_name: str, rater, create_campaign: bool, create_if_missing: bool
) -> ImportTarget:
    """Apply the rule of the module docstring; raises WorkbookImportError saying what to do instead."""
    record_ids = [clip.record_id for clip in parsed.clips]
    items = _items_by_token(record_ids)
    if items and len(items) != len(record_ids):
        strays = [clip for clip in parsed.clips if clip.record_id not in items]
        raise WorkbookImportError(
            [
                f"{clip.cell}: {clip.record_id!r} — not a record ID of this exported workbook (was it edited?)"
                for clip in strays
            ]
        )
    if items:
        return _app_target(parsed, items, campaign_name=campaign_name, rater=rater, create_campaign=create_campaign)
    return _outside_target(
        parsed,
        campaign_name=campaign_name,
        rater=rater,
        create_campaign=create_campaign,
        create_if_missing=create_if_missing,
    )


# --- Outside workbooks: clips, captions and items ---------------------------------------------------------


def _clips_ensure(*, dataset: Dataset, record_ids: list[str]) -> tuple[dict[str, int], int]:
    def lookup() -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in chunks(record_ids):
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


class _CaptionFinder:
    """Caption ids by (clip id, text): exact text first, else trimmed text when that is unambiguous."""

    def __init__(self, rows):
        self.exact: dict[tuple[int, str], int] = {}
        self.trimmed: dict[tuple[int, str], list[int]] = {}
        for pk, clip_id, text in rows:
            self.exact.setdefault((clip_id, text), pk)
            self.trimmed.setdefault((clip_id, text.strip()), []).append(pk)

    def find(self, clip_id: int, text: str) -> int | None:
        if (clip_id, text) in self.exact:
            return self.exact[(clip_id, text)]
        candidates = self.trimmed.get((clip_id, text.strip()), [])
        return candidates[0] if len(candidates) == 1 else None


def _captions_ensure(*, parsed: ParsedWorkbook, clip_ids: dict[str, int]) -> tuple[dict[tuple[str, str], int], int]:
    """(record ID, caption text) -> caption id, creating the captions the clips lack."""

    def lookup() -> _CaptionFinder:
        rows = []
        for chunk in chunks(list(clip_ids.values())):
            rows += Caption.objects.filter(clip_id__in=chunk).order_by("pk").values_list("pk", "clip_id", "text")
        return _CaptionFinder(rows)

    finder = lookup()
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
        if finder.find(clip_ids[clip.record_id], text) is None
    ]
    if new:
        Caption.objects.bulk_create(new)
        finder = lookup()
    caption_ids = {
        (clip.record_id, text): finder.find(clip_ids[clip.record_id], text)
        for clip in parsed.clips
        for text in clip.captions
    }
    return caption_ids, len(new)


def _campaign_captions_add(*, campaign: Campaign, caption_ids: list[int]) -> int:
    present: set[int] = set()
    for chunk in chunks(caption_ids):
        present.update(campaign.captions.filter(pk__in=chunk).values_list("pk", flat=True))
    through = Campaign.captions.through
    missing = [caption_id for caption_id in dict.fromkeys(caption_ids) if caption_id not in present]
    through.objects.bulk_create([through(campaign_id=campaign.pk, caption_id=caption_id) for caption_id in missing])
    return len(missing)


def _outside_items_ensure(
    *, campaign: Campaign, rater: AbstractBaseUser, order: list[tuple[str, int, list[int]]]
) -> tuple[dict[str, AssignmentItem], int]:
    """The rater's items hold every workbook clip (record ID, clip id, caption ids), with the workbook's
    caption order appended and the record ID the rater's workbook used."""
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    items = {item.clip_id: item for item in assignment.items.filter(pair__isnull=True)}
    next_position = max((item.position for item in items.values()), default=0) + 1
    new_items, changed = [], []
    for record_id, clip_id, caption_ids in order:
        item = items.get(clip_id)
        if item is None:
            new_items.append(
                AssignmentItem(
                    assignment=assignment,
                    position=next_position,
                    clip_id=clip_id,
                    caption_order=caption_ids,
                    outside_record_id=record_id,
                )
            )
            next_position += 1
            continue
        missing = [caption_id for caption_id in caption_ids if caption_id not in item.caption_order]
        if missing or not item.outside_record_id:
            item.caption_order = item.caption_order + missing
            item.outside_record_id = item.outside_record_id or record_id
            changed.append(item)
    AssignmentItem.objects.bulk_create(new_items)
    AssignmentItem.objects.bulk_update(changed, ["caption_order", "outside_record_id"])
    by_clip = {item.clip_id: item for item in assignment.items.filter(pair__isnull=True).select_related("assignment")}
    return {record_id: by_clip[clip_id] for record_id, clip_id, _ in order}, len(new_items)


def _app_caption_ids(parsed: ParsedWorkbook, items: dict[str, AssignmentItem]) -> dict[tuple[str, str], int]:
    """(record ID, text) -> caption id among the captions of the item the token names; errors otherwise."""
    caption_ids = [caption_id for item in items.values() for caption_id in item.caption_order]
    rows = []
    for chunk in chunks(caption_ids):
        rows += Caption.objects.filter(pk__in=chunk).values_list("pk", "clip_id", "text")
    finder = _CaptionFinder(rows)
    result, errors = {}, []
    for clip in parsed.clips:
        item = items[clip.record_id]
        for text in clip.captions:
            caption_id = finder.find(item.clip_id, text)
            if caption_id is None or caption_id not in item.caption_order:
                errors.append(f"{clip.cell}: caption {text[:50]!r} is not one of this clip's captions (was it edited?)")
            result[(clip.record_id, text)] = caption_id
    if errors:
        raise WorkbookImportError(errors)
    return result


# --- Ratings, versions, completion ----------------------------------------------------------------------


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


def _existing_ratings(*, campaign: Campaign, rater, caption_ids: list[int]) -> dict[int, dict]:
    existing: dict[int, dict] = {}
    for chunk in chunks(caption_ids):
        for row in ThumbsRating.objects.filter(campaign=campaign, rater=rater, caption_id__in=chunk).values(
            "caption_id", "source", "workbook_sha256", *RATING_VALUE_FIELDS
        ):
            existing[row["caption_id"]] = row
    return existing


def _same_values(old: dict, new: dict) -> bool:
    return all(old[name] == new[name] for name in RATING_VALUE_FIELDS)


def _newer_answers_check(*, parsed, wanted, existing, items_by_record, rating_records, replace_newer) -> None:
    """App workbooks: refuse to overwrite an answer given again after the export (unless asked to)."""
    if replace_newer or not parsed.export_versions:
        return
    captions_by_record: dict[str, list[int]] = {}
    for caption_id, record_id in rating_records.items():
        captions_by_record.setdefault(record_id, []).append(caption_id)
    cells = {clip.record_id: clip.cell for clip in parsed.clips}
    errors = []
    for record_id, item in items_by_record.items():
        exported = parsed.export_versions.get(record_id)
        if exported is None or item.version <= exported:
            continue
        changed = [
            caption_id
            for caption_id in captions_by_record.get(record_id, [])
            if caption_id in existing and not _same_values(existing[caption_id], wanted[caption_id])
        ]
        if changed:
            errors.append(
                f"{cells[record_id]}: this clip was answered again after the workbook was exported (answer version "
                f"{item.version}, the workbook has version {exported}); export a fresh workbook, or import with "
                "'replace newer answers'"
            )
    if errors:
        raise WorkbookImportError(errors)


def _ratings_upsert(*, wanted, existing, campaign, rater, sha256) -> tuple[dict[str, int], set[int]]:
    """Upsert on (campaign, rater, caption); returns the counts and the caption ids whose values changed."""
    rows, created, unchanged, changed_values = [], 0, 0, set()
    for caption_id, values in wanted.items():
        old = existing.get(caption_id)
        if old is None:
            created += 1
            changed_values.add(caption_id)
        elif _same_values(old, values):
            # The file repeats the answer: nothing changes, source included. A web answer the exported workbook
            # carried stays a web answer (rewriting its source, with no audit event, misstated where it came from).
            unchanged += 1
            continue
        else:
            changed_values.add(caption_id)
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
        unique_fields=["campaign", "rater", "caption"],
        update_fields=[*RATING_VALUE_FIELDS, "source", "workbook_sha256", "updated_at"],
    )
    counts = {"ratings_created": created, "ratings_updated": len(rows) - created, "ratings_unchanged": unchanged}
    return counts, changed_values


def _items_record(*, items: list[AssignmentItem], existing: dict, wanted: dict, changed_captions: set[int]) -> int:
    """New version + audit event for each item whose answer changed; returns how many items changed."""
    changed_items, events = [], []
    now_values = {**existing, **wanted}
    for item in items:
        if not any(caption_id in changed_captions for caption_id in item.caption_order):
            continue
        before = thumbs_answer(caption_order=item.caption_order, ratings=existing)
        after = thumbs_answer(caption_order=item.caption_order, ratings=now_values)
        item.version += 1
        changed_items.append(item)
        events.append(
            ItemEvent(
                item=item, kind=ItemEvent.Kind.WORKBOOK, version=item.version, previous_answer=before, answer=after
            )
        )
    # One UPDATE per chunk (bulk_update would write a CASE per row); _items_lock holds these rows.
    for chunk in chunks([item.pk for item in changed_items]):
        AssignmentItem.objects.filter(pk__in=chunk).update(version=F("version") + 1)
    ItemEvent.objects.bulk_create(events, batch_size=500)
    return len(changed_items)


def _items_lock(*, campaign: Campaign, rater, items: Sequence[AssignmentItem]) -> None:
    """Lock the rater's items in this campaign (as a web submit does) and refresh their versions, so a submit
    arriving during the import waits for it and then sees the new version (and gets a 409)."""
    locked = AssignmentItem.objects.select_for_update().filter(assignment__campaign=campaign, assignment__rater=rater)
    versions = dict(locked.values_list("pk", "version"))
    for item in items:
        item.version = versions[item.pk]


def _items_complete(*, campaign: Campaign, rater: AbstractBaseUser, items: Sequence[AssignmentItem]) -> int:
    """Mark items done whose every caption now has a rating of this rater in this campaign."""
    open_items = [item for item in items if item.completed_at is None and item.caption_order]
    caption_ids = [caption_id for item in open_items for caption_id in item.caption_order]
    rated: set[int] = set()
    for chunk in chunks(caption_ids):
        rated.update(
            ThumbsRating.objects.filter(campaign=campaign, rater=rater, caption_id__in=chunk).values_list(
                "caption_id", flat=True
            )
        )
    done = [item.pk for item in open_items if all(caption_id in rated for caption_id in item.caption_order)]
    now = timezone.now()
    for chunk in chunks(done):
        AssignmentItem.objects.filter(pk__in=chunk).update(completed_at=now)
    return len(done)


@logged_import("thumbs_workbook")
def workbook_import(
    *,
    content: bytes,
    file_name: str,
    campaign_name: str,
    rater: AbstractBaseUser,
    dry_run: bool = False,
    create_campaign: bool = False,
    create_if_missing: bool = False,
    replace_newer: bool = False,
) -> dict:
    """Import a filled workbook for `rater` into campaign `campaign_name` (see the module docstring).

    Returns a summary (counts, warnings); raises WorkbookImportError, with nothing written, when the
    file is refused or any cell is wrong. A dry run does all the work and then rolls it back.
    """
    sha256 = hashlib.sha256(content).hexdigest()
    parsed = workbook_parse_checked(content=content, name=file_name)
    clips_created = captions_created = captions_added = items_added = 0
    with transaction.atomic():
        target = import_target_resolve(
            parsed,
            campaign_name=campaign_name,
            rater=rater,
            create_campaign=create_campaign,
            create_if_missing=create_if_missing,
        )
        campaign = target.campaign
        if target.is_app_workbook:
            caption_ids = _app_caption_ids(parsed, target.items_by_token)
            items_by_record = target.items_by_token
        else:
            clip_ids, clips_created = _clips_ensure(
                dataset=campaign.dataset, record_ids=[clip.record_id for clip in parsed.clips]
            )
            caption_ids, captions_created = _captions_ensure(parsed=parsed, clip_ids=clip_ids)
            order = [
                (
                    clip.record_id,
                    clip_ids[clip.record_id],
                    [caption_ids[(clip.record_id, text)] for text in clip.captions],
                )
                for clip in parsed.clips
            ]
            captions_added = _campaign_captions_add(
                campaign=campaign, caption_ids=[pk for _, _, pks in order for pk in pks]
            )
            items_by_record, items_added = _outside_items_ensure(campaign=campaign, rater=rater, order=order)
        _items_lock(campaign=campaign, rater=rater, items=list(items_by_record.values()))
        wanted = {caption_ids[(rating.record_id, rating.caption)]: _rating_values(rating) for rating in parsed.ratings}
        rating_records = {
            caption_ids[(rating.record_id, rating.caption)]: rating.record_id for rating in parsed.ratings
        }
        existing = _existing_ratings(campaign=campaign, rater=rater, caption_ids=list(wanted))
        _newer_answers_check(
            parsed=parsed,
            wanted=wanted,
            existing=existing,
            items_by_record=items_by_record,
            rating_records=rating_records,
            replace_newer=replace_newer,
        )
        counts, changed_captions = _ratings_upsert(
            wanted=wanted, existing=existing, campaign=campaign, rater=rater, sha256=sha256
        )
        items = list(items_by_record.values())
        items_changed = _items_record(items=items, existing=existing, wanted=wanted, changed_captions=changed_captions)
        items_completed = _items_complete(campaign=campaign, rater=rater, items=items)
        if dry_run:
            transaction.set_rollback(True)
    return {
        "file": file_name,
        "sha256": sha256,
        "campaign": campaign.name,
        "campaign_created": target.campaign_created,
        "rater": rater.get_username(),
        "rater_assigned": target.rater_assigned,
        "workbook_kind": "exported by this app" if target.is_app_workbook else "study run outside the app",
        "dry_run": dry_run,
        "clips": len(parsed.clips),
        "clips_created": clips_created,
        "captions_created": captions_created,
        "captions_added_to_campaign": captions_added,
        "assignment_items_added": items_added,
        "assignment_items_completed": items_completed,
        "items_with_changed_answers": items_changed,
        "rated_rows": parsed.rated_rows,
        "unrated_rows_skipped": parsed.unrated_rows,
        **counts,
        "warnings": parsed.warnings,
    }


# --- Uploads (web page) ------------------------------------------------------------------------------------


def workbook_upload_create(
    *,
    uploaded_file,
    campaign_name: str,
    rater: AbstractBaseUser,
    uploaded_by: AbstractBaseUser,
    create_campaign: bool = False,
    replace_newer: bool = False,
) -> WorkbookUpload:
    """Keep the uploaded file (whatever happens next) as a pending WorkbookUpload."""
    content = b"".join(uploaded_file.chunks())
    upload = WorkbookUpload(
        original_name=Path(uploaded_file.name).name[:255],
        sha256=hashlib.sha256(content).hexdigest(),
        campaign_name=campaign_name,
        rater=rater,
        uploaded_by=uploaded_by,
        create_campaign=create_campaign,
        replace_newer=replace_newer,
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
            create_campaign=upload.create_campaign,
            replace_newer=upload.replace_newer,
        )
    except WorkbookImportError as error:
        upload.status, upload.errors, upload.summary = WorkbookUpload.Status.FAILED, error.errors, {}
    else:
        upload.status = WorkbookUpload.Status.PENDING if dry_run else WorkbookUpload.Status.IMPORTED
        upload.errors, upload.summary = [], summary
    upload.save(update_fields=["status", "errors", "summary", "updated_at"])
    return upload


CELL_ERROR = re.compile(r"^[^!:]+![A-Z]{1,3}\d+:")


def upload_error_kind(errors: list[str]) -> str:
    """How to title a failed import: "cells" (every error names a cell), "file" (the file itself could not
    be used: not a workbook, too large, no Assessment sheet) or "rule" (campaign or rater refused it)."""
    if not errors:
        return ""
    if all(CELL_ERROR.match(error) for error in errors):
        return "cells"
    file_markers = (
        "cannot be read",
        "not an Excel",
        "no sheet named",
        "no header row",
        "no caption rows",
        "zip",
        "xlsx",
    )
    if any(marker in error for error in errors for marker in file_markers):
        return "file"
    return "rule"

"""AudioCaps-F expert annotations: import as GOLD annotations (or as one annotator's submissions).

The file is read and checked by audiocaps_f_parsing.py and written by audiocaps_f_writing.py; this module
decides, before anything is written, which clips are imported with the asked status and which are held back as
submitted. The export is audiocaps_f_exporting.py.

The editor's checks run on the file: spans past a clip's end, overlapping occurrences and relations the spans
contradict are refused. Attributes of one event that the tag library calls opposites or different counts
(which gold publishing refuses) are flagged in the summary, naming clip, event and attributes; a gold import
keeps such clips gold by default, because the released AudioCaps-F gold holds them (75 clips with opposites,
1 with two counts) and import -> export must give the file back, or imports them as submitted annotations
(not gold, for a reviewer) with `conflicting_as="submitted"`. Two events of a clip that gold publishing calls
one sound (its gold_duplicate check) stop a gold import, or with `duplicates_as="submitted"` put the clip among
the submitted annotations, flagged; only clips whose events all have spans are checked, the others are
counted in the summary (audiocaps_f_checks.py says why).
"""

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import ExpertAnnotation
from annotation.selectors import attribute_vocabulary
from annotation.services.annotation_checks import CLIP_END_SLACK_SECONDS
from annotation.services.audiocaps_f_checks import (
    CONFLICTING_AS,
    DUPLICATES_AS,
    attribute_conflicts_flag,
    attribute_conflicts_note,
    duplicates_checked,
    gold_duplicates_flag,
    repeated_names_flag,
)
from annotation.services.audiocaps_f_parsing import ClipAnnotationSpec, audiocaps_f_parse
from annotation.services.audiocaps_f_writing import annotations_ensure, attribute_counts, clips_ensure
from annotation.vocabulary import AttributeVocabulary
from common.structured_log import logged_import
from corpus.models import Clip
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_get_or_create,
    dataset_name_validate,
    import_account_get_or_create,
    json_file_load,
)

EXPERT_USERNAME = "audiocaps-f-experts"
EXPERT_ROLE = "annotator"

IMPORT_STATUSES = (ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUBMITTED)


def audiocaps_f_import_from_path(
    *,
    path: Path | str,
    dataset_name: str,
    annotator_username: str | None = None,
    status: str | None = None,
    replace_gold: bool = False,
    conflicting_as: str = ExpertAnnotation.Status.GOLD,
    duplicates_as: str = DUPLICATES_AS[0],
) -> ImportSummary:
    data, source_name = json_file_load(path=path)
    return audiocaps_f_import(
        data=data,
        dataset_name=dataset_name,
        source_name=source_name,
        annotator_username=annotator_username,
        status=status,
        replace_gold=replace_gold,
        conflicting_as=conflicting_as,
        duplicates_as=duplicates_as,
    )


@logged_import("audiocaps_f")
def audiocaps_f_import(
    *,
    data: Any,
    dataset_name: str,
    source_name: str,
    annotator_username: str | None = None,
    status: str | None = None,
    replace_gold: bool = False,
    conflicting_as: str = ExpertAnnotation.Status.GOLD,
    duplicates_as: str = DUPLICATES_AS[0],
) -> ImportSummary:
    """Import the file as gold annotations of the expert account (default), or as `annotator_username`'s
    annotations with `status` (default submitted when an annotator is named). A new gold annotation
    supersedes the clip's previous gold one (one gold per clip) only with `replace_gold`: otherwise a clip
    whose gold another account (a reviewer) published is refused, naming it, and nothing is written.
    `conflicting_as`: the status, in a gold import, of clips whose attributes the tag library contradicts
    (flagged in the summary either way). `duplicates_as`: "refuse" stops a gold import at a clip holding two
    events of one sound; "submitted" imports such clips as submitted, flagged in the summary."""
    dataset_name_validate(name=dataset_name)
    if status is None:
        status = ExpertAnnotation.Status.SUBMITTED if annotator_username else ExpertAnnotation.Status.GOLD
    if status not in IMPORT_STATUSES:
        raise ImportDataError(f'status "{status}": imported annotations are {" or ".join(IMPORT_STATUSES)}')
    if conflicting_as not in CONFLICTING_AS:
        raise ImportDataError(
            f'conflicting_as "{conflicting_as}": clips with conflicting attributes are imported as '
            f"{' or '.join(CONFLICTING_AS)}"
        )
    if duplicates_as not in DUPLICATES_AS:
        raise ImportDataError(
            f'duplicates_as "{duplicates_as}": clips with duplicate events are either refused ("refuse") or '
            'imported as "submitted"'
        )
    annotator = _named_annotator(annotator_username) if annotator_username else None
    specs = audiocaps_f_parse(data=data, source_name=source_name)
    summary = ImportSummary(source_name=source_name)
    # One transaction, the embedding included: a refused file leaves nothing, not even the phrase vectors' cache.
    with transaction.atomic():
        dataset = dataset_get_or_create(name=dataset_name, summary=summary)
        if annotator is None:
            annotator = import_account_get_or_create(
                username=EXPERT_USERNAME, role=EXPERT_ROLE, summary=summary, kind="annotator accounts"
            )
        clips = clips_ensure(dataset, specs, summary)
        library = attribute_vocabulary()
        held_back = _checks_before_writing(
            specs,
            clips,
            library,
            summary,
            annotator=annotator,
            source_name=source_name,
            status=status,
            replace_gold=replace_gold,
            conflicting_as=conflicting_as,
            duplicates_as=duplicates_as,
        )
        for part_status, part in (
            (status, [spec for spec in specs if spec.key not in held_back]),
            (ExpertAnnotation.Status.SUBMITTED, [spec for spec in specs if spec.key in held_back]),
        ):
            if part:
                annotations_ensure(
                    part, {spec.key: clips[spec.key] for spec in part}, annotator, library, summary, part_status
                )
        attribute_counts(specs, library, summary)
    return summary


def audiocaps_f_needs_embedding(*, data: Any, source_name: str) -> bool:
    """Whether a gold import of the file embeds phrases (some clip has two events or more, all with spans): on a
    cold cache loading Sentence-BERT and embedding take longer than a web request may last, so the API hands such
    files to the worker. Raises ImportDataError for a file that does not parse."""
    specs = audiocaps_f_parse(data=data, source_name=source_name)
    return bool(duplicates_checked(specs, status=ExpertAnnotation.Status.GOLD))


def _checks_before_writing(
    specs: list[ClipAnnotationSpec],
    clips: dict[str, Clip],
    library: AttributeVocabulary,
    summary: ImportSummary,
    *,
    annotator,
    source_name: str,
    status: str,
    replace_gold: bool,
    conflicting_as: str,
    duplicates_as: str,
) -> set[str]:
    """Refuse the file (ImportDataError) or return the keys of the clips a gold import holds back as submitted.

    The cheap checks come first, so a bad file is refused at once; only then are the events' phrases embedded
    for the duplicate check (seconds to a minute on a cold cache)."""
    _spans_within_clips_guard(specs, clips, source_name)
    conflicting = attribute_conflicts_flag(specs, library, summary, status=status)
    renamed = repeated_names_flag(specs, summary, source_name=source_name, status=status, duplicates_as=duplicates_as)
    held_back = renamed | (set(conflicting) if conflicting_as != status else set())
    guarded = status == ExpertAnnotation.Status.GOLD and not replace_gold
    # Clips the embedding may still hold back are guarded after it when they would be imported as submitted then.
    embedded = duplicates_checked(specs, status=status) if duplicates_as != "refuse" else set()
    if guarded:
        _others_gold_guard(
            [spec for spec in specs if spec.key not in held_back | embedded], clips, annotator, source_name
        )
    held_back |= gold_duplicates_flag(
        [spec for spec in specs if spec.key not in renamed],
        summary,
        source_name=source_name,
        status=status,
        duplicates_as=duplicates_as,
    )
    if guarded:
        _others_gold_guard(
            [spec for spec in specs if spec.key in embedded and spec.key not in held_back],
            clips,
            annotator,
            source_name,
        )
    attribute_conflicts_note(summary, conflicting, held_back)
    return held_back


def _spans_within_clips_guard(specs: list[ClipAnnotationSpec], clips: dict[str, Clip], source_name: str) -> None:
    """Refuse a span that ends after its clip (when the clip's duration is known), as the editor's checks do."""
    for spec in specs:
        duration = clips[spec.key].duration_seconds
        if not duration:
            continue
        for event in spec.events:
            for index, (_onset, offset) in enumerate(event.spans):
                if offset > duration + CLIP_END_SLACK_SECONDS:
                    raise ImportDataError(
                        f'{source_name}: key "{spec.key}" event "{event.label}" key "spans" index {index}: ends at '
                        f"{offset} s, after the clip's end ({duration:.2f} s)"
                    )


def _others_gold_guard(specs: list[ClipAnnotationSpec], clips: dict[str, Clip], annotator, source_name: str) -> None:
    """Refuse to supersede gold that another account published (a reviewer's work, or another import)."""
    key_of_clip = {clips[spec.key].pk: spec.key for spec in specs if clips[spec.key].pk is not None}
    others = (
        ExpertAnnotation.objects.filter(clip_id__in=list(key_of_clip), status=ExpertAnnotation.Status.GOLD)
        .exclude(annotator=annotator)
        .select_related("annotator")
        .order_by("clip_id")
    )
    for gold in others[:1]:
        raise ImportDataError(
            f'{source_name}: key "{key_of_clip[gold.clip_id]}": the clip has gold published by '
            f'"{gold.annotator.get_username()}"; importing gold would replace it. Import with status submitted, '
            "or choose to replace gold (--replace-gold)"
        )


def _named_annotator(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ImportDataError(f'user "{username}" does not exist (create the account first)')
    if not user.groups.filter(name=EXPERT_ROLE).exists():
        raise ImportDataError(f'user "{username}" is not an annotator (add the account to the annotator group)')
    return user

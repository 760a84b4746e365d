"""A crowd study published as a benchmark file: pairwise in the FENSE JSON layout, THumBS as a flat CSV.

Only the judgements every figure counts go in (ratings.selectors: no excluded participant, attention check or
preview), so the file gives the same agreement as the study's own report.

FENSE layout (what `import_pairwise_judgements` reads), one entry per clip with a judged pair:
    {"raw_name": file name, "audio_id": the clip's external id, "references": [the clip's references in order],
     "HC" | "HI" | "HM": [caption a, caption b, label a, label b, [participants], [votes]], "MM_1", ...: the same}
Votes are +1 (a better), -1 (b better), 0 (no preference), one per participant; `participants` names who cast
each vote, in the same order, by the key the pay export and the THumBS CSV (`rater`) use too. FENSE readers
take the votes from the last field and ignore extra fields before it. Labels: `human_<n>` for the
n-th reference, the source label of other human captions, the system name of machine captions. The layout has
one HC, HI and HM pair per clip; a study with two of one split on a clip cannot be written in it (refused,
naming the clip and split).
"""

from collections import defaultdict

from corpus.models import Caption
from ratings.models import Campaign, CaptionPair
from ratings.models_study import Study
from ratings.selectors import campaign_included_votes
from ratings.services.thumbs_export import AUTHORSHIP_KEYS, RATING_KEYS, rows_csv, thumbs_rating_rows

VOTE_VALUES = {"a": 1, "b": -1, "none": 0}
# A rating row of thumbs_export (authorship included), named by clip rather than by the rater's record id.
THUMBS_COLUMNS = [("clip", "clip"), *((key, key) for key in (*RATING_KEYS, *AUTHORSHIP_KEYS) if key != "record_id")]


class StudyExportError(ValueError):
    """The study cannot be written in the asked layout (message says why)."""


def _label(caption: Caption, reference_numbers: dict[int, int]) -> str:
    if caption.pk in reference_numbers:
        return f"human_{reference_numbers[caption.pk]}"
    if caption.author_kind == Caption.AuthorKind.MACHINE:
        return caption.system.name if caption.system_id else caption.source_label or "machine"
    return caption.source_label or f"human_candidate_{caption.pk}"


def study_fense_items(*, study: Study) -> list[dict]:
    """The pairwise study's included votes in the FENSE layout (see the module docstring)."""
    campaign = study.campaign
    if campaign.task_type != Campaign.TaskType.PAIRWISE:
        raise StudyExportError("the FENSE layout is for pairwise studies; export a THumBS study as CSV")
    votes: dict[int, list[int]] = defaultdict(list)
    voters: dict[int, list[str]] = defaultdict(list)
    for pair_id, choice, username in (
        campaign_included_votes(campaign=campaign)
        .order_by("pair_id", "rater_id", "pk")
        .values_list("pair_id", "choice", "rater__username")
    ):
        votes[pair_id].append(VOTE_VALUES[choice])
        voters[pair_id].append(username)
    pairs = (
        CaptionPair.objects.filter(pk__in=votes)
        .select_related("clip", "caption_a__system", "caption_b__system")
        .order_by("clip__external_id", "split", "source_key", "pk")
    )
    by_clip: dict[int, list[CaptionPair]] = defaultdict(list)
    for pair in pairs:
        by_clip[pair.clip_id].append(pair)
    references: dict[int, list[Caption]] = defaultdict(list)
    for caption in Caption.objects.filter(clip_id__in=by_clip, role=Caption.Role.REFERENCE).order_by(
        "clip_id", "position", "pk"
    ):
        references[caption.clip_id].append(caption)
    items = []
    for clip_pairs in by_clip.values():
        clip = clip_pairs[0].clip
        clip_references = references[clip.pk]
        numbers = {caption.pk: number for number, caption in enumerate(clip_references, start=1)}
        item = {
            "raw_name": clip.file_name or clip.external_id,
            "audio_id": clip.external_id,
            "references": [caption.text for caption in clip_references],
        }
        machine_pairs = 0
        for pair in clip_pairs:
            if pair.split == CaptionPair.Split.MM:
                machine_pairs += 1
                key = f"MM_{machine_pairs}"
            else:
                key = pair.split
                if key in item:
                    raise StudyExportError(
                        f"clip {clip.external_id} has two {key} pairs judged; the FENSE layout holds one per clip"
                    )
            a, b = pair.caption_a, pair.caption_b
            item[key] = [a.text, b.text, _label(a, numbers), _label(b, numbers), voters[pair.pk], votes[pair.pk]]
        items.append(item)
    return items


def study_thumbs_csv(*, study: Study) -> str:
    """The THumBS study's included ratings, one row per rating, with the clip and the caption's authorship."""
    if study.campaign.task_type != Campaign.TaskType.THUMBS:
        raise StudyExportError("the flat CSV is for THumBS studies; export a pairwise study in the FENSE layout")
    rows = thumbs_rating_rows(campaign=study.campaign, include_authorship=True, skip_excluded=True)
    for row in rows:
        row["clip"] = row["_clip"]
    return rows_csv(rows, THUMBS_COLUMNS)

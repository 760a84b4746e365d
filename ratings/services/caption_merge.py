"""Merge a caption that was stored twice into the one that stays (import corrections).

Everything a person produced about the duplicate moves to the caption that stays: pairs, THumBS
ratings, campaign memberships and the raters' caption orders. Derived rows (metric scores) are
deleted with the duplicate; they are recomputed for the caption that stays. A rater who rated both
captions is a conflict this cannot resolve silently, so it raises and the caller's transaction
writes nothing. (Ratings are bound to their campaign: the same rater may have rated both captions in
different campaigns; those ratings simply both stay.)
"""

from django.db.models import Exists, OuterRef, Q

from corpus.models import Caption
from corpus.services.importing import ImportDataError
from ratings.models import AssignmentItem, Campaign, CaptionPair, ThumbsRating


def caption_merge(*, duplicate: Caption, into: Caption) -> None:
    """Move the duplicate's judgements to `into`, then delete the duplicate. Call inside a transaction."""
    if duplicate.pk == into.pk:
        return
    if duplicate.clip_id != into.clip_id:
        raise ImportDataError(f"caption {duplicate.pk} and caption {into.pk} belong to different clips")
    both_sides = CaptionPair.objects.filter(
        Q(caption_a=duplicate, caption_b=into) | Q(caption_a=into, caption_b=duplicate)
    ).values_list("source_key", flat=True)
    if both_sides:
        raise ImportDataError(
            f'caption "{duplicate.text}" would be compared with itself in pair(s) {", ".join(both_sides)}'
        )
    # one rating per (campaign, rater, caption): the same rater rating both in one campaign cannot be merged
    same_study = ThumbsRating.objects.filter(caption=into, rater=OuterRef("rater"), campaign=OuterRef("campaign"))
    conflicts = ThumbsRating.objects.filter(Exists(same_study), caption=duplicate)
    if conflicts.exists():
        raters = ", ".join(sorted(conflicts.values_list("rater__username", flat=True)))
        raise ImportDataError(f'caption "{duplicate.text}" was rated under two identities by {raters}; resolve by hand')
    CaptionPair.objects.filter(caption_a=duplicate).update(caption_a=into)
    CaptionPair.objects.filter(caption_b=duplicate).update(caption_b=into)
    ThumbsRating.objects.filter(caption=duplicate).update(caption=into)
    for campaign in Campaign.objects.filter(captions=duplicate):
        campaign.captions.add(into)
        campaign.captions.remove(duplicate)
    changed_items = []
    for item in AssignmentItem.objects.filter(clip_id=duplicate.clip_id, pair__isnull=True):
        if duplicate.pk in item.caption_order:
            order = [into.pk if caption_id == duplicate.pk else caption_id for caption_id in item.caption_order]
            item.caption_order = list(dict.fromkeys(order))
            changed_items.append(item)
    AssignmentItem.objects.bulk_update(changed_items, ["caption_order"])
    duplicate.delete()

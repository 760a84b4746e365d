"""Read-only queries over human judgements."""

import functools
from collections import Counter

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from annotation.selectors import dataset_corpus_counts
from common.compiled_reads import CompiledRead
from corpus.models import Dataset
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.models_study import AttentionCheck, Participant

# --- Dataset statistics (dataset_stats command) ---------------------------------------------------


def dataset_stats(*, dataset: Dataset) -> dict:
    """The figures of `dataset_stats`, in its output order: corpus counts plus pairs per split and votes,
    then candidates by author kind and the sorted names of the systems with captions in the dataset."""
    corpus = dataset_corpus_counts(dataset=dataset)
    # order_by() drops the model ordering, which would otherwise split the GROUP BY.
    per_split = {
        row["split"]: row["count"]
        for row in CaptionPair.objects.filter(clip__dataset=dataset)
        .order_by()
        .values("split")
        .annotate(count=Count("pk"))
    }
    return {
        "clips": corpus["clips"],
        "clips_with_audio": corpus["clips_with_audio"],
        "reference_captions": corpus["reference_captions"],
        "candidate_captions": corpus["candidate_captions"],
        # The four FENSE splits always; HALLU (BRACE-Hallucination) only in datasets that have such pairs.
        "pairs": {
            split: per_split.get(split, 0)
            for split in CaptionPair.Split.values
            if split != CaptionPair.Split.HALLU or per_split.get(split)
        },
        "votes": PairwiseVote.objects.filter(pair__clip__dataset=dataset).count(),
        "expert_annotations": corpus["expert_annotations"],
        "events": corpus["events"],
        "human_candidates": corpus["human_candidates"],
        "machine_candidates": corpus["machine_candidates"],
        "systems": corpus["systems"],
    }


# --- Rating pages and campaign administration (web) -----------------------


def rater_item(*, rater: AbstractBaseUser, token: str) -> AssignmentItem | None:
    """An item of one of the rater's own assignments in an open campaign, by its token, or None.

    Other raters' items, closed campaigns and unknown tokens all give None (pages answer 404 alike).
    """
    return (
        # The pair's captions are not joined: only a page that shows them reads them (projection.item_captions).
        AssignmentItem.objects.select_related("assignment__campaign", "clip", "pair")
        .filter(token=token, assignment__rater=rater, assignment__campaign__is_active=True)
        # Tokens are unique: no ORDER BY (the model's ordering would join the campaign and rater to sort one row).
        .order_by()
        .first()
    )


def participant_item(
    *, participant: Participant, token: str, related: tuple[str, ...] = ("clip", "pair")
) -> AssignmentItem | None:
    """A crowd participant's item by its token, or None (rater_item's answer for them).

    Their study's campaign was read with the participant on this request: it is not joined again (its columns
    cost a crowd's every item request CPU for nothing), only its id filters the assignment. `related`: the item's
    relations read with it; a request that uses neither its clip nor its pair (an autosave) leaves them out, as
    each joined model costs every such request CPU to select and build (they load on first use all the same)."""
    campaign = participant.study.campaign
    if not campaign.is_active:
        return None
    item = _participant_item_read(related).first(token=token, user_id=participant.user_id, campaign_id=campaign.pk)
    if item is not None:
        item.assignment.campaign = campaign
    return item


@functools.cache
def _participant_item_read(related: tuple[str, ...]) -> CompiledRead:
    """The read of participant_item for these relations, compiled once per process (a crowd's every item request)."""
    return CompiledRead(
        lambda token, user_id, campaign_id: AssignmentItem.objects.select_related("assignment", *related)
        .filter(token=token, assignment__rater_id=user_id, assignment__campaign_id=campaign_id)
        .order_by(),
        token="token-marker-of-a-compiled-read",
        user_id=-2_100_000_002,
        campaign_id=-2_100_000_003,
    )


def campaigns_with_progress() -> QuerySet[Campaign]:
    """All campaigns with `rater_count`, `item_count` (assignment items) and `completed_count`."""
    return (
        Campaign.objects.select_related("dataset")
        .annotate(
            rater_count=Count("assignments", distinct=True),
            item_count=Count("assignments__items", distinct=True),
            completed_count=Count(
                "assignments__items", filter=Q(assignments__items__completed_at__isnull=False), distinct=True
            ),
        )
        .order_by("-created_at")
    )


# --- Included judgements: what every figure and export counts --------------------------------------------
#
# One rule, for every reader (agreement, leaderboard, dashboards, THumBS report, exports): a judgement made in
# a campaign counts unless
#   - its rater is excluded from that campaign (an admin's exclusion, or a crowd participant's rules), or
#   - it answers an attention check (a gold pair or a catch caption inside a crowd participant's share), or
#   - its rater is an admin's preview of a crowd study.
# Judgements of no campaign (imported data sets) always count. The rows themselves are never deleted.


def _excluded_from_campaign():
    return Campaign.excluded_raters.through.objects.filter(
        campaign_id=OuterRef("campaign_id"), user_id=OuterRef("rater_id")
    )


def _preview_rater():
    return Participant.objects.filter(user_id=OuterRef("rater_id"), is_preview=True)


def included_votes(votes: QuerySet[PairwiseVote] | None = None) -> QuerySet[PairwiseVote]:
    """`votes` (default: all) without those the rule above leaves out."""
    votes = PairwiseVote.objects.all() if votes is None else votes
    check = AttentionCheck.objects.filter(
        campaign_id=OuterRef("campaign_id"), rater_id=OuterRef("rater_id"), pair_id=OuterRef("pair_id")
    )
    return votes.filter(~Exists(_excluded_from_campaign()), ~Exists(check), ~Exists(_preview_rater()))


def included_thumbs_ratings(ratings: QuerySet[ThumbsRating] | None = None) -> QuerySet[ThumbsRating]:
    """`ratings` (default: all) without those the rule above leaves out."""
    ratings = ThumbsRating.objects.all() if ratings is None else ratings
    check = AttentionCheck.objects.filter(
        campaign_id=OuterRef("campaign_id"), rater_id=OuterRef("rater_id"), caption_id=OuterRef("caption_id")
    )
    return ratings.filter(~Exists(_excluded_from_campaign()), ~Exists(check), ~Exists(_preview_rater()))


def campaign_included_votes(*, campaign: Campaign) -> QuerySet[PairwiseVote]:
    """The campaign's votes that count (see included_votes)."""
    return included_votes(PairwiseVote.objects.filter(campaign=campaign))


def campaign_included_thumbs_ratings(*, campaign: Campaign) -> QuerySet[ThumbsRating]:
    """The campaign's THumBS ratings that count (see included_thumbs_ratings)."""
    return included_thumbs_ratings(ThumbsRating.objects.filter(campaign=campaign))


def campaign_assignments_with_progress(*, campaign: Campaign) -> QuerySet[Assignment]:
    """The campaign's assignments (oldest first, as P-numbers count) with `item_count` and `completed_count`."""
    return (
        campaign.assignments.select_related("rater")
        .annotate(
            item_count=Count("items"),
            completed_count=Count("items", filter=Q(items__completed_at__isnull=False)),
        )
        .order_by("created_at", "pk")
    )


def campaign_clips_without_audio(*, campaign: Campaign) -> int:
    """How many of the campaign's assigned clips have no audio (raters cannot finish those items)."""
    return campaign.dataset.clips.filter(assignment_items__assignment__campaign=campaign, audio="").distinct().count()


def campaign_donor_clip_count(*, campaign: Campaign) -> int:
    """How many clips the campaign's HI pairs take their other caption from (not rated in the campaign)."""
    return (
        campaign.pairs.filter(split=CaptionPair.Split.HI, caption_b__copied_from__isnull=False)
        .order_by()  # (the model ordering would join into the DISTINCT)
        .values("caption_b__copied_from__clip_id")
        .distinct()
        .count()
    )


def campaign_gold_rule_breaches(*, campaign: Campaign) -> int:
    """How many of the campaign's gold items went to a rater who has another item of the same clip (in any campaign
    on the dataset): those checks can be answered by their text alone. Campaign creation falls back to shares
    without the gold rule when it cannot be kept (too few clips or raters for the judgements asked)."""
    gold_items = list(
        AssignmentItem.objects.filter(assignment__campaign=campaign)
        .exclude(pair__gold_choice="")
        .exclude(pair__isnull=True)
        .order_by()
        .values_list("assignment__rater_id", "clip_id")
    )
    if not gold_items:
        return 0
    held = Counter(
        AssignmentItem.objects.filter(
            assignment__campaign__dataset_id=campaign.dataset_id,
            assignment__rater_id__in={rater_id for rater_id, _ in gold_items},
            clip_id__in={clip_id for _, clip_id in gold_items},
        )
        .order_by()
        .values_list("assignment__rater_id", "clip_id")
    )
    return sum(held[rater_and_clip] > 1 for rater_and_clip in gold_items)


def raters_with_assignments() -> QuerySet:
    """Users in the rater group or assigned in some campaign, with their campaigns prefetched (crowd participants
    are listed on their study's page instead)."""
    from django.contrib.auth import get_user_model
    from django.db.models import Prefetch

    from accounts.roles import RATER

    assignments = Assignment.objects.select_related("campaign").order_by("campaign__name")
    return (
        get_user_model()
        .objects.filter(Q(groups__name=RATER) | Q(assignments__isnull=False))
        .filter(participant__isnull=True)
        .distinct()
        .prefetch_related(Prefetch("assignments", queryset=assignments))
        .order_by("username")
    )

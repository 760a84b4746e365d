"""Read-only queries of the annotation workspace: what annotators, reviewers and admins see of campaigns."""

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Lower, Trim

from accounts.roles import ADMIN, REVIEWER, user_has_role, user_roles
from annotation.models import (
    AnnotationCampaign,
    AnnotationReview,
    AnnotationTask,
    EventAttribute,
    EventSource,
    ExpertAnnotation,
    SoundEvent,
)
from annotation.services.annotation_campaigns import COUNTED, OPEN, annotator_progress
from annotation.vocabulary import sound_sources
from corpus.models import Clip

TaskStatus = AnnotationTask.Status


def campaigns_visible_to(user) -> QuerySet[AnnotationCampaign]:
    """Annotation campaigns the user annotates or may review (admins: all)."""
    campaigns = AnnotationCampaign.objects.select_related("dataset").order_by("-created_at")
    if ADMIN in user_roles(user):
        return campaigns
    visible = Q(annotators=user)
    if user_has_role(user, REVIEWER):
        visible |= Q(reviewers=user) | Q(reviewers__isnull=True)
    return campaigns.filter(visible).distinct()


def campaigns_reviewed_by(user) -> QuerySet[AnnotationCampaign]:
    campaigns = AnnotationCampaign.objects.select_related("dataset").order_by("-created_at")
    if ADMIN in user_roles(user):
        return campaigns
    if not user_has_role(user, REVIEWER):
        return campaigns.none()
    return campaigns.filter(Q(reviewers=user) | Q(reviewers__isnull=True)).distinct()


@dataclass
class AnnotatorCampaignRow:
    campaign: AnnotationCampaign
    progress: object
    open_tasks: list = field(default_factory=list)
    submitted_tasks: list = field(default_factory=list)
    skipped_tasks: list = field(default_factory=list)


def annotator_campaign_rows(*, annotator) -> list[AnnotatorCampaignRow]:
    """The annotator's active campaigns with progress and tasks (returned ones first, with the reviewer's comment)."""
    rows = []
    for campaign in AnnotationCampaign.objects.filter(annotators=annotator, is_active=True).select_related("dataset"):
        tasks = list(
            AnnotationTask.objects.filter(campaign=campaign, annotator=annotator)
            .select_related("clip")
            .order_by("-updated_at")
        )
        rows.append(
            AnnotatorCampaignRow(
                campaign=campaign,
                progress=annotator_progress(campaign=campaign, annotator=annotator),
                open_tasks=sorted(
                    (t for t in tasks if t.status in OPEN),
                    key=lambda t: (t.status != TaskStatus.RETURNED, t.created_at),
                ),
                submitted_tasks=[t for t in tasks if t.status == TaskStatus.SUBMITTED],
                skipped_tasks=[t for t in tasks if t.status == TaskStatus.SKIPPED],
            )
        )
    return rows


@dataclass
class CampaignClipRow:
    """One clip of an annotation campaign. `state` is what every page says about it (review overview counts,
    the campaign's clip list), so the overview's numbers are the detail page's."""

    clip: Clip
    needed: int = 1  # the campaign's annotations per clip
    counted: int = 0
    submitted: int = 0
    in_progress: int = 0
    returned: int = 0
    skips: list = field(default_factory=list)  # skipped tasks, with reason and comment
    annotators: list = field(default_factory=list)
    review: AnnotationReview | None = None
    denial: str | None = None  # why the viewing reviewer may not review this clip

    @property
    def state(self) -> str:
        """locked (for this reviewer) / gold / in review / ready / partly annotated / waiting."""
        if self.denial:
            return "locked"
        if self.review and self.review.status == AnnotationReview.Status.PUBLISHED:
            return "gold"
        # A review row that was never saved is no review: the page used to create one just by being opened.
        if self.review and self.review.draft_version > 0:
            return "in review"
        if self.submitted >= self.needed:
            return "ready"
        return "partly annotated" if self.submitted else "waiting"


def clip_review(*, campaign: AnnotationCampaign, clip: Clip) -> AnnotationReview | None:
    """The clip's review in the campaign, if a reviewer started one (the review page never creates it)."""
    return AnnotationReview.objects.filter(campaign=campaign, clip=clip).select_related("campaign", "reviewer").first()


def review_counts(rows: list[CampaignClipRow]) -> dict[str, int]:
    """How many clips are in each state (the review overview's columns)."""
    counts = Counter(row.state for row in rows)
    return {"clips": len(rows), "ready": counts["ready"], "in_review": counts["in review"], "gold": counts["gold"]}


def campaign_clip_rows(*, campaign: AnnotationCampaign, viewer=None) -> list[CampaignClipRow]:
    """Every clip of the campaign with its annotation counts, skips and review state.

    With `viewer` (a reviewer) each row says whether they may review it (not if they annotated it).
    """
    needed = campaign.annotations_per_clip
    rows = {clip.pk: CampaignClipRow(clip=clip, needed=needed) for clip in campaign.clips.order_by("external_id")}
    tasks = AnnotationTask.objects.filter(campaign=campaign).select_related("annotator", "clip").order_by("created_at")
    for task in tasks:
        row = rows.get(task.clip_id)
        if row is None:
            continue
        row.annotators.append(task.annotator.username)
        if task.status in COUNTED:
            row.counted += 1
        if task.status == TaskStatus.SUBMITTED:
            row.submitted += 1
        elif task.status == TaskStatus.ASSIGNED:
            row.in_progress += 1
        elif task.status == TaskStatus.RETURNED:
            row.returned += 1
        else:
            row.skips.append(task)
        if viewer is not None and task.annotator_id == viewer.pk:
            row.denial = "you annotated this clip"
    for review in AnnotationReview.objects.filter(campaign=campaign).select_related("reviewer"):
        if review.clip_id in rows:
            rows[review.clip_id].review = review
    if viewer is not None and campaign.annotators.filter(pk=viewer.pk).exists():
        for row in rows.values():
            if row.denial is None and row.counted < campaign.annotations_per_clip:
                row.denial = "this clip may still come to you to annotate"
    return list(rows.values())


def campaign_annotator_rows(*, campaign: AnnotationCampaign) -> list[dict]:
    """Per annotator: submitted / in progress / returned / skipped counts and their share of the work."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for annotator_id, task_status in AnnotationTask.objects.filter(campaign=campaign).values_list(
        "annotator_id", "status"
    ):
        counts[annotator_id][task_status] += 1
    return [
        {
            "annotator": annotator,
            "counts": counts[annotator.pk],
            "progress": annotator_progress(campaign=campaign, annotator=annotator),
        }
        for annotator in campaign.annotators.order_by("username")
    ]


def campaigns_with_counts() -> QuerySet[AnnotationCampaign]:
    return (
        AnnotationCampaign.objects.select_related("dataset")
        .annotate(
            clip_count=Count("clips", distinct=True),
            annotator_count=Count("annotators", distinct=True),
            submitted_count=Count("tasks", filter=Q(tasks__status=TaskStatus.SUBMITTED), distinct=True),
            skipped_count=Count("tasks", filter=Q(tasks__status=TaskStatus.SKIPPED), distinct=True),
            gold_count=Count("reviews", filter=Q(reviews__status=AnnotationReview.Status.PUBLISHED), distinct=True),
        )
        .order_by("-created_at")
    )


def source_suggestions(*, clip: Clip, user, limit: int = 3000) -> dict[str, list[str]]:
    """Words for the editor's type-ahead, most used first: {"sources": [...], "events": [...], "attributes":
    [...]}.

    From every dataset's annotations (a new dataset starts with the words of the others), the sources then
    followed by the product's list of common sound sources; the attributes as annotators wrote them
    (`used_attributes`), so the editor offers the usual one first after fewer letters. Blind: other people's
    annotations of this very clip, or of the same audio in another dataset, are left out (the user's own are
    kept).
    """
    same_audio = Q(clip=clip) | (Q(clip__sha256=clip.sha256) if clip.sha256 else Q(pk__in=[]))
    others = ExpertAnnotation.objects.filter(same_audio).exclude(annotator=user).values("pk")
    events = SoundEvent.objects.exclude(annotation__in=others)
    sources = EventSource.objects.exclude(event__annotation__in=others)

    def ranked(queryset, text_field: str, extra=()) -> list[str]:
        rows = queryset.order_by().values(text_field).annotate(uses=Count("pk")).order_by("-uses", text_field)[:limit]
        seen, words = set(), []
        for text in [row[text_field] for row in rows] + list(extra):
            text = " ".join(text.split())
            if text and text.casefold() not in seen:
                seen.add(text.casefold())
                words.append(text)
        return words

    return {
        "sources": ranked(sources, "text", sound_sources()),
        "events": ranked(events, "label"),
        "attributes": used_attributes(EventAttribute.objects.exclude(event__annotation__in=others), limit=limit),
    }


def used_attributes(attributes: QuerySet, *, limit: int) -> list[str]:
    """Attribute texts as annotators wrote them, most used first: library tags and filled-in templates ("into
    a microphone") at any count, free text only once two annotations used it (a one-off is not vocabulary)."""
    # Counted regardless of case and edge spaces: AudioCaps-F's experts wrote "In the distance", "in the
    # distance" and "in the distance " for one attribute.
    rows = (
        attributes.order_by()
        .annotate(key=Lower(Trim("text")))
        .values("key")
        .annotate(uses=Count("pk"), tagged=Count("tag"))
        .order_by("-uses", "key")[:limit]
    )
    seen, words = set(), []
    for row in rows:
        text = " ".join(row["key"].split())
        if text and text.casefold() not in seen and (row["tagged"] or row["uses"] >= 2):
            seen.add(text.casefold())
            words.append(text)
    return words


def tag_library_entries() -> list[dict]:
    """The attribute tag library for the editor's type-ahead, in category order:
    [{"text", "category", "template", "origin", "synonym_group", "antonym_groups"}] ("template": "on a ___" for
    a placeholder tag, else ""; the groups let the editor flag opposite attributes as the checks do)."""
    from annotation.models import ATTRIBUTE_CATEGORIES, AttributeTag

    order = {name: index for index, name in enumerate(ATTRIBUTE_CATEGORIES)}
    tags = AttributeTag.objects.values("text", "category", "template", "origin", "synonym_group", "antonym_groups")
    return sorted(tags, key=lambda tag: (order.get(tag["category"], 99), tag["text"].casefold()))

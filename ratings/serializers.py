"""API representations of human judgements.

Two families: full serializers for admins (and corpus readers, for pairs), and
blinded `Rater*` serializers for raters (see the section comment below).
"""

from django.contrib.auth import get_user_model
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.selectors import dataset_clips_named
from annotation.serializers import CaptionSerializer
from corpus.models import Caption, CaptioningSystem, Dataset
from ratings import projection
from ratings.models import (
    Assignment,
    AssignmentItem,
    Campaign,
    CaptionPair,
    PairwiseVote,
    ThumbsRating,
    campaign_rater_code,
)
from ratings.services.campaign_rules import PAIRWISE_SPLITS, split_count_field
from ratings.services.campaigns import campaign_name_clash
from ratings.services.judgements import item_answer

# --- Caption pairs --------------------------------------------------------------


class CaptionPairSerializer(serializers.ModelSerializer):
    caption_a = CaptionSerializer(read_only=True)
    caption_b = CaptionSerializer(read_only=True)
    vote_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = CaptionPair
        fields = ["id", "clip", "split", "source_key", "gold_choice", "caption_a", "caption_b", "vote_count"]


# --- Campaigns and assignments (admin view) ---------------------------------------


class CampaignSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    caption_count = serializers.IntegerField(read_only=True)
    pair_count = serializers.IntegerField(read_only=True)
    assignment_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "title",
            "dataset",
            "task_type",
            "origin",
            "judgements_per_item",
            "seed",
            "is_active",
            "requires_huggins",
            "caption_count",
            "pair_count",
            "assignment_count",
            "created_at",
        ]


class CampaignInputSerializer(serializers.Serializer):
    """A campaign request, in the campaign form's terms: its clips (by external id), the systems, THumBS human
    captions or pairwise split counts, and the raters. Parsed here; the rules and the setup are services
    (ratings/services/campaign_rules.py)."""

    name = serializers.SlugField(max_length=100)
    title = serializers.CharField(max_length=120, required=False, default="", help_text="What raters see")
    requires_huggins = serializers.BooleanField(required=False, default=False)
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    task_type = serializers.ChoiceField(choices=Campaign.TaskType.choices)
    seed = serializers.IntegerField(default=0, min_value=-(2**31), max_value=2**31 - 1)
    judgements_per_item = serializers.IntegerField(
        min_value=1, max_value=50, allow_null=True, default=None, help_text="Blank: 4 pairwise, 3 THumBS"
    )
    clip_ids = serializers.ListField(
        child=serializers.CharField(max_length=255), default=list, help_text="External ids; none: every clip"
    )
    systems = serializers.SlugRelatedField(
        slug_field="name",
        queryset=CaptioningSystem.objects.all(),
        many=True,
        default=list,
        help_text="Names of the systems whose machine captions are used; none: every system",
    )
    human_captions_per_clip = serializers.IntegerField(min_value=0, max_value=20, default=1, help_text="THumBS")
    count_hc = serializers.IntegerField(min_value=0, default=0, help_text="Pairwise: HC pairs")
    count_hi = serializers.IntegerField(min_value=0, default=0, help_text="Pairwise: HI pairs")
    count_hm = serializers.IntegerField(min_value=0, default=0, help_text="Pairwise: HM pairs")
    count_mm = serializers.IntegerField(min_value=0, default=0, help_text="Pairwise: MM pairs")
    gold_from_hi = serializers.BooleanField(default=False, help_text="Pairwise: HI pairs are gold items")
    crowd_only = serializers.BooleanField(default=False, help_text="No in-house raters: for a crowd study")
    raters = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.all(),
        many=True,
        default=list,
        help_text="Usernames of the raters",
    )

    def validate_name(self, name: str) -> str:
        clash = campaign_name_clash(name)
        if clash:
            raise serializers.ValidationError(clash)
        return name

    def validate(self, data: dict) -> dict:
        """The arguments of campaign_request_setup: clips resolved in the dataset, the counts by split."""
        dataset = data["dataset"]
        clips = None
        if data["clip_ids"]:
            clips, missing = dataset_clips_named(dataset=dataset, external_ids=data["clip_ids"])
            if missing:
                raise serializers.ValidationError({"clip_ids": f"not in {dataset.name}: {', '.join(missing[:10])}"})
        arguments = {name: value for name, value in data.items() if name != "clip_ids"}
        arguments["clips"] = clips
        arguments["systems"] = list(data["systems"]) or None
        arguments["split_counts"] = {split: arguments.pop(split_count_field(split)) for split in PAIRWISE_SPLITS}
        return arguments


class CampaignRatersInputSerializer(serializers.Serializer):
    raters = serializers.ListField(child=serializers.CharField(), help_text="Usernames of raters to assign")


class AssignmentSerializer(serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    completed_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "campaign", "rater", "item_count", "completed_count", "created_at"]


class AssignmentItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = AssignmentItem
        fields = [
            "id",
            "token",
            "assignment",
            "position",
            "clip",
            "pair",
            "version",
            "a_on_left",
            "caption_order",
            "first_shown_at",
            "listened_at",
            "completed_at",
            "seconds_spent",
        ]


# --- Judgements (admin view) -------------------------------------------------------


class ThumbsRatingSerializer(serializers.ModelSerializer):
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    overall = serializers.DecimalField(max_digits=4, decimal_places=2, read_only=True)

    class Meta:
        model = ThumbsRating
        fields = [
            "id",
            "rater",
            "caption",
            "campaign",
            "precision",
            "recall",
            "fluency",
            "conciseness",
            "irrelevance",
            "overall",
            "synthesized",
            "comment",
            "source",
            "workbook_sha256",
            "created_at",
            "updated_at",
        ]


class PairwiseVoteSerializer(serializers.ModelSerializer):
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    # Null for votes imported from a judgement file (they belong to no campaign).
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = PairwiseVote
        fields = ["id", "rater", "pair", "campaign", "choice", "left_side", "source", "created_at", "updated_at"]


# --- Blinded views for raters ------------------------------------------------------
#
# A rater gets only what the rating pages need, in the rater's own terms and order (ratings/projection.py
# builds every row): items by their random token, captions by their number in the rater's order (THumBS)
# or by side (pairs), answers by number or side. No caption, pair, clip or dataset id or name, no a/b
# orientation, no split or gold flag, and the campaign only by the title meant for raters.


class RaterAssignmentSerializer(serializers.ModelSerializer):
    study_id = serializers.SerializerMethodField(help_text="The study's opaque code (the `?study=` filter)")
    study = serializers.CharField(source="campaign.rater_title", read_only=True)
    task_type = serializers.CharField(source="campaign.task_type", read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    completed_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Assignment
        fields = ["study_id", "study", "task_type", "item_count", "completed_count"]

    def get_study_id(self, assignment: Assignment) -> str:
        return campaign_rater_code(assignment.campaign_id)


def rater_item_captions(item: AssignmentItem, captions_by_id: dict[int, Caption]) -> list[dict]:
    """The captions as this rater sees them: {"key": "left"/"right", "text"} for a pair, {"key": number, "text"}."""
    return [{"key": caption.key, "text": caption.text} for caption in projection.item_captions(item, captions_by_id)]


class RaterAssignmentItemListSerializer(serializers.ListSerializer):
    """Loads the captions of a whole page in one query (instead of one per item)."""

    def to_representation(self, data):
        items = list(data.all() if hasattr(data, "all") else data)
        self.context["captions_by_id"] = projection.captions_by_id_for(items)
        return super().to_representation(items)


class RaterCaptionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The caption's number on the page (THumBS) or its side (pairs)")
    text = serializers.CharField()


class RaterAssignmentItemSerializer(serializers.ModelSerializer):
    """One item of a rater's own assignment, as its page shows it (blinded; see the section comment)."""

    study_id = serializers.SerializerMethodField(help_text="The study's opaque code (the `?study=` filter)")
    task_type = serializers.CharField(source="assignment.campaign.task_type", read_only=True)
    url = serializers.SerializerMethodField(help_text="This item in the API, by its token")
    page_url = serializers.SerializerMethodField()
    audio_url = serializers.SerializerMethodField()
    # Null until the clip's audio is read (corpus.models.Clip.duration_seconds).
    duration_seconds = serializers.FloatField(source="clip.duration_seconds", read_only=True, allow_null=True)
    waveform_peaks = serializers.JSONField(source="clip.waveform_peaks", read_only=True)
    captions = serializers.SerializerMethodField()
    listened = serializers.SerializerMethodField()
    completed = serializers.SerializerMethodField()
    answer = serializers.SerializerMethodField(help_text="The rater's saved answer: by caption number or side")

    class Meta:
        model = AssignmentItem
        fields = [
            "token",
            "url",
            "study_id",
            "position",
            "task_type",
            "page_url",
            "audio_url",
            "duration_seconds",
            "waveform_peaks",
            "captions",
            "listened",
            "completed",
            "version",
            "answer",
        ]
        list_serializer_class = RaterAssignmentItemListSerializer

    def get_study_id(self, item: AssignmentItem) -> str:
        return campaign_rater_code(item.assignment.campaign_id)

    def get_url(self, item: AssignmentItem) -> str:
        return reverse("assignment-item-detail", kwargs={"pk": item.token})

    def get_page_url(self, item: AssignmentItem) -> str:
        return reverse("ratings:item", kwargs={"token": item.token})

    def get_audio_url(self, item: AssignmentItem) -> str | None:
        return reverse("ratings:item_audio", kwargs={"token": item.token}) if item.clip.audio else None

    @extend_schema_field(RaterCaptionSerializer(many=True))
    def get_captions(self, item: AssignmentItem) -> list[dict]:
        captions_by_id = self.context.get("captions_by_id") or projection.captions_by_id_for([item])
        return rater_item_captions(item, captions_by_id)

    def get_listened(self, item: AssignmentItem) -> bool:
        return item.listened_at is not None

    def get_completed(self, item: AssignmentItem) -> bool:
        return item.completed_at is not None

    @extend_schema_field(serializers.JSONField())
    def get_answer(self, item: AssignmentItem) -> dict:
        return item_answer(item=item) if item.completed_at else {}


class RaterThumbsRatingSerializer(serializers.Serializer):
    """One of the rater's own ratings (a projection.RaterRating): the item token and the caption's number."""

    item = serializers.CharField(source="item.token", help_text="The item's token")
    caption = serializers.IntegerField(source="number", help_text="The caption's number on the item's page")
    precision = serializers.IntegerField(source="rating.precision")
    recall = serializers.IntegerField(source="rating.recall")
    fluency = serializers.DecimalField(source="rating.fluency", max_digits=2, decimal_places=1)
    conciseness = serializers.DecimalField(source="rating.conciseness", max_digits=2, decimal_places=1)
    irrelevance = serializers.DecimalField(source="rating.irrelevance", max_digits=2, decimal_places=1)
    overall = serializers.DecimalField(source="rating.overall", max_digits=4, decimal_places=2)
    synthesized = serializers.CharField(source="rating.synthesized")
    comment = serializers.CharField(source="rating.comment")
    updated_at = serializers.DateTimeField(source="rating.updated_at")


class RaterPairwiseVoteSerializer(serializers.Serializer):
    """One of the rater's own votes (a projection.RaterVote): the item token and the side chosen (never a/b)."""

    item = serializers.CharField(source="item.token", help_text="The item's token")
    side = serializers.CharField(help_text="left, right or none, as on the rater's page")
    updated_at = serializers.DateTimeField(source="vote.updated_at")

"""API representations of human judgements.

Two families: full serializers for admins (and corpus readers, for pairs), and
blinded `Rater*` serializers for raters. A blinded serializer never names a field
that tells who wrote a caption (role, author kind, system, source label) nor the
pair's split (HC/HM/MM gives it away) or source key; raters see caption ids and texts.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Caption, Dataset
from annotation.serializers import BlindCaptionSerializer, BlindClipSerializer, CaptionSerializer
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating

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
            "dataset",
            "task_type",
            "judgements_per_item",
            "seed",
            "is_active",
            "caption_count",
            "pair_count",
            "assignment_count",
            "created_at",
        ]


class CampaignInputSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    task_type = serializers.ChoiceField(choices=Campaign.TaskType.choices)
    seed = serializers.IntegerField(default=0)
    judgements_per_item = serializers.IntegerField(min_value=1, required=False)
    captions = serializers.PrimaryKeyRelatedField(queryset=Caption.objects.all(), many=True, default=list)
    pairs = serializers.PrimaryKeyRelatedField(queryset=CaptionPair.objects.all(), many=True, default=list)

    def validate_name(self, name: str) -> str:
        if Campaign.objects.filter(name=name).exists():
            raise serializers.ValidationError(f"a campaign named {name!r} exists already")
        return name

    def validate(self, data: dict) -> dict:
        dataset = data["dataset"]
        if any(caption.clip.dataset_id != dataset.pk for caption in data["captions"]):
            raise serializers.ValidationError({"captions": f"every caption must belong to dataset {dataset.name!r}"})
        if any(pair.clip.dataset_id != dataset.pk for pair in data["pairs"]):
            raise serializers.ValidationError({"pairs": f"every pair must belong to dataset {dataset.name!r}"})
        return data


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
            "assignment",
            "position",
            "clip",
            "pair",
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
        ]


class PairwiseVoteSerializer(serializers.ModelSerializer):
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = PairwiseVote
        fields = ["id", "rater", "pair", "campaign", "choice", "left_side", "source", "created_at"]


# --- Blinded views for raters ------------------------------------------------------


class RaterAssignmentSerializer(serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    task_type = serializers.CharField(source="campaign.task_type", read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    completed_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "campaign", "task_type", "item_count", "completed_count"]


def captions_in_display_order(item: AssignmentItem, captions_by_id: dict[int, Caption]) -> list[Caption]:
    """The captions as this rater sees them: left then right for a pair, the shuffled order for THumBS."""
    if item.pair_id is not None:
        pair = item.pair
        ids = [pair.caption_a_id, pair.caption_b_id] if item.a_on_left else [pair.caption_b_id, pair.caption_a_id]
    else:
        ids = list(item.caption_order)
    return [captions_by_id[caption_id] for caption_id in ids if caption_id in captions_by_id]


def _caption_ids(item: AssignmentItem) -> list[int]:
    if item.pair_id is not None:
        return [item.pair.caption_a_id, item.pair.caption_b_id]
    return list(item.caption_order)


class RaterAssignmentItemListSerializer(serializers.ListSerializer):
    """Loads the captions of a whole page in one query (instead of one per item)."""

    def to_representation(self, data):
        items = list(data.all() if hasattr(data, "all") else data)
        caption_ids = {caption_id for item in items for caption_id in _caption_ids(item)}
        self.context["captions_by_id"] = Caption.objects.in_bulk(caption_ids)
        return super().to_representation(items)


class RaterAssignmentItemSerializer(serializers.ModelSerializer):
    """One item of a rater's own assignment: the clip's audio and the captions in display order, blinded."""

    clip = BlindClipSerializer(read_only=True)
    task_type = serializers.CharField(source="assignment.campaign.task_type", read_only=True)
    captions = serializers.SerializerMethodField(
        help_text="Captions in the order shown to this rater (left, right for a pair); id and text only"
    )

    class Meta:
        model = AssignmentItem
        fields = [
            "id",
            "assignment",
            "position",
            "task_type",
            "clip",
            "pair",
            "captions",
            "listened_at",
            "completed_at",
        ]
        list_serializer_class = RaterAssignmentItemListSerializer

    @extend_schema_field(BlindCaptionSerializer(many=True))
    def get_captions(self, item: AssignmentItem) -> list[dict]:
        captions_by_id = self.context.get("captions_by_id")
        if captions_by_id is None:
            captions_by_id = Caption.objects.in_bulk(_caption_ids(item))
        return BlindCaptionSerializer(captions_in_display_order(item, captions_by_id), many=True).data


class RaterThumbsRatingSerializer(serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    overall = serializers.DecimalField(max_digits=4, decimal_places=2, read_only=True)

    class Meta:
        model = ThumbsRating
        fields = [
            "id",
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
            "created_at",
        ]


class RaterPairwiseVoteSerializer(serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = PairwiseVote
        fields = ["id", "pair", "campaign", "choice", "left_side", "created_at"]

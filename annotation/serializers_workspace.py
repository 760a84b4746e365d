"""API representations of the annotation workspace: campaigns, annotators' tasks and drafts, reviews into gold."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import AnnotationCampaign, AnnotationReview, AnnotationTask
from annotation.serializers import AudioUrlMixin
from annotation.services.annotation_drafts import draft_from_annotation
from corpus.models import Clip, Dataset

DRAFT_HELP = (
    'The editor\'s draft: {"events": [{"id", "label", "sources": [...], "attributes": [...], '
    '"spans": [[onset, offset], ...] in seconds}], '
    '"relations": [{"first": event id, "second": event id, "kind": "before" | "after" | "simultaneous"}], "note"}; '
    "a label, source or attribute longer than 255 characters is refused (400 naming the field), never cut short"
)


class AnnotationCampaignSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    annotators = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    reviewers = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    clip_count = serializers.SerializerMethodField()

    class Meta:
        model = AnnotationCampaign
        fields = [
            "id",
            "name",
            "dataset",
            "annotations_per_clip",
            "seed",
            "instructions",
            "is_active",
            "clip_count",
            "annotators",
            "reviewers",
            "created_at",
        ]

    def get_clip_count(self, campaign: AnnotationCampaign) -> int:
        return campaign.clips.count()


class AnnotationCampaignInputSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    clips = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="Clip ids; default: every clip of the dataset"
    )
    annotators = serializers.ListField(child=serializers.CharField(), help_text="Usernames of annotators")
    reviewers = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    annotations_per_clip = serializers.IntegerField(min_value=1, max_value=20, default=3)
    seed = serializers.IntegerField(default=0)
    instructions = serializers.CharField(required=False, allow_blank=True, default="")

    def _users(self, usernames: list[str], field: str):
        users = list(get_user_model().objects.filter(username__in=usernames))
        missing = sorted(set(usernames) - {user.username for user in users})
        if missing:
            raise serializers.ValidationError({field: f"no such user: {', '.join(missing)}"})
        return users

    def validate(self, data):
        data["annotators"] = self._users(data["annotators"], "annotators")
        data["reviewers"] = self._users(data.get("reviewers", []), "reviewers")
        clips = Clip.objects.filter(dataset=data["dataset"])
        if "clips" in data:
            wanted = set(data["clips"])
            clips = list(clips.filter(pk__in=wanted))
            if len(clips) != len(wanted):
                raise serializers.ValidationError({"clips": f"not clips of dataset {data['dataset'].name}"})
        data["clips"] = list(clips)
        return data


class AnnotationTaskSerializer(AudioUrlMixin, serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    audio_url = serializers.SerializerMethodField()
    duration_seconds = serializers.FloatField(source="clip.duration_seconds", read_only=True)
    draft = serializers.JSONField(read_only=True, help_text=DRAFT_HELP)

    class Meta:
        model = AnnotationTask
        fields = [
            "id",
            "campaign",
            "clip",
            "annotator",
            "status",
            "audio_url",
            "duration_seconds",
            "draft",
            "draft_version",
            "draft_saved_at",
            "skip_reason",
            "skip_comment",
            "review_comment",
            "submitted_at",
            "annotation",
            "created_at",
        ]

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_audio_url(self, task: AnnotationTask) -> str | None:
        return super().get_audio_url(task.clip)


class DraftSaveInputSerializer(serializers.Serializer):
    base_version = serializers.IntegerField(min_value=0, help_text="The draft_version this edit started from")
    draft = serializers.JSONField(help_text=DRAFT_HELP)


class DraftSavedSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    saved_at = serializers.DateTimeField()


class DraftConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField(help_text='"stale_version": saved elsewhere meanwhile; "locked": no longer editable')
    current_version = serializers.IntegerField(required=False)
    base_version = serializers.IntegerField(required=False)
    current_draft = serializers.JSONField(
        required=False,
        help_text="On a refused draft save: the stored draft at current_version, to merge this tab's edits into "
        "(three-way, against the version this tab last saved or loaded).",
    )


class CheckSerializer(serializers.Serializer):
    level = serializers.ChoiceField(choices=["error", "warning"])
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField()
    event = serializers.CharField(allow_null=True)
    other_event = serializers.CharField(allow_null=True, help_text="The other event of a check about two events")


class ChecksInputSerializer(serializers.Serializer):
    draft = serializers.JSONField(required=False, help_text="A draft to check; default: the stored one")


class ChecksResultSerializer(serializers.Serializer):
    checks = CheckSerializer(many=True)
    can_submit = serializers.BooleanField(help_text="No errors (warnings still need confirming)")


class SubmitInputSerializer(serializers.Serializer):
    base_version = serializers.IntegerField(min_value=0, help_text="The draft_version being submitted")
    confirm_warnings = serializers.BooleanField(default=False)


class SubmitRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    checks = CheckSerializer(many=True)
    needs_confirmation = serializers.BooleanField(help_text="Only warnings: submit again with confirm_warnings")


class SkipInputSerializer(serializers.Serializer):
    reason = serializers.ChoiceField(choices=AnnotationTask.SkipReason.choices)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ReturnInputSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=5000, help_text="What the annotator should change")


class SubmissionSerializer(serializers.Serializer):
    task = serializers.IntegerField(source="pk")
    annotator = serializers.CharField(source="annotator.username")
    submitted_at = serializers.DateTimeField()
    annotation = serializers.IntegerField(source="annotation_id")
    graph = serializers.SerializerMethodField(help_text=DRAFT_HELP)

    @extend_schema_field(serializers.JSONField())
    def get_graph(self, task: AnnotationTask) -> dict:
        return draft_from_annotation(task.annotation)


class AnnotationReviewSerializer(serializers.ModelSerializer):
    campaign = serializers.SlugRelatedField(slug_field="name", read_only=True)
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)
    draft = serializers.JSONField(read_only=True, help_text=DRAFT_HELP)
    submissions = serializers.SerializerMethodField()

    class Meta:
        model = AnnotationReview
        fields = [
            "id",
            "campaign",
            "clip",
            "reviewer",
            "status",
            "draft",
            "draft_version",
            "draft_saved_at",
            "gold",
            "published_at",
            "submissions",
        ]

    @extend_schema_field(SubmissionSerializer(many=True))
    def get_submissions(self, review: AnnotationReview) -> list[dict]:
        from annotation.services.annotation_reviews import clip_submissions

        tasks = clip_submissions(campaign=review.campaign, clip=review.clip)
        return SubmissionSerializer([task for task in tasks if task.annotation_id], many=True).data


class ReviewOpenInputSerializer(serializers.Serializer):
    campaign = serializers.PrimaryKeyRelatedField(queryset=AnnotationCampaign.objects.all())
    clip = serializers.PrimaryKeyRelatedField(queryset=Clip.objects.all())


class PublishInputSerializer(SubmitInputSerializer):
    pass

"""API representations of the corpus.

These serializers show authorship (`role`, `author_kind`, `system`, `source_label`)
and are only used on endpoints for annotators, reviewers and admins. Raters get
the blinded serializers at the bottom of this module (through the ratings API),
which carry no field that could tell a person's caption from a model's.
"""

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import AttributeTag, EventAttribute, ExpertAnnotation, SoundEvent, TemporalRelation
from corpus.models import Caption, CaptioningSystem, Clip, Dataset


class DatasetSerializer(serializers.ModelSerializer):
    clip_count = serializers.IntegerField(read_only=True)
    clips_with_audio_count = serializers.IntegerField(read_only=True)
    reference_count = serializers.IntegerField(read_only=True)
    candidate_count = serializers.IntegerField(read_only=True)
    expert_annotation_count = serializers.IntegerField(read_only=True)
    pair_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "description",
            "clip_count",
            "clips_with_audio_count",
            "reference_count",
            "candidate_count",
            "expert_annotation_count",
            "pair_count",
            "domain",
            "date_delta",
            "airbench_reference",
            "created_at",
        ]


class AudioUrlMixin:
    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_audio_url(self, clip: Clip) -> str | None:
        """The app's audio view (byte ranges, S3 redirect), not the storage path: it names no dataset or file."""
        if not clip.audio:
            return None
        url = reverse("annotation:clip-audio", args=[clip.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url


class ClipSerializer(AudioUrlMixin, serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    audio_url = serializers.SerializerMethodField()

    class Meta:
        model = Clip
        fields = [
            "id",
            "dataset",
            "external_id",
            "file_name",
            "audio_url",
            "sha256",
            "duration_seconds",
            "sample_rate",
            "channels",
            "waveform_peaks",
        ]


class CaptioningSystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = CaptioningSystem
        fields = ["id", "name", "description"]


class CaptionSerializer(serializers.ModelSerializer):
    # Null for human captions (documented as nullable in the schema).
    system = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = Caption
        fields = ["id", "clip", "text", "role", "author_kind", "system", "position", "source_label"]


class AttributeTagSerializer(serializers.ModelSerializer):
    class Meta:
        model = AttributeTag
        fields = ["id", "text", "category", "synonym_group", "antonym_groups", "template", "origin"]


# --- Expert annotations (read) ---------------------------------------------


class EventAttributeSerializer(serializers.ModelSerializer):
    # Both null for a free-text attribute (no tag of the library).
    tag = serializers.SlugRelatedField(slug_field="text", read_only=True, allow_null=True)
    category = serializers.CharField(source="tag.category", read_only=True, default=None, allow_null=True)
    is_free_text = serializers.BooleanField(read_only=True)

    class Meta:
        model = EventAttribute
        fields = ["text", "tag", "category", "is_free_text"]


class SoundEventSerializer(serializers.ModelSerializer):
    sources = serializers.SlugRelatedField(slug_field="text", many=True, read_only=True)
    attributes = EventAttributeSerializer(many=True, read_only=True)
    spans = serializers.SerializerMethodField(help_text="The event's occurrences, [[onset, offset], ...] in seconds")

    class Meta:
        model = SoundEvent
        fields = ["label", "sources", "attributes", "spans"]

    @extend_schema_field(serializers.ListField(child=serializers.ListField(child=serializers.FloatField())))
    def get_spans(self, event: SoundEvent) -> list[list[float]]:
        return [[span.onset_seconds, span.offset_seconds] for span in event.spans.all()]


class TemporalRelationSerializer(serializers.ModelSerializer):
    first_event = serializers.SlugRelatedField(slug_field="label", read_only=True)
    second_event = serializers.SlugRelatedField(slug_field="label", read_only=True)

    class Meta:
        model = TemporalRelation
        fields = ["first_event", "second_event", "kind"]


class ExpertAnnotationSerializer(serializers.ModelSerializer):
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    events = SoundEventSerializer(many=True, read_only=True)
    relations = TemporalRelationSerializer(many=True, read_only=True)

    class Meta:
        model = ExpertAnnotation
        fields = ["id", "clip", "annotator", "status", "events", "relations", "created_at", "updated_at"]


# --- Expert annotations (write input) --------------------------------------


class EventInputSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=255)
    sources = serializers.ListField(child=serializers.CharField(max_length=255), default=list)
    attributes = serializers.ListField(child=serializers.CharField(max_length=255), default=list)
    spans = serializers.ListField(
        child=serializers.ListField(
            child=serializers.FloatField(min_value=0, max_value=86400), min_length=2, max_length=2
        ),
        default=list,
        max_length=100,
        help_text="Occurrences, [[onset, offset], ...] in seconds",
    )

    def validate_spans(self, spans):
        for index, (onset, offset) in enumerate(spans):
            if offset < onset:
                raise serializers.ValidationError(f"spans[{index}]: ends ({offset} s) before it starts ({onset} s)")
        return spans


class RelationInputSerializer(serializers.Serializer):
    first_event = serializers.CharField(max_length=255, help_text="Label of an event of this annotation")
    second_event = serializers.CharField(max_length=255, help_text="Label of an event of this annotation")
    kind = serializers.ChoiceField(choices=TemporalRelation.Kind.choices)


class ExpertAnnotationInputSerializer(serializers.Serializer):
    """What an annotator sends: the whole graph of one clip (it replaces the stored one)."""

    clip = serializers.PrimaryKeyRelatedField(queryset=Clip.objects.all())
    status = serializers.ChoiceField(
        choices=[ExpertAnnotation.Status.DRAFT, ExpertAnnotation.Status.SUBMITTED],
        default=ExpertAnnotation.Status.DRAFT,
        help_text="Annotators save drafts or submit; only reviewers mark gold.",
    )
    events = EventInputSerializer(many=True)
    relations = RelationInputSerializer(many=True, default=list)


class ExpertAnnotationStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ExpertAnnotation.Status.choices)


# --- Uploads (admins) --------------------------------------------------------


class JsonImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The JSON file to import (UTF-8)")
    dataset = serializers.SlugField(max_length=100, help_text="Dataset name; created if missing")


class AudioCapsFImportInputSerializer(JsonImportInputSerializer):
    duplicate_events = serializers.ChoiceField(
        choices=["refuse", ExpertAnnotation.Status.SUBMITTED],
        default="refuse",
        help_text=(
            "Clips with two events that gold publishing calls one sound: refuse the file (default), or import such "
            'clips as submitted ("import as submitted"), not gold'
        ),
    )
    conflicting_attributes = serializers.ChoiceField(
        choices=[ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUBMITTED],
        default=ExpertAnnotation.Status.GOLD,
        help_text="Clips whose attributes the tag library calls opposites or different counts: keep gold (default), "
        "or import as submitted",
    )


class DatasetUploadSerializer(serializers.Serializer):
    """An import handed to the worker: follow `status_url` until `status` is imported or failed."""

    id = serializers.IntegerField()
    kind = serializers.CharField()
    dataset = serializers.CharField(source="dataset_name")
    status = serializers.CharField()
    options = serializers.DictField(child=serializers.CharField())
    errors = serializers.ListField(child=serializers.CharField())
    summary = serializers.DictField(help_text="The import summary (as a 200/201 answer gives it) once imported")
    status_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()

    def get_status_url(self, upload) -> str:
        return reverse("import-upload-detail", args=[upload.pk])

    def get_page_url(self, upload) -> str:
        return reverse("annotation:dataset_upload", args=[upload.pk])


class ImportSummarySerializer(serializers.Serializer):
    source = serializers.CharField()
    counts = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="Per kind of row: how many were created, updated and unchanged",
    )
    extra = serializers.DictField(child=serializers.IntegerField())
    notes = serializers.ListField(child=serializers.CharField())


class AudioUploadInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="An audio file (WAV, FLAC, MP3, ... anything ffmpeg decodes)")


class AudioUploadResultSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="False when the clip already held this exact file")
    clip = ClipSerializer()

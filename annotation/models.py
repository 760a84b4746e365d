"""AudioCaps-F expert annotations of the corpus's clips: the attribute tag library, annotations with their events
and relations, and the campaigns, tasks and reviews they are made in."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from corpus.models import Clip, Dataset, TimeStampedModel

ATTRIBUTE_CATEGORIES = ["Duration", "Volume", "Pitch", "Location", "Count", "Distance", "Variation", "Tone", "Other"]


class AttributeTag(models.Model):
    """An entry of the attribute tag library: AudioCaps-F's library, plus this product's own tags (the Count
    category), each marked by its origin."""

    class Category(models.TextChoices):
        DURATION = "Duration"
        VOLUME = "Volume"
        PITCH = "Pitch"
        LOCATION = "Location"
        COUNT = "Count"
        DISTANCE = "Distance"
        VARIATION = "Variation"
        TONE = "Tone"
        OTHER = "Other"

    class Origin(models.TextChoices):
        AUDIOCAPS_F = "audiocaps-f", "AudioCaps-F's tag library"
        PRODUCT = "product", "This product's extension of the library"

    text = models.CharField(max_length=100, unique=True)
    category = models.CharField(max_length=20, choices=Category.choices)
    synonym_group = models.PositiveIntegerField()
    antonym_groups = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=12, choices=Origin.choices, default=Origin.AUDIOCAPS_F)
    # For a placeholder tag ("on a xxx"): the same with "___" where the annotator types a word ("on a ___").
    # An attribute that fills it in ("on a table") belongs to this tag.
    template = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["category", "synonym_group", "text"]
        constraints = [
            models.CheckConstraint(condition=Q(category__in=ATTRIBUTE_CATEGORIES), name="tag_category_known")
        ]

    def __str__(self) -> str:
        return f"{self.text} ({self.category})"


class ExpertAnnotation(TimeStampedModel):
    """One annotator's AudioCaps-F annotation of one clip (in a campaign, or imported / made through the API).

    A clip has at most one GOLD annotation: the reference X-ACE scores against. Publishing a new gold
    annotation marks the previous one SUPERSEDED (kept for history, counted nowhere).
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        GOLD = "gold", "Gold"
        SUPERSEDED = "superseded", "Superseded gold"

    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="expert_annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="expert_annotations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # The annotation campaign it was made in; null for imported annotations and those saved through the API.
    campaign = models.ForeignKey(
        "AnnotationCampaign", on_delete=models.PROTECT, null=True, blank=True, related_name="annotations"
    )
    # For a gold annotation made in review: the submissions it was merged from.
    merged_from = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="merged_into")
    # What the annotator wants the reviewer to know about the clip (the editor's note field, at most MAX_NOTE
    # characters): reviewers read it beside the graph and the export carries it.
    note = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["clip", "annotator"],
                condition=Q(campaign__isnull=True),
                name="annotation_unique_per_clip_annotator",
            ),
            models.UniqueConstraint(
                fields=["clip", "annotator", "campaign"],
                condition=Q(campaign__isnull=False),
                name="annotation_unique_per_clip_annotator_campaign",
            ),
            models.UniqueConstraint(fields=["clip"], condition=Q(status="gold"), name="annotation_one_gold_per_clip"),
        ]

    def __str__(self) -> str:
        return f"{self.clip} by {self.annotator} ({self.status})"


class SoundEvent(models.Model):
    annotation = models.ForeignKey(ExpertAnnotation, on_delete=models.CASCADE, related_name="events")
    label = models.CharField(max_length=255)
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["annotation", "position"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "position"], name="event_unique_position"),
            models.UniqueConstraint(fields=["annotation", "label"], name="event_unique_label"),
        ]

    def __str__(self) -> str:
        return self.label


class EventSpan(models.Model):
    """One occurrence of an event in the clip (seconds): a car passing three times has three spans."""

    event = models.ForeignKey(SoundEvent, on_delete=models.CASCADE, related_name="spans")
    position = models.PositiveSmallIntegerField()
    onset_seconds = models.FloatField()
    offset_seconds = models.FloatField()

    class Meta:
        ordering = ["event", "position"]
        constraints = [
            models.UniqueConstraint(fields=["event", "position"], name="span_unique_position"),
            models.CheckConstraint(condition=Q(onset_seconds__gte=0), name="span_onset_not_negative"),
            models.CheckConstraint(
                condition=Q(offset_seconds__gte=models.F("onset_seconds")), name="span_offset_after_onset"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.onset_seconds:.2f}–{self.offset_seconds:.2f} s"


class EventSource(models.Model):
    event = models.ForeignKey(SoundEvent, on_delete=models.CASCADE, related_name="sources")
    text = models.CharField(max_length=255)
    position = models.PositiveSmallIntegerField()
    # True when the text is in the product's list of common sound sources (annotation/data/sound_sources.json);
    # other sources are kept and flagged, as free-text attributes are.
    listed = models.BooleanField(default=False)

    class Meta:
        ordering = ["event", "position"]
        constraints = [models.UniqueConstraint(fields=["event", "position"], name="source_unique_position")]

    def __str__(self) -> str:
        return self.text

    @property
    def is_free_text(self) -> bool:
        return not self.listed


class EventAttribute(models.Model):
    event = models.ForeignKey(SoundEvent, on_delete=models.CASCADE, related_name="attributes")
    # As written by the annotator (case kept, so exports reproduce the input).
    text = models.CharField(max_length=255)
    position = models.PositiveSmallIntegerField()
    # Null means a free-text attribute outside the tag library (kept and flagged).
    tag = models.ForeignKey(AttributeTag, on_delete=models.PROTECT, null=True, blank=True, related_name="uses")

    class Meta:
        ordering = ["event", "position"]
        constraints = [models.UniqueConstraint(fields=["event", "position"], name="attribute_unique_position")]

    def __str__(self) -> str:
        return self.text

    @property
    def is_free_text(self) -> bool:
        return self.tag_id is None


class TemporalRelation(models.Model):
    class Kind(models.TextChoices):
        BEFORE = "before", "Before"
        AFTER = "after", "After"
        SIMULTANEOUS = "simultaneous", "Simultaneous"

    annotation = models.ForeignKey(ExpertAnnotation, on_delete=models.CASCADE, related_name="relations")
    first_event = models.ForeignKey(SoundEvent, on_delete=models.CASCADE, related_name="relations_as_first")
    second_event = models.ForeignKey(SoundEvent, on_delete=models.CASCADE, related_name="relations_as_second")
    kind = models.CharField(max_length=15, choices=Kind.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["first_event", "second_event"], name="relation_unique_event_pair"),
            models.CheckConstraint(
                condition=~Q(first_event=models.F("second_event")), name="relation_two_distinct_events"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.first_event} {self.kind} {self.second_event}"


# --- Annotation workspace: campaigns, the annotators' queue, review into gold -------------------------


class AnnotationCampaign(TimeStampedModel):
    """Clips of a dataset that each get `annotations_per_clip` independent annotations, then a review into gold."""

    name = models.SlugField(max_length=100, unique=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="annotation_campaigns")
    clips = models.ManyToManyField(Clip, related_name="annotation_campaigns")
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="annotation_campaigns")
    # Who may review; nobody listed means every reviewer may.
    reviewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="reviewed_annotation_campaigns"
    )
    annotations_per_clip = models.PositiveSmallIntegerField(default=3)
    # Seeds each annotator's own random clip order.
    seed = models.IntegerField(default=0)
    instructions = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(annotations_per_clip__gte=1), name="annotation_campaign_at_least_one")
        ]

    def __str__(self) -> str:
        return self.name


class VersionedDraft(TimeStampedModel):
    """The editor's state (validated JSON, see services/annotation_drafts.py). Every accepted save adds one to
    draft_version, and a save based on an older version is refused (a second tab, a stale device)."""

    draft = models.JSONField(default=dict, blank=True)
    draft_version = models.PositiveIntegerField(default=0)
    draft_saved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class AnnotationTask(VersionedDraft):
    """One annotator's work on one clip of a campaign: the draft they edit, then their submission.

    Scheduled by the queue when the annotator asks for the next clip. Assigned, submitted and returned
    tasks count towards the clip's annotations; a skipped one does not (another annotator gets the clip).
    """

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "In progress"
        SUBMITTED = "submitted", "Submitted"
        RETURNED = "returned", "Returned by a reviewer"
        SKIPPED = "skipped", "Skipped"

    class SkipReason(models.TextChoices):
        BAD_AUDIO = "bad_audio", "Bad or broken audio"
        SILENCE = "silence", "Silence / nothing to annotate"
        OTHER = "other", "Other"

    campaign = models.ForeignKey(AnnotationCampaign, on_delete=models.CASCADE, related_name="tasks")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="annotation_tasks")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_tasks")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    skip_reason = models.CharField(max_length=10, choices=SkipReason.choices, blank=True)
    skip_comment = models.TextField(blank=True)
    review_comment = models.TextField(blank=True)
    returned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    annotation = models.OneToOneField(
        ExpertAnnotation, on_delete=models.SET_NULL, null=True, blank=True, related_name="task"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "annotator", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "clip", "annotator"], name="annotation_task_once_per_annotator"
            ),
            models.CheckConstraint(
                condition=~Q(status="skipped") | ~Q(skip_reason=""), name="annotation_task_skip_has_reason"
            ),
        ]
        indexes = [models.Index(fields=["campaign", "clip", "status"])]

    def __str__(self) -> str:
        return f"{self.campaign} / {self.clip} / {self.annotator} ({self.status})"


class AnnotationReview(VersionedDraft):
    """A reviewer's gold annotation of a campaign clip, edited as a versioned draft and then published."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        PUBLISHED = "published", "Published as gold"

    campaign = models.ForeignKey(AnnotationCampaign, on_delete=models.CASCADE, related_name="reviews")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="annotation_reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotation_reviews")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.IN_PROGRESS)
    gold = models.ForeignKey(ExpertAnnotation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "clip"]
        constraints = [models.UniqueConstraint(fields=["campaign", "clip"], name="annotation_review_once_per_clip")]

    def __str__(self) -> str:
        return f"review of {self.clip} in {self.campaign} ({self.status})"

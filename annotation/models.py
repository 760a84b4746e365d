"""The corpus: datasets, clips, captions, captioning systems and AudioCaps-F expert annotations."""

import secrets
from pathlib import Path

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Dataset(TimeStampedModel):
    """A corpus of clips, plus the settings its metrics are computed with."""

    class Domain(models.TextChoices):
        SOUND = "sound", "Sound events"
        MUSIC = "music", "Music"
        SPEECH = "speech", "Speech"

    class AirBenchReference(models.TextChoices):
        FIRST = "first", "First reference caption"
        LLM = "llm", "LLM-written reference answer (generated once per reference list, cached)"

    class JudgementLayout(models.TextChoices):
        """The layout its pairwise judgements came in, which decides the agreement protocol (protocols.md §1, §6)."""

        FENSE = "fense", "FENSE (HC/HI/HM/MM; also the platform's own studies)"
        BRACE_MAIN = "brace-main", "BRACE-Main (Human-Human / Human-Machine / Machine-Machine)"
        BRACE_HALLUCINATION = "brace-hallucination", "BRACE-Hallucination (original vs one-word hallucination)"

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # What the clips are: the AudioCapBench LLM judge's category guidance.
    domain = models.CharField(max_length=10, choices=Domain.choices, default=Domain.SOUND)
    # DATE's tolerance band (MECAT authors' value for long captions); part of DATE's score version.
    date_delta = models.FloatField(
        default=0.1703,
        validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
        help_text="DATE tolerance band delta (default 0.1703)",
    )
    # The reference answer the AIR-Bench judge compares a caption with.
    airbench_reference = models.CharField(
        max_length=10, choices=AirBenchReference.choices, default=AirBenchReference.FIRST
    )
    # Set by the pairwise importer from the file's layout; a dataset holds pairs of one layout only.
    judgement_layout = models.CharField(max_length=20, choices=JudgementLayout.choices, default=JudgementLayout.FENSE)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(date_delta__gte=0) & Q(date_delta__lte=2), name="dataset_date_delta_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def agreement_protocol(self) -> str:
        """ "brace" for BRACE-layout datasets, else "fense" (FENSE files and the platform's own studies)."""
        return "fense" if self.judgement_layout == self.JudgementLayout.FENSE else "brace"


def clip_audio_path(clip: "Clip", filename: str) -> str:
    """A random object key: stored names (and S3 URLs) say nothing about the clip, its dataset or its upload."""
    suffix = "".join(char for char in Path(filename).suffix.lower() if char.isalnum() or char == ".")
    return f"audio/{secrets.token_hex(16)}{suffix[:8]}"


def rater_audio_path(clip: "Clip", filename: str) -> str:
    """A random object key for the clip's rater copy (see services/rater_audio.py), always a WAV."""
    return f"rater-audio/{secrets.token_hex(16)}.wav"


class Clip(TimeStampedModel):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="clips")
    # AudioCaps YouTube id, Clotho file name, or a workbook record ID such as "3.wav".
    external_id = models.CharField(max_length=255)
    file_name = models.CharField(max_length=255, blank=True)
    # The file as uploaded (admins, annotators and reviewers hear it; its tags and chunks are kept).
    audio = models.FileField(upload_to=clip_audio_path, blank=True, max_length=500)
    # What raters get: the audio decoded and written again as a plain WAV with nothing but its samples
    # (no tags, no chunks, no name), made once when the audio is stored (services/rater_audio.py).
    rater_audio = models.FileField(upload_to=rater_audio_path, blank=True, max_length=500, editable=False)
    sha256 = models.CharField(max_length=64, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    sample_rate = models.PositiveIntegerField(null=True, blank=True)
    channels = models.PositiveSmallIntegerField(null=True, blank=True)
    # Max absolute amplitude per bucket in [0, 1], for drawing the waveform without decoding audio.
    waveform_peaks = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["dataset", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="clip_unique_external_id_per_dataset"),
            models.CheckConstraint(
                condition=Q(duration_seconds__isnull=True) | Q(duration_seconds__gte=0),
                name="clip_duration_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.external_id}"

    @property
    def has_audio(self) -> bool:
        return bool(self.audio)


class CaptioningSystem(TimeStampedModel):
    # Names as in the source data, e.g. "fc", "rl_dbs_3", "attn_temp0.5".
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class CaptionQuerySet(models.QuerySet):
    def corpus(self) -> "CaptionQuerySet":
        """The dataset's own captions: without the copies pair generation made for HI pairs (`pair_artefact`).

        Every reader that treats captions as corpus data (THumBS caption selection, leaderboards, system
        captions, reference sets, corpus counts and exports) goes through this.
        """
        return self.filter(pair_artefact=False)


class Caption(TimeStampedModel):
    class Role(models.TextChoices):
        REFERENCE = "reference", "Reference"
        CANDIDATE = "candidate", "Candidate"

    class AuthorKind(models.TextChoices):
        HUMAN = "human", "Human"
        MACHINE = "machine", "Machine"

    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="captions")
    text = models.TextField()
    role = models.CharField(max_length=10, choices=Role.choices)
    author_kind = models.CharField(max_length=10, choices=AuthorKind.choices)
    system = models.ForeignKey(
        CaptioningSystem, on_delete=models.PROTECT, null=True, blank=True, related_name="captions"
    )
    # Position in the clip's reference list (order kept, duplicates allowed); null for candidates.
    position = models.PositiveSmallIntegerField(null=True, blank=True)
    # Where the caption came from in the source file, e.g. "human_2" or "10882..._human_1".
    source_label = models.CharField(max_length=255, blank=True)
    # Set when a newer submission of the system replaced this caption for its clip. The caption stays
    # (ratings and pairs may point at it) but no longer stands for the system on leaderboards.
    superseded_at = models.DateTimeField(null=True, blank=True)
    # Something a reader of the caption should know, e.g. that a model heard only the first 30 s of the clip.
    note = models.TextField(blank=True)
    # A copy of another clip's caption that pair generation made for an HI pair (the "human incorrect"
    # side must belong to the pair's clip). It exists for that pair only and is not corpus data.
    pair_artefact = models.BooleanField(default=False)
    # For a pair artefact: the caption it copies (its clip is the HI pair's foreign clip).
    copied_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="pair_copies"
    )

    objects = CaptionQuerySet.as_manager()

    class Meta:
        ordering = ["clip", "role", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["clip", "position"], condition=Q(role="reference"), name="caption_unique_reference_position"
            ),
            models.CheckConstraint(
                condition=Q(role="candidate", position__isnull=True) | Q(role="reference", position__isnull=False),
                name="caption_position_only_for_references",
            ),
            models.CheckConstraint(
                condition=Q(author_kind="machine") | Q(system__isnull=True), name="caption_system_only_for_machine"
            ),
        ]
        indexes = [models.Index(fields=["clip", "role"])]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def is_current(self) -> bool:
        return self.superseded_at is None


def system_submission_path(submission: "SystemSubmission", filename: str) -> str:
    return f"submissions/{submission.sha256[:2]}/{submission.sha256}/{filename}"


class SystemSubmission(TimeStampedModel):
    """A captioning system's captions uploaded through the page, kept whether or not the import succeeded."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IMPORTED = "imported", "Imported"
        FAILED = "failed", "Failed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="system_submissions")
    system_name = models.CharField(max_length=100)
    file = models.FileField(upload_to=system_submission_path, max_length=500)
    original_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.system_name} on {self.dataset} ({self.status})"


class DatasetUpload(TimeStampedModel):
    """Files uploaded from a page and imported by a worker with its progress shown: audio (and reference captions)
    for a new dataset, audio for an existing dataset's clips, or one data file of a registered kind
    (services/file_imports.py). The uploaded files are kept in storage only until the import ends
    (services/dataset_uploads.py)."""

    # `kind` is one of these or a data file kind of services/file_imports.py (registered by the app owning it).
    NEW_DATASET = "new_dataset"
    CLIP_AUDIO = "clip_audio"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Importing"
        IMPORTED = "imported", "Imported"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, default=NEW_DATASET)
    dataset_name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    # [{"name": the uploaded file's name, "stored": its storage name, "size": bytes}]; emptied when the import ends
    files = models.JSONField(default=list, blank=True)
    # {"name": ..., "stored": ..., "size": ...} of the captions file, or {}
    captions = models.JSONField(default=dict, blank=True)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    audio_total = models.PositiveIntegerField(default=0)
    audio_done = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"upload of {self.dataset_name} ({self.status})"


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

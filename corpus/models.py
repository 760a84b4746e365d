"""The corpus: datasets, clips, captions, captioning systems, and the uploads they were imported from.

The tables kept the names they had when these models lived in `annotation` (db_table), so moving the models
here moved no data."""

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
        db_table = "annotation_dataset"
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
    """A random object key for the clip's rater copy (see corpus/services/rater_audio.py), always a WAV."""
    return f"rater-audio/{secrets.token_hex(16)}.wav"


class Clip(TimeStampedModel):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="clips")
    # AudioCaps YouTube id, Clotho file name, or a workbook record ID such as "3.wav".
    external_id = models.CharField(max_length=255)
    file_name = models.CharField(max_length=255, blank=True)
    # The file as uploaded (admins, annotators and reviewers hear it; its tags and chunks are kept).
    audio = models.FileField(upload_to=clip_audio_path, blank=True, max_length=500)
    # What raters get: the audio decoded and written again as a plain WAV with nothing but its samples
    # (no tags, no chunks, no name), made once when the audio is stored (corpus/services/rater_audio.py).
    rater_audio = models.FileField(upload_to=rater_audio_path, blank=True, max_length=500, editable=False)
    sha256 = models.CharField(max_length=64, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    sample_rate = models.PositiveIntegerField(null=True, blank=True)
    channels = models.PositiveSmallIntegerField(null=True, blank=True)
    # Max absolute amplitude per bucket in [0, 1], for drawing the waveform without decoding audio.
    waveform_peaks = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "annotation_clip"
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
        db_table = "annotation_captioningsystem"
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
        db_table = "annotation_caption"
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
        db_table = "annotation_systemsubmission"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.system_name} on {self.dataset} ({self.status})"


class DatasetUpload(TimeStampedModel):
    """Files uploaded from a page and imported by a worker with its progress shown: audio (and reference captions)
    for a new dataset, audio for an existing dataset's clips, or one data file of a registered kind
    (annotation/services/file_imports.py). The uploaded files are kept in storage only until the import ends
    (annotation/services/dataset_uploads.py)."""

    # `kind` is one of these or a data file kind of annotation/services/file_imports.py (registered by its app).
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
    # {option: chosen value} of a data file kind that offers choices (passed to its importer), else {}
    options = models.JSONField(default=dict, blank=True)
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
        db_table = "annotation_datasetupload"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"upload of {self.dataset_name} ({self.status})"

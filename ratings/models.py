"""Human judgements: THumBS ratings, caption pairs and votes, campaigns, assignments, screening."""

import base64
import secrets
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.crypto import salted_hmac

from corpus.models import Caption, Clip, Dataset, TimeStampedModel


class Source(models.TextChoices):
    WEB = "web", "Web page"
    WORKBOOK = "workbook", "Excel workbook"
    IMPORT = "import", "Imported data set"
    # A simulated rater's judgement (the demo's study: demo/simulated_answers.py), never a person's.
    SIMULATED = "simulated", "Simulated rater (demo)"


class CaptionPair(TimeStampedModel):
    """Two captions of one clip to be compared; caption_b may be a human caption of another clip (HI)."""

    class Split(models.TextChoices):
        HC = "HC", "Human correct vs human correct"
        HI = "HI", "Human correct vs human incorrect"
        HM = "HM", "Human vs machine"
        MM = "MM", "Machine vs machine"
        # BRACE-Hallucination: an original human caption against the same caption with one word replaced.
        HALLU = "HALLU", "Original vs one-word hallucination"

    class Choice(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        NONE = "none", "No preference"

    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="pairs")
    caption_a = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="pairs_as_a")
    caption_b = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="pairs_as_b")
    split = models.CharField(max_length=5, choices=Split.choices)
    # Identifies the pair in its source so imports are idempotent, e.g. "MM_3" or "campaign-7-12".
    source_key = models.CharField(max_length=100)
    # Quality-control items carry the known answer (and so do HALLU pairs: the original caption).
    gold_choice = models.CharField(max_length=4, choices=Choice.choices, blank=True)
    # The pair's own reference captions when they are not its clip's (BRACE-Hallucination); empty otherwise.
    references = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["clip", "source_key"]
        constraints = [
            models.UniqueConstraint(fields=["clip", "source_key"], name="pair_unique_source_key_per_clip"),
            models.CheckConstraint(condition=~Q(caption_a=models.F("caption_b")), name="pair_two_distinct_captions"),
        ]

    def __str__(self) -> str:
        return f"{self.clip} {self.split} {self.source_key}"


TOKEN_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"  # no look-alikes (l/1, o/0): people copy these from workbooks
TOKEN_LENGTH = 16  # 80 random bits: 5 bits per character of a 32-letter alphabet (a multiple of 8: whole bytes)
# Base32 spells 5 random bits per character in its own alphabet; this maps it onto ours, letter for letter.
_FROM_BASE32 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", TOKEN_ALPHABET)
assert TOKEN_LENGTH % 8 == 0 and len(set(TOKEN_ALPHABET)) == 32, "whole bytes, one letter per 5 bits (no padding)"


def opaque_token() -> str:
    """A random identifier for what raters see (items, their audio, workbook record IDs).

    Unguessable and unrelated to row order, so it says nothing about when or from what the row was made.
    Ten random bytes spelled in base32 (one system call, where drawing each character would take two or more).
    """
    return base64.b32encode(secrets.token_bytes(TOKEN_LENGTH * 5 // 8)).decode().translate(_FROM_BASE32)


def campaign_rater_code(campaign_id: int) -> str:
    """What raters know a campaign by (API `study_id`, workbook zip names): a keyed hash of its id, so
    nothing a rater holds counts campaigns or names another one."""
    return salted_hmac("ratings.campaign-rater-code", str(campaign_id)).hexdigest()[:12]


class Campaign(TimeStampedModel):
    class TaskType(models.TextChoices):
        THUMBS = "thumbs", "THumBS rating"
        PAIRWISE = "pairwise", "Pairwise comparison"

    class Origin(models.TextChoices):
        APP = "app", "Created in the app"
        OUTSIDE = "outside", "A study run outside the app (created by its workbooks)"

    name = models.SlugField(max_length=100, unique=True)
    # What raters see instead of the name (which admins often build from dataset or system names).
    title = models.CharField(
        max_length=120, blank=True, help_text="Shown to raters. Leave out dataset, system and split names."
    )
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.APP)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="campaigns")
    task_type = models.CharField(max_length=10, choices=TaskType.choices)
    judgements_per_item = models.PositiveSmallIntegerField(default=4)
    seed = models.IntegerField(default=0)
    captions = models.ManyToManyField(Caption, blank=True, related_name="campaigns")
    pairs = models.ManyToManyField(CaptionPair, blank=True, related_name="campaigns")
    # Excluded raters keep their data; reports leave them out.
    excluded_raters = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="excluded_from_campaigns"
    )
    is_active = models.BooleanField(default=True)
    # Second headphone screen (Huggins pitch, Milne et al. 2021) on top of the antiphase test everyone takes.
    requires_huggins = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(judgements_per_item__gte=1), name="campaign_at_least_one_judgement")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def rater_title(self) -> str:
        """The campaign's name as raters see it."""
        return self.title or f"{self.get_task_type_display()} study {self.pk}"


class Assignment(TimeStampedModel):
    """One rater's share of a campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    # Seeds this rater's item order, caption orders and sides (ratings/projection.py). Random and never
    # shown, so nothing a rater knows (ids, the campaign seed) predicts those orders.
    order_key = models.CharField(max_length=32, default=opaque_token, editable=False)

    class Meta:
        ordering = ["campaign", "rater"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "rater"], name="assignment_unique_rater_per_campaign")
        ]

    def __str__(self) -> str:
        return f"{self.campaign} / {self.rater}"


class AssignmentItem(models.Model):
    """One thing a rater judges, in the rater's own randomized order: a clip (THumBS) or a pair.

    Raters know an item only by its random `token` (page and audio URLs, workbook record IDs);
    `version` counts accepted submissions, so a page or workbook holding an older version cannot
    overwrite a newer answer without saying so.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="items")
    token = models.CharField(max_length=32, unique=True, default=opaque_token, editable=False)
    position = models.PositiveIntegerField()
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="assignment_items")
    pair = models.ForeignKey(
        CaptionPair, on_delete=models.CASCADE, null=True, blank=True, related_name="assignment_items"
    )
    # For pairs: whether caption_a is shown on the left for this rater.
    a_on_left = models.BooleanField(default=True)
    # For THumBS: caption ids in the order this rater sees them.
    caption_order = models.JSONField(default=list, blank=True)
    first_shown_at = models.DateTimeField(null=True, blank=True)
    # What the server sent of the clip's rater audio to this rater (ratings/services/listening.py):
    # {"file": storage name, "size": bytes, "ranges": [[first, end), ...]}, and when the first byte went.
    audio_served = models.JSONField(default=dict, blank=True)
    audio_first_served_at = models.DateTimeField(null=True, blank=True)
    # The stretch of the rater's one listening clock credited to this clip (never overlapping another of
    # the same rater's items): set with listened_at from the served audio (ratings/services/listening.py).
    listening_from = models.DateTimeField(null=True, blank=True)
    listening_until = models.DateTimeField(null=True, blank=True)
    listened_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    # Unsubmitted form state, saved as the rater types.
    draft = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=0)
    # The record ID a study run outside the app gave this clip in the rater's own workbook (e.g. "3.wav").
    outside_record_id = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["assignment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "position"], name="item_unique_position"),
            models.UniqueConstraint(
                fields=["assignment", "clip"], condition=Q(pair__isnull=True), name="item_unique_clip"
            ),
            models.UniqueConstraint(
                fields=["assignment", "pair"], condition=Q(pair__isnull=False), name="item_unique_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment} #{self.position}"

    @property
    def record_id(self) -> str:
        """The identifier this rater knows the item by (workbooks, ratings export)."""
        return self.outside_record_id or self.token


class ItemEvent(models.Model):
    """Audit trail of an item's answers: submissions, re-openings, changes and refused stale submits."""

    class Kind(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        CHANGE_OPENED = "change_opened", "Rater opened a submitted answer to change it"
        CHANGED = "changed", "Answer changed"
        STALE_REFUSED = "stale_refused", "Stale submission refused"
        STALE_REPLACED = "stale_replaced", "Newer answer replaced after a conflict"
        WORKBOOK = "workbook", "Answer imported from a workbook"
        SIMULATED = "simulated", "Answer of a simulated rater (demo)"

    item = models.ForeignKey(AssignmentItem, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The item version the event produced (or, for a refusal, the version the rater had seen).
    version = models.PositiveIntegerField()
    previous_answer = models.JSONField(default=dict, blank=True)
    answer = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.item} {self.kind} v{self.version}"


class ThumbsRating(TimeStampedModel):
    """A THumBS judgement of one caption; overall = (P + R) / 2 + F + C + I is computed, not stored."""

    class Synthesized(models.TextChoices):
        YES = "yes", "Yes"
        NO = "no", "No"
        UNSET = "", "Not answered"

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="thumbs_ratings")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="thumbs_ratings")
    # Every rating belongs to the campaign it was made in; a campaign with ratings cannot be deleted.
    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="thumbs_ratings")
    precision = models.PositiveSmallIntegerField()
    recall = models.PositiveSmallIntegerField()
    fluency = models.DecimalField(max_digits=2, decimal_places=1, default=Decimal("0"))
    conciseness = models.DecimalField(max_digits=2, decimal_places=1, default=Decimal("0"))
    irrelevance = models.DecimalField(max_digits=2, decimal_places=1, default=Decimal("0"))
    synthesized = models.CharField(max_length=3, choices=Synthesized.choices, blank=True, default="")
    comment = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.WEB)
    workbook_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["caption", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "rater", "caption"], name="thumbs_one_rating_per_campaign_rater_caption"
            ),
            models.CheckConstraint(condition=Q(precision__gte=1, precision__lte=5), name="thumbs_precision_1_to_5"),
            models.CheckConstraint(condition=Q(recall__gte=1, recall__lte=5), name="thumbs_recall_1_to_5"),
            models.CheckConstraint(condition=Q(fluency__gte=-2, fluency__lte=0), name="thumbs_fluency_minus2_to_0"),
            models.CheckConstraint(
                condition=Q(conciseness__gte=-2, conciseness__lte=0), name="thumbs_conciseness_minus2_to_0"
            ),
            models.CheckConstraint(
                condition=Q(irrelevance__gte=-2, irrelevance__lte=0), name="thumbs_irrelevance_minus2_to_0"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on caption {self.caption_id}: {self.overall}"

    @property
    def overall(self) -> Decimal:
        return Decimal(self.precision + self.recall) / 2 + self.fluency + self.conciseness + self.irrelevance


class PairwiseVote(TimeStampedModel):
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pairwise_votes")
    pair = models.ForeignKey(CaptionPair, on_delete=models.CASCADE, related_name="votes")
    # Null only for votes imported from a data set (e.g. Clotho-Eval's judges), which belong to no campaign.
    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, null=True, blank=True, related_name="votes")
    choice = models.CharField(max_length=4, choices=CaptionPair.Choice.choices)
    # Which caption was on the left when the rater voted; unknown for imported votes.
    left_side = models.CharField(max_length=1, choices=[("a", "A"), ("b", "B")], blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.WEB)

    class Meta:
        ordering = ["pair", "rater"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "rater", "pair"], name="vote_one_per_campaign_rater_pair"),
            # NULLs are distinct in a unique index, so imported votes (no campaign) need their own.
            models.UniqueConstraint(
                fields=["rater", "pair"], condition=Q(campaign__isnull=True), name="vote_one_imported_per_rater_pair"
            ),
            models.CheckConstraint(
                condition=Q(campaign__isnull=False) | Q(source="import"), name="vote_campaign_unless_imported"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.pair}: {self.choice}"


class HeadphoneCheck(TimeStampedModel):
    """One attempt at a headphone screen: antiphase (Woods et al. 2017) or Huggins pitch (Milne et al. 2021)."""

    class Kind(models.TextChoices):
        ANTIPHASE = "antiphase", "Antiphase (which tone is quietest)"
        HUGGINS = "huggins", "Huggins pitch (which noise hides a tone)"

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="headphone_checks")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.ANTIPHASE)
    # Per trial: the answer position (0..2) and what the test needs to rebuild the sound, when its sound
    # was fetched (once per attempt) and the rater's answer. Never sent to the browser.
    trials = models.JSONField(default=list)
    correct_count = models.PositiveSmallIntegerField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Set when an admin lets the rater try again: the attempt is kept but no longer counts as a failure.
    reset_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rater", "-created_at"]

    def __str__(self) -> str:
        return f"{self.rater} headphone check {self.created_at:%Y-%m-%d}: {self.passed}"


def workbook_upload_path(upload: "WorkbookUpload", filename: str) -> str:
    return f"workbooks/{upload.sha256[:2]}/{upload.sha256}/{filename}"


class WorkbookUpload(TimeStampedModel):
    """An uploaded THumBS workbook, kept whether or not its import succeeded."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IMPORTED = "imported", "Imported"
        FAILED = "failed", "Failed"

    file = models.FileField(upload_to=workbook_upload_path, max_length=500)
    original_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    campaign_name = models.CharField(max_length=100)
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="workbook_uploads"
    )
    # What the admin asked for: create the campaign (a study run outside the app), replace answers given after export.
    create_campaign = models.BooleanField(default=False)
    replace_newer = models.BooleanField(default=False)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.original_name} ({self.status})"


# Crowd studies live in their own module; imported here so Django registers them with this app.
from ratings.models_platforms import PlatformAction, StudyPlatformLink  # noqa: E402, F401
from ratings.models_study import (  # noqa: E402, F401
    AttentionCheck,
    Participant,
    ParticipantEvent,
    Platform,
    Study,
    StudySlot,
)

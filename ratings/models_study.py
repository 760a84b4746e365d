"""Crowd studies: a campaign published as a public link, its participants, their shares and attention checks.

A participant is a Django user with an unusable password in the rater group, bound to one study and one
platform id (Prolific, MTurk or a generic panel id). It rates through the same item pages as any rater,
so everything raters are guaranteed (blinding, the listening rule, versions) holds for participants.

Shares are built from `StudySlot` rows: each item of the study (a clip for THumBS, a caption pair for
pairwise) has exactly `judgements_per_item` slots, made when the study is published. A participant
takes at most one slot of an item (a unique constraint), and a slot holds at most one participant (a
column), so no item can be over-assigned and no participant judges an item twice, whatever the timing.
"""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from corpus.models import Caption, Clip, TimeStampedModel
from ratings.models import TOKEN_ALPHABET, AssignmentItem, Campaign, CaptionPair

SLUG_LENGTH = 20  # 100 random bits: a study link cannot be guessed
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # upper case without look-alikes: people copy codes
CODE_LENGTH = 8  # as Prolific's completion codes


def study_slug() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(SLUG_LENGTH))


def study_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class Platform(models.TextChoices):
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Amazon Mechanical Turk"
    GENERIC = "generic", "Any panel (participant id in ?pid=)"
    PREVIEW = "preview", "Admin preview (not counted)"


# The platforms a study can recruit on, in the order pages list them and arrival tries them.
RECRUITING_PLATFORMS = (Platform.PROLIFIC, Platform.MTURK, Platform.GENERIC)


def default_platforms() -> list[str]:
    return [Platform.PROLIFIC.value]


class Study(TimeStampedModel):
    """A THumBS or pairwise campaign published for crowd participants under `/study/<slug>/`, recruiting on one or
    more platforms through that one link."""

    class Screens(models.TextChoices):
        ANTIPHASE = "antiphase", "Antiphase"
        HUGGINS = "huggins", "Huggins pitch"
        BOTH = "both", "Antiphase, then Huggins pitch"
        NONE = "none", "None"

    campaign = models.OneToOneField(Campaign, on_delete=models.PROTECT, related_name="study")
    slug = models.CharField(max_length=40, unique=True, default=study_slug, editable=False)
    # Where participants come from (values of RECRUITING_PLATFORMS, at least one): one campaign, one set of slots,
    # whichever platform each participant arrives from; the participant's own `platform` decides how it ends.
    platforms = models.JSONField(default=default_platforms)
    # What participants read on the landing page (the campaign's rater title is the heading).
    description = models.TextField(blank=True)
    estimated_minutes = models.PositiveSmallIntegerField(default=20)
    reward = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    reward_currency = models.CharField(max_length=3, default="GBP")
    # Median effective hourly pay below this shows a warning on the admin page (None: no warning).
    minimum_hourly_pay = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    consent_text = models.TextField()
    # [{"key", "label", "choices": [...] (empty: free text), "required": bool}]
    questionnaire = models.JSONField(default=list, blank=True)
    screens = models.CharField(max_length=10, choices=Screens.choices, default=Screens.ANTIPHASE)
    screen_attempts = models.PositiveSmallIntegerField(default=2)
    items_per_participant = models.PositiveSmallIntegerField(default=20)
    attention_checks = models.PositiveSmallIntegerField(default=4)
    time_limit_minutes = models.PositiveSmallIntegerField(default=60)
    # Exclusion rules (0 turns a rule off): failed checks at or above; median seconds per item below;
    # the same answer on every item.
    exclude_failed_checks = models.PositiveSmallIntegerField(default=2)
    exclude_median_seconds_below = models.FloatField(default=0)
    exclude_same_answer = models.BooleanField(default=True)
    completion_code = models.CharField(max_length=16, default=study_code)
    screen_out_code = models.CharField(max_length=16, default=study_code)
    no_consent_code = models.CharField(max_length=16, default=study_code)
    full_code = models.CharField(max_length=16, default=study_code)
    # MTurk has no screen-out payment: screened-out workers return the HIT, unless the experimenter pays them by
    # approving a HIT submitted with the screen-out code (ratings/services/study_policy.py).
    mturk_screen_out_pay = models.BooleanField(default=False)
    # Generic panels: where the end page sends participants; "{code}" is replaced by their code.
    redirect_url = models.URLField(max_length=500, blank=True)
    # Participants of these campaigns' studies (same platform and id) may not take part.
    excluded_campaigns = models.ManyToManyField(Campaign, blank=True, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(items_per_participant__gte=1), name="study_at_least_one_item"),
            models.CheckConstraint(condition=Q(screen_attempts__gte=1), name="study_at_least_one_screen_attempt"),
            models.CheckConstraint(condition=Q(time_limit_minutes__gte=1), name="study_time_limit_positive"),
        ]

    def __str__(self) -> str:
        return f"study of {self.campaign}"

    @property
    def screen_kinds(self) -> list[str]:
        return {
            self.Screens.ANTIPHASE: ["antiphase"],
            self.Screens.HUGGINS: ["huggins"],
            self.Screens.BOTH: ["antiphase", "huggins"],
            self.Screens.NONE: [],
        }[self.screens]

    @property
    def is_open(self) -> bool:
        return self.campaign.is_active

    def recruits_on(self, platform: str) -> bool:
        return platform in (self.platforms or [])

    @property
    def on_prolific(self) -> bool:
        return self.recruits_on(Platform.PROLIFIC)

    @property
    def on_mturk(self) -> bool:
        return self.recruits_on(Platform.MTURK)

    @property
    def platform_labels(self) -> str:
        """The platforms' names for staff pages ("Prolific, Amazon Mechanical Turk")."""
        return ", ".join(Platform(value).label for value in RECRUITING_PLATFORMS if self.recruits_on(value))


class Participant(TimeStampedModel):
    """One person taking part in a study, known by their platform id; `created_at` is the arrival."""

    class Stage(models.TextChoices):
        LANDING = "landing", "Landing page"
        CONSENT = "consent", "Consent"
        QUESTIONNAIRE = "questionnaire", "Questionnaire"
        SCREENING = "screening", "Headphone screening"
        INSTRUCTIONS = "instructions", "Instructions and practice"
        ITEMS = "items", "Rating items"
        FINISHED = "finished", "Finished"

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out"
        NO_CONSENT = "no_consent", "No consent"
        TIMED_OUT = "timed_out", "Timed out"
        RETURNED = "returned", "Returned"
        FULL = "full", "Study full"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participant")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    platform_id = models.CharField(max_length=64)
    # Prolific STUDY_ID / SESSION_ID, MTurk assignmentId / hitId / turkSubmitTo: for the end page and pay export.
    platform_data = models.JSONField(default=dict, blank=True)
    is_preview = models.BooleanField(default=False)
    stage = models.CharField(max_length=15, choices=Stage.choices, default=Stage.LANDING)
    status = models.CharField(max_length=15, choices=Status.choices, default=Status.IN_PROGRESS)
    consented_at = models.DateTimeField(null=True, blank=True)
    questionnaire_answers = models.JSONField(default=dict, blank=True)
    practice_done_at = models.DateTimeField(null=True, blank=True)
    # When the server sent the practice sound (whole, in one response): the practice's listening proof.
    practice_audio_served_at = models.DateTimeField(null=True, blank=True)
    items_started_at = models.DateTimeField(null=True, blank=True)
    # The share is reserved until then; afterwards its unanswered items go to the next participants.
    reserved_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Excluded participants keep their answers; every figure and export leaves them out.
    excluded_at = models.DateTimeField(null=True, blank=True)
    exclusion_reasons = models.JSONField(default=list, blank=True)
    # The rules that excluded them (ratings/services/study_policy.py): whether the pay export proposes a rejection.
    exclusion_codes = models.JSONField(default=list, blank=True)
    # Keyed hash of the arrival address (never the address itself), for the arrival rate limit.
    address_key = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            # The same platform id takes part once per study (previews are the admins').
            models.UniqueConstraint(
                fields=["study", "platform", "platform_id"],
                condition=Q(is_preview=False),
                name="participant_once_per_study",
            ),
        ]
        indexes = [models.Index(fields=["address_key", "created_at"])]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.platform_id}"

    @property
    def is_excluded(self) -> bool:
        return self.excluded_at is not None

    @property
    def ending_platform(self) -> str:
        """The platform whose rules end this participant's study: their own; an admin preview sees the study's
        first platform (what that platform's participants see)."""
        if self.platform == Platform.PREVIEW:
            return (self.study.platforms or default_platforms())[0]
        return self.platform

    @property
    def outcome(self) -> str:
        """What the pay export says: excluded wins over the status it ended with."""
        return "excluded" if self.is_excluded else self.status

    @property
    def outcome_label(self) -> str:
        return "Excluded" if self.is_excluded else self.get_status_display()


class ParticipantEvent(models.Model):
    """What happened to a participant, in order: arrival, stages, screening, release, exclusion, reinstatement."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=30)
    detail = models.JSONField(default=dict, blank=True)
    # The admin who excluded or reinstated the participant (None: the participant or the rules).
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["participant", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.participant} {self.kind}"


class StudySlot(models.Model):
    """One of the `judgements_per_item` judgements an item of the study needs, held by at most one participant."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="slots")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    pair = models.ForeignKey(CaptionPair, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    number = models.PositiveSmallIntegerField()
    participant = models.ForeignKey(Participant, on_delete=models.SET_NULL, null=True, blank=True, related_name="slots")
    item = models.ForeignKey(AssignmentItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["study", "clip", "pair", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "clip", "number"], condition=Q(pair__isnull=True), name="slot_unique_clip_number"
            ),
            models.UniqueConstraint(
                fields=["study", "pair", "number"], condition=Q(pair__isnull=False), name="slot_unique_pair_number"
            ),
            models.UniqueConstraint(
                fields=["study", "clip", "participant"],
                condition=Q(pair__isnull=True, participant__isnull=False),
                name="slot_one_clip_per_participant",
            ),
            models.UniqueConstraint(
                fields=["study", "pair", "participant"],
                condition=Q(pair__isnull=False, participant__isnull=False),
                name="slot_one_pair_per_participant",
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="slot_number_positive"),
        ]
        indexes = [models.Index(fields=["study", "participant"])]

    def __str__(self) -> str:
        return f"{self.study} {self.pair_id or self.clip_id} #{self.number}"


class AttentionCheck(models.Model):
    """A known-answer check inside a participant's share; its answer is for exclusion, never a study figure.

    Pairwise: a gold HI pair (`pair`), passed when the vote equals the pair's gold choice. THumBS: a catch
    caption of another clip (`caption`) among an item's captions, passed when its precision is at most 2.
    The answer itself is an ordinary vote or rating (so the page is the same as for any item); every
    reader of judgements leaves it out (ratings.selectors.included_votes / included_thumbs_ratings).
    """

    class Kind(models.TextChoices):
        GOLD_PAIR = "gold_pair", "Gold HI pair"
        CATCH_CAPTION = "catch_caption", "Catch caption (precision at most 2)"

    item = models.ForeignKey(AssignmentItem, on_delete=models.CASCADE, related_name="attention_checks")
    # Denormalised from the item, so readers can leave the answers out with one indexed lookup.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=15, choices=Kind.choices)
    pair = models.ForeignKey(CaptionPair, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    passed = models.BooleanField(null=True, blank=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="gold_pair", pair__isnull=False, caption__isnull=True))
                | Q(kind="catch_caption", pair__isnull=True, caption__isnull=False),
                name="check_subject_matches_kind",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "rater"])]

    def __str__(self) -> str:
        return f"{self.kind} on {self.item}"

"""A crowd study's accounts on the platforms (Prolific study, MTurk HIT) and every action sent to them.

`PlatformAction` is the log that makes sending safe to repeat: an action with an `idempotency_key` that
succeeded once is never sent again (a unique constraint over the successful rows), so pressing "send" twice,
or again after a half-failed batch, only sends what has not gone through. A row is saved `pending` before its
request goes out and the constraint covers pending rows too, so two sends at once never both send an action.
Failed attempts are kept too, with the platform's answer, so the staff page can say why an action was refused.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from ratings.models_study import Study


class StudyPlatformLink(models.Model):
    """Where the study lives on its platforms: Prolific's STUDY_ID and the MTurk HIT made for it (either or both)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="platform_link")
    prolific_study_id = models.CharField(max_length=24, blank=True)
    mturk_hit_id = models.CharField(max_length=64, blank=True)
    mturk_hit_type_id = models.CharField(max_length=64, blank=True)
    # The qualification this study's MTurk workers are given, so later HITs can keep them out (DoesNotExist).
    mturk_qualification_id = models.CharField(max_length=64, blank=True)
    # Admission control: with this many participants in progress the Prolific study is paused, and started again
    # below it (0: off). `paused_for_limit` says the pause was this rule's, so only such a pause is lifted.
    active_limit = models.PositiveIntegerField(default=0)
    paused_for_limit = models.BooleanField(default=False)
    # The last submission list read from Prolific: {participant_id: {"id": submission id, "status": ...}}.
    prolific_submissions = models.JSONField(default=dict, blank=True)
    # The last assignment states read from MTurk: {assignment id: "Submitted" | "Approved" | "Rejected"}.
    mturk_assignments = models.JSONField(default=dict, blank=True)
    # When each platform was last read (a study may recruit on both): Prolific's submissions, MTurk's assignments.
    synced_at = models.DateTimeField(null=True, blank=True)
    mturk_synced_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"platform link of {self.study}"


class PlatformAction(models.Model):
    """One request sent (or attempted) to a crowd platform on a study's behalf."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="platform_actions")
    platform = models.CharField(max_length=10)
    action = models.CharField(max_length=30)
    target_id = models.CharField(max_length=64, blank=True)
    # Same key, same action: once one row with it succeeded, the action is done (empty: not deduplicated).
    idempotency_key = models.CharField(max_length=64, blank=True)
    request_summary = models.JSONField(default=dict, blank=True)
    # HTTP status for Prolific; MTurk's HTTPStatusCode (0: no answer at all, e.g. the host was unreachable).
    response_status = models.PositiveSmallIntegerField(default=0)
    response_data = models.JSONField(default=dict, blank=True)
    succeeded = models.BooleanField(default=False)
    # Claimed by a send that has not recorded the platform's answer yet (so no other send takes the action).
    pending = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "idempotency_key"],
                condition=(Q(succeeded=True) | Q(pending=True)) & ~Q(idempotency_key=""),
                name="platform_action_once_or_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform} {self.action} {self.target_id}"

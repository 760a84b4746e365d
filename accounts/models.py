"""Invitations: how a real person gets an account (docs/operations.md, "People and accounts").

Staff create the account (no usable password, the chosen role's group) and an invitation; the person opens the
invitation's link, sets a password and is signed in. The link carries the invitation's random key, signed and
timestamped (accounts/services.py), so it cannot be guessed or altered; the row says whether it is still open.
"""

from django.conf import settings
from django.db import models


class Invitation(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations")
    # The role granted with the invitation (the account's groups are the source of truth; this is its history).
    role = models.CharField(max_length=20)
    key = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    # Set when staff issue a newer link for the same person: only the newest link works.
    replaced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(accepted_at__isnull=True) | models.Q(replaced_at__isnull=True),
                name="invitation_accepted_or_replaced_not_both",
            )
        ]

    def __str__(self) -> str:
        return f"invitation of {self.user} as {self.role}"

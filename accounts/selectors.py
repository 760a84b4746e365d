"""Who can sign in, and the People page's list (accounts/services.py changes them)."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Invitation
from accounts.roles import ADMIN, KNOWN_GROUPS
from accounts.services import invitation_token

# A password nobody can type: Django's unusable marker, or empty (an account made with `objects.create`).
_NO_PASSWORD = Q(password__startswith=UNUSABLE_PASSWORD_PREFIX) | Q(password="")


def _open_invitations(now):
    return Invitation.objects.filter(accepted_at__isnull=True, replaced_at__isnull=True, expires_at__gt=now)


def people_who_can_sign_in() -> QuerySet:
    """Active accounts with a password, or with an open invitation (they will have one on first visit).

    Not: accounts standing for imported judges and experts or simulated people (no usable password, never
    invited), crowd participants (they enter by their study's link, not by signing in), deactivated accounts.
    Pages that offer people for work (campaign forms) start from this queryset.
    """
    user_model = get_user_model()
    open_invitation = _open_invitations(timezone.now()).filter(user=OuterRef("pk"))
    return user_model.objects.filter(is_active=True).filter(~_NO_PASSWORD | Exists(open_invitation))


@dataclass
class PersonRow:
    user: object
    roles: list[str]
    state: str  # invited | invitation expired | active | deactivated
    invitation: Invitation | None  # the newest invitation, if any
    token: str  # a link's secret for an open invitation, else ""
    link: str = ""  # the whole link, filled in by the page (it knows the host)

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.roles


def people_list() -> tuple[list[PersonRow], int]:
    """Everyone who is or was meant to sign in, with roles and state; and how many data-only accounts are left out.

    Listed: admins, accounts with a password, invited accounts (deactivated ones included). Left out (counted):
    accounts that stand for imported or simulated people and crowd participants, who never sign in.
    """
    user_model = get_user_model()
    invited = Invitation.objects.filter(user=OuterRef("pk"))
    listed = Q(is_staff=True) | Q(is_superuser=True) | ~_NO_PASSWORD | Exists(invited)
    users = list(
        user_model.objects.filter(listed)
        .prefetch_related("groups", "invitations")
        .order_by("-is_active", user_model.USERNAME_FIELD)
    )
    now = timezone.now()
    rows = []
    for user in users:
        roles = {group.name for group in user.groups.all()} & set(KNOWN_GROUPS)
        if user.is_staff or user.is_superuser:
            roles.add(ADMIN)
        invitations = sorted(user.invitations.all(), key=lambda invitation: invitation.created_at, reverse=True)
        latest = invitations[0] if invitations else None
        has_password = bool(user.password) and user.has_usable_password()
        is_open = (
            latest is not None and latest.accepted_at is None and latest.replaced_at is None and latest.expires_at > now
        )
        if not user.is_active:
            state = "deactivated"
        elif has_password:
            state = "active"
        elif is_open:
            state = "invited"
        else:
            state = "invitation expired"
        token = invitation_token(invitation=latest) if is_open and user.is_active else ""
        rows.append(PersonRow(user=user, roles=sorted(roles), state=state, invitation=latest, token=token))
    data_only = user_model.objects.exclude(listed).count()
    return rows, data_only

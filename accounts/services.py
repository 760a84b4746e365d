"""People: invite them (a signed, expiring, single-use link), change their roles, deactivate and reactivate them.

Who may call these is the views' business (staff); the rules about accounts live here. The roles staff hand out
are the three groups of people who do the work (rater, annotator, reviewer); admin accounts are staff accounts and
are managed in the admin site, so nothing here makes, unmakes or deactivates one.
"""

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from accounts.models import Invitation
from accounts.roles import ANNOTATOR, RATER, REVIEWER
from common.structured_log import log_event

logger = logging.getLogger("captioneval.accounts")

#: the roles staff give on the People page, in the order the page lists them
PERSON_ROLES = (RATER, ANNOTATOR, REVIEWER)
INVITATION_VALID_DAYS = 7
INVITATION_SALT = "accounts.invitation"
MAX_INVITEES = 500


class AccountError(ValueError):
    """A request about accounts that cannot be carried out; the message says why (shown as is).

    `problems`: each thing wrong, one sentence each (a list of people can have several), for forms to list.
    """

    def __init__(self, *problems: str):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


class InvitationLinkError(Exception):
    """An invitation link that cannot be used; the message says why to the person.

    `reason`: invalid (forged, altered or cut short), expired, used, replaced (a newer link exists), deactivated.
    """

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Invitee:
    username: str
    email: str


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: Invitation
    token: str


def invitees_parse(*, text: str) -> list[Invitee]:
    """One person per line: `username`, `email`, or `username email` (a comma also separates).

    An email alone becomes the username too, so the person signs in with it. Raises AccountError listing every
    line that cannot be read (line numbers from 1), so nothing is created from a list with a mistake in it.
    """
    username_validator = UnicodeUsernameValidator()
    invitees, problems, seen = [], [], {}
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1)]
    lines = [(number, line) for number, line in lines if line]
    if not lines:
        raise AccountError("Enter at least one username or email address.")
    if len(lines) > MAX_INVITEES:
        raise AccountError(f"At most {MAX_INVITEES} people at once; the list has {len(lines)}.")
    for number, line in lines:
        parts = [part for part in re.split(r"[\s,;]+", line) if part]
        emails = [part for part in parts if "@" in part]
        names = [part for part in parts if "@" not in part]
        if len(parts) > 2 or len(emails) > 1 or len(names) > 1:
            problems.append(f'line {number} "{line}": write a username, an email address, or both')
            continue
        email = emails[0] if emails else ""
        username = names[0] if names else email
        try:
            if email:
                validate_email(email)
        except ValidationError:
            problems.append(f'line {number}: "{email}" is not an email address')
            continue
        try:
            if len(username) > 150:
                raise ValidationError("too long")
            username_validator(username)
        except ValidationError:
            problems.append(
                f'line {number}: "{username}" cannot be a username (up to 150 letters, digits and @ . + - _)'
            )
            continue
        if username.lower() in seen:
            problems.append(f'line {number}: "{username}" is already on line {seen[username.lower()]}')
            continue
        seen[username.lower()] = number
        invitees.append(Invitee(username=username, email=email))
    if problems:
        raise AccountError(*problems)
    return invitees


def invitation_token(*, invitation: Invitation) -> str:
    """The secret part of the invitation's link: its random key, signed and timestamped."""
    return signing.dumps(invitation.key, salt=INVITATION_SALT)


def _role_check(role: str) -> None:
    if role not in PERSON_ROLES:
        raise AccountError(f'unknown role "{role}": choose one of {", ".join(PERSON_ROLES)}')


def _invitation_issue(*, user, role: str, by, now: datetime) -> IssuedInvitation:
    invitation = Invitation.objects.create(
        user=user,
        role=role,
        key=secrets.token_urlsafe(32),
        created_by=by,
        expires_at=now + timedelta(days=INVITATION_VALID_DAYS),
    )
    return IssuedInvitation(invitation=invitation, token=invitation_token(invitation=invitation))


@transaction.atomic
def invitation_create(*, invitees: list[Invitee], role: str, by) -> list[IssuedInvitation]:
    """New accounts (no usable password, in the role's group) with one invitation each; all or none.

    Refuses a username or email that an account already has (case aside): that person already has an account,
    whose roles are changed on the People page, or whose open invitation gets a new link there.
    """
    _role_check(role)
    if not invitees:
        raise AccountError("Enter at least one username or email address.")
    user_model = get_user_model()
    problems = []
    for invitee in invitees:
        if user_model.objects.filter(username__iexact=invitee.username).exists():
            problems.append(f'"{invitee.username}" already has an account')
        elif invitee.email and user_model.objects.filter(email__iexact=invitee.email).exists():
            problems.append(f'an account with the email "{invitee.email}" exists already')
    if problems:
        raise AccountError(*problems, "Change existing accounts in the list of people below.")
    group, _ = Group.objects.get_or_create(name=role)
    now = timezone.now()
    issued = []
    for invitee in invitees:
        user = user_model(username=invitee.username, email=invitee.email)
        user.set_unusable_password()
        user.save()
        user.groups.add(group)
        issued.append(_invitation_issue(user=user, role=role, by=by, now=now))
    log_event(logger, "invitations_created", by=getattr(by, "pk", None), role=role, count=len(issued))
    return issued


@transaction.atomic
def invitation_renew(*, user, by) -> IssuedInvitation:
    """A fresh link (a full validity period) for someone invited who has not accepted; older links stop working."""
    if user.has_usable_password() and user.password:
        raise AccountError(f"{user.get_username()} has set a password already: they sign in on the login page.")
    latest = user.invitations.first()
    if latest is None:
        raise AccountError(f"{user.get_username()} was never invited: their account stands for imported data.")
    now = timezone.now()
    user.invitations.filter(accepted_at__isnull=True, replaced_at__isnull=True).update(replaced_at=now)
    issued = _invitation_issue(user=user, role=latest.role, by=by, now=now)
    log_event(logger, "invitation_renewed", by=getattr(by, "pk", None), user=user.pk)
    return issued


def invitation_check(*, token: str) -> Invitation:
    """The open invitation a link stands for, or InvitationLinkError saying why it cannot be used."""
    max_age = timedelta(days=INVITATION_VALID_DAYS)
    try:
        key = signing.loads(token, salt=INVITATION_SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise InvitationLinkError(
            "expired", "This invitation link has expired. Ask the person who invited you for a new one."
        ) from None
    except signing.BadSignature:
        raise InvitationLinkError(
            "invalid",
            "This invitation link is not valid: it may have been cut short or changed when it was copied. "
            "Open the whole link from the message you received, or ask for a new one.",
        ) from None
    invitation = Invitation.objects.select_related("user").filter(key=key).first() if isinstance(key, str) else None
    if invitation is None:
        raise InvitationLinkError(
            "invalid", "This invitation link is not valid (the invitation no longer exists). Ask for a new one."
        )
    if invitation.accepted_at is not None:
        raise InvitationLinkError(
            "used",
            f"This invitation link was already used on {timezone.localtime(invitation.accepted_at):%d %b %Y}: "
            "each link works once. Sign in with your username and password.",
        )
    if invitation.replaced_at is not None:
        raise InvitationLinkError(
            "replaced", "A newer invitation replaced this link. Use the newest link you received."
        )
    if invitation.expires_at <= timezone.now():
        raise InvitationLinkError(
            "expired",
            f"This invitation link expired on {timezone.localtime(invitation.expires_at):%d %b %Y %H:%M}. "
            "Ask the person who invited you for a new one.",
        )
    if not invitation.user.is_active:
        raise InvitationLinkError("deactivated", "This account has been deactivated. Ask an administrator.")
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, password: str):
    """Set the invited person's password and close the invitation; returns the user (the view signs them in).

    The password is validated by the caller's form (Django's password validators). Two tabs submitting the same
    link at once: the conditional update lets exactly one through, the other is refused as used.
    """
    invitation = invitation_check(token=token)
    now = timezone.now()
    closed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, replaced_at__isnull=True).update(
        accepted_at=now
    )
    if closed != 1:
        raise InvitationLinkError("used", "This invitation link was already used: sign in with your password.")
    user = invitation.user
    user.set_password(password)
    user.save(update_fields=["password"])
    log_event(logger, "invitation_accepted", user=user.pk)
    return user


def _managed_check(*, user, by) -> None:
    if user.pk == getattr(by, "pk", None):
        raise AccountError("You cannot change your own account here.")
    if user.is_staff or user.is_superuser:
        raise AccountError(f"{user.get_username()} is an admin: admin accounts are changed in the admin site.")


@transaction.atomic
def account_deactivate(*, user, by) -> None:
    """The person can no longer sign in (their sessions and API tokens stop working); their work is kept."""
    _managed_check(user=user, by=by)
    user.is_active = False
    user.save(update_fields=["is_active"])
    log_event(logger, "account_deactivated", by=getattr(by, "pk", None), user=user.pk)


@transaction.atomic
def account_reactivate(*, user, by) -> None:
    """The person can sign in again with their password (or their invitation, while it is open)."""
    _managed_check(user=user, by=by)
    user.is_active = True
    user.save(update_fields=["is_active"])
    log_event(logger, "account_reactivated", by=getattr(by, "pk", None), user=user.pk)


@transaction.atomic
def account_roles_set(*, user, roles: list[str], by) -> None:
    """Give the account exactly these of the person roles; other groups (admin, crowd participant) stay as they are."""
    for role in roles:
        _role_check(role)
    _managed_check(user=user, by=by)
    wanted = [Group.objects.get_or_create(name=role)[0] for role in roles]
    user.groups.remove(*Group.objects.filter(name__in=PERSON_ROLES).exclude(name__in=roles))
    user.groups.add(*wanted)
    log_event(logger, "account_roles_set", by=getattr(by, "pk", None), user=user.pk, roles=sorted(roles))

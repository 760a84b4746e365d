"""Invitations and account changes (accounts/services.py): the rules, without pages."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import signing
from django.utils import timezone

from accounts.models import Invitation
from accounts.roles import user_roles
from accounts.services import (
    AccountError,
    InvitationLinkError,
    Invitee,
    account_deactivate,
    account_reactivate,
    account_roles_set,
    invitation_accept,
    invitation_check,
    invitation_create,
    invitation_renew,
    invitees_parse,
)

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-pass-phrase-42"


@pytest.fixture
def boss(make_user):
    return make_user("boss", staff=True)


def test_a_list_reads_usernames_emails_and_both():
    text = "ada@example.org\n\n  bob, bob@example.org \ncarol\n"
    assert invitees_parse(text=text) == [
        Invitee(username="ada@example.org", email="ada@example.org"),
        Invitee(username="bob", email="bob@example.org"),
        Invitee(username="carol", email=""),
    ]


def test_a_list_with_mistakes_names_every_wrong_line():
    with pytest.raises(AccountError) as error:
        invitees_parse(text="ada\nnot@an@email\nbob cat dog\nAda\nsp%ce")
    message = str(error.value)
    assert 'line 2: "not@an@email" is not an email address' in message
    assert 'line 3 "bob cat dog": write a username, an email address, or both' in message
    assert 'line 4: "Ada" is already on line 1' in message
    assert 'line 5: "sp%ce" cannot be a username' in message
    with pytest.raises(AccountError, match="at least one"):
        invitees_parse(text=" \n ")


def test_invitation_round_trip_gives_the_role_and_a_working_password(boss):
    [issued] = invitation_create(invitees=[Invitee("ada", "ada@example.org")], role="rater", by=boss)
    ada = issued.invitation.user
    # Invited: in the rater group already, but no password anybody could type.
    assert user_roles(ada) == {"rater"} and not ada.has_usable_password()
    assert invitation_check(token=issued.token) == issued.invitation

    user = invitation_accept(token=issued.token, password=PASSWORD)

    assert user == ada
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    issued.invitation.refresh_from_db()
    assert issued.invitation.accepted_at is not None and issued.invitation.created_by == boss
    with pytest.raises(InvitationLinkError) as refused:
        invitation_accept(token=issued.token, password="another-pass-phrase-43")
    assert refused.value.reason == "used"
    user.refresh_from_db()
    assert user.check_password(PASSWORD)  # the second use changed nothing


def test_a_bulk_invitation_is_all_or_nothing(boss, make_user):
    make_user("bob")
    before = get_user_model().objects.count()
    with pytest.raises(AccountError, match='"Bob" already has an account'):
        invitation_create(invitees=[Invitee("ada", ""), Invitee("Bob", "")], role="annotator", by=boss)
    assert get_user_model().objects.count() == before and not Invitation.objects.exists()
    with pytest.raises(AccountError, match='unknown role "admin"'):
        invitation_create(invitees=[Invitee("ada", "")], role="admin", by=boss)
    issued = invitation_create(invitees=[Invitee("ada", ""), Invitee("cy", "cy@example.org")], role="reviewer", by=boss)
    assert [item.invitation.user.username for item in issued] == ["ada", "cy"]
    assert all(user_roles(item.invitation.user) == {"reviewer"} for item in issued)
    assert len({item.token for item in issued}) == 2


def test_expired_tampered_and_replaced_links_are_refused(boss):
    [issued] = invitation_create(invitees=[Invitee("ada", "")], role="rater", by=boss)
    with pytest.raises(InvitationLinkError) as refused:
        invitation_check(token=issued.token[:-3] + ("aaa" if not issued.token.endswith("aaa") else "bbb"))
    assert refused.value.reason == "invalid"
    # A link signed with another key (someone forging one for a known invitation key) is as invalid.
    forged = signing.dumps(issued.invitation.key, salt="accounts.invitation", key="not-the-secret-key")
    with pytest.raises(InvitationLinkError, match="not valid"):
        invitation_check(token=forged)

    Invitation.objects.filter(pk=issued.invitation.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(InvitationLinkError) as refused:
        invitation_accept(token=issued.token, password=PASSWORD)
    assert refused.value.reason == "expired" and "expired on" in str(refused.value)
    assert not get_user_model().objects.get(username="ada").has_usable_password()

    renewed = invitation_renew(user=issued.invitation.user, by=boss)
    with pytest.raises(InvitationLinkError) as refused:
        invitation_check(token=issued.token)
    assert refused.value.reason == "replaced"
    assert invitation_accept(token=renewed.token, password=PASSWORD).check_password(PASSWORD)


def test_a_deactivated_invitee_cannot_accept_until_reactivated(boss):
    [issued] = invitation_create(invitees=[Invitee("ada", "")], role="rater", by=boss)
    ada = issued.invitation.user
    account_deactivate(user=ada, by=boss)
    with pytest.raises(InvitationLinkError) as refused:
        invitation_accept(token=issued.token, password=PASSWORD)
    assert refused.value.reason == "deactivated"
    account_reactivate(user=ada, by=boss)
    assert invitation_accept(token=issued.token, password=PASSWORD).is_active


def test_roles_change_only_the_person_roles(boss, make_user):
    Group.objects.get_or_create(name="participant")
    person = make_user("pat", "rater", "participant")
    account_roles_set(user=person, roles=["annotator", "reviewer"], by=boss)
    assert user_roles(person) == {"annotator", "reviewer", "participant"}
    account_roles_set(user=person, roles=[], by=boss)
    assert user_roles(person) == {"participant"}
    with pytest.raises(AccountError, match='unknown role "admin"'):
        account_roles_set(user=person, roles=["admin"], by=boss)


def test_admins_and_oneself_are_not_changed_here(boss, make_user):
    other_admin = make_user("chief", staff=True)
    with pytest.raises(AccountError, match="admin site"):
        account_deactivate(user=other_admin, by=boss)
    with pytest.raises(AccountError, match="your own account"):
        account_roles_set(user=boss, roles=["rater"], by=boss)
    assert get_user_model().objects.get(username="chief").is_active


def test_a_new_link_is_only_for_people_who_have_not_accepted(boss, make_user):
    with pytest.raises(AccountError, match="sign in on the login page"):
        invitation_renew(user=make_user("has-password", "rater"), by=boss)
    judge = get_user_model()(username="brace-sample-judge-1")
    judge.set_unusable_password()
    judge.save()
    with pytest.raises(AccountError, match="never invited"):
        invitation_renew(user=judge, by=boss)

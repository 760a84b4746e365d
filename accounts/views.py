"""The People page (staff invite people, change roles, deactivate) and the invitation link (anyone with it)."""

from functools import partial

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import selectors, services
from accounts.forms import InvitationAcceptForm, InviteForm, RolesForm
from accounts.roles import ADMIN, roles_required

# The status of a refused link: it was right once (410 Gone) or never was (400).
REFUSED_STATUS = {"invalid": 400, "expired": 410, "used": 410, "replaced": 410, "deactivated": 403}


def _people_page(request, *, form: InviteForm, status: int = 200) -> HttpResponse:
    rows, data_only = selectors.people_list()
    new_ids = {int(part) for part in request.GET.get("new", "").split(",") if part.isdigit()}
    for row in rows:
        if row.token:
            row.link = request.build_absolute_uri(reverse("accounts:invitation_accept", args=[row.token]))
    context = {
        "rows": rows,
        "new_rows": [row for row in rows if row.user.pk in new_ids and row.link],
        "data_only": data_only,
        "form": form,
        "role_choices": RolesForm.base_fields["roles"].choices,
        "valid_days": services.INVITATION_VALID_DAYS,
    }
    return render(request, "accounts/people.html", context, status=status)


@roles_required(ADMIN)
def people(request):
    """Who: admins. Invite people (one or a list) with a role; everyone who signs in, with roles and state."""
    return _people_page(request, form=InviteForm())


@roles_required(ADMIN)
@require_POST
def invite(request):
    """Who: admins. Create the accounts and their invitation links, all or none; back to the page with the links."""
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            issued = services.invitation_create(
                invitees=form.cleaned_data["people"], role=form.cleaned_data["role"], by=request.user
            )
        except services.AccountError as error:
            form.add_error("people", error.problems)
        else:
            messages.success(
                request,
                f"{len(issued)} {'person' if len(issued) == 1 else 'people'} invited as {form.cleaned_data['role']}: "
                "send each their link below.",
            )
            ids = ",".join(str(item.invitation.user_id) for item in issued)
            return redirect(f"{reverse('accounts:people')}?new={ids}#new-links")
    return _people_page(request, form=form, status=400)


def _person_action(request, user_id: int, service, done: str):
    """Call `service(user=<the person>, by=<staff>)`; its refusal or `done` becomes the page's message."""
    person = get_object_or_404(get_user_model(), pk=user_id)
    try:
        service(user=person, by=request.user)
    except services.AccountError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, done.format(name=person.get_username()))
    return redirect("accounts:people")


@roles_required(ADMIN)
@require_POST
def person_deactivate(request, user_id: int):
    """Who: admins. The person can no longer sign in; what they did is kept."""
    return _person_action(request, user_id, services.account_deactivate, "{name} deactivated.")


@roles_required(ADMIN)
@require_POST
def person_reactivate(request, user_id: int):
    """Who: admins. The person can sign in again."""
    return _person_action(request, user_id, services.account_reactivate, "{name} reactivated.")


@roles_required(ADMIN)
@require_POST
def person_roles(request, user_id: int):
    """Who: admins. Set which of rater / annotator / reviewer the person is."""
    form = RolesForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Roles: " + "; ".join(form.errors.get("roles", ["choose from the boxes shown"])))
        return redirect("accounts:people")
    roles = form.cleaned_data["roles"]
    return _person_action(
        request,
        user_id,
        partial(services.account_roles_set, roles=roles),
        "{name}'s roles: " + (", ".join(roles) or "none") + ".",
    )


@roles_required(ADMIN)
@require_POST
def person_invitation_renew(request, user_id: int):
    """Who: admins. A new invitation link for someone who has not accepted (the old one stops working)."""
    person = get_object_or_404(get_user_model(), pk=user_id)
    try:
        services.invitation_renew(user=person, by=request.user)
    except services.AccountError as error:
        messages.error(request, str(error))
        return redirect("accounts:people")
    messages.success(request, f"New invitation link for {person.get_username()}; the old one no longer works.")
    return redirect(f"{reverse('accounts:people')}?new={person.pk}#new-links")


def invitation_accept(request, token: str):
    """Who: anyone with the link. Set a password on first use and get signed in; a spent link says why."""
    try:
        invitation = services.invitation_check(token=token)
    except services.InvitationLinkError as refused:
        return _refused(request, refused)
    form = InvitationAcceptForm(invitation.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.invitation_accept(token=token, password=form.cleaned_data["new_password1"])
        except services.InvitationLinkError as refused:
            return _refused(request, refused)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}: your password is set and you are signed in.")
        return redirect("annotation:home")
    context = {"form": form, "invitation": invitation, "person": invitation.user}
    return render(request, "accounts/invitation_accept.html", context, status=400 if form.errors else 200)


def _refused(request, refused: services.InvitationLinkError) -> HttpResponse:
    return render(
        request,
        "accounts/invitation_refused.html",
        {"message": str(refused), "reason": refused.reason},
        status=REFUSED_STATUS[refused.reason],
    )

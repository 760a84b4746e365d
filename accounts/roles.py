"""The four roles of the platform and the checks pages and API endpoints use.

A role is a Django group; admins are staff users (the `admin` group is kept in
sync for listing). Pages and endpoints name the roles they admit with
`roles_required` / `HasRole`, so who may use what is visible at the point of use.
"""

from collections.abc import Iterable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

ANNOTATOR = "annotator"
REVIEWER = "reviewer"
RATER = "rater"
ADMIN = "admin"
ALL_ROLES = (ANNOTATOR, REVIEWER, RATER, ADMIN)
# Crowd participants (ratings/models_study.py) are raters who arrived from a study link: they also hold this
# group, which gives them no page of their own and hides the navigation (they only see their study).
PARTICIPANT = "participant"
KNOWN_GROUPS = (*ALL_ROLES, PARTICIPANT)


def user_roles(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    roles = set(user.groups.values_list("name", flat=True)) & set(KNOWN_GROUPS)
    if user.is_staff or user.is_superuser:
        roles.add(ADMIN)
    return roles


def request_roles(request) -> set[str]:
    """The roles of `request.user`, read once per request (the role check and the navigation bar share them).

    Cached per user id, so a sign-in or sign-out within the request reads them again.
    """
    user = request.user
    cached = getattr(request, "_captioneval_roles", None)
    if cached is None or cached[0] != user.pk:
        cached = (user.pk, user_roles(user))
        request._captioneval_roles = cached
    return cached[1]


def request_roles_known(request, roles: set[str]) -> None:
    """Record the roles of `request.user` when the caller knows them without reading the groups (a crowd
    participant's account is made with its groups); request_roles then answers without a query."""
    request._captioneval_roles = (request.user.pk, set(roles))


def held_role(held: set[str], *roles: str) -> bool:
    """True when roles `held` include any of `roles`; admins pass every role check."""
    return ADMIN in held or bool(held & set(roles))


def user_has_role(user, *roles: str) -> bool:
    """True when the user holds any of `roles`; admins pass every role check."""
    return held_role(user_roles(user), *roles)


def roles_required(*roles: str):
    """View decorator: anonymous users go to the login page, others need one of `roles`."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not held_role(request_roles(request), *roles):
                raise PermissionDenied(f"This page is for: {', '.join(roles)}")
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = roles
        return wrapped

    return decorator


def HasRole(*roles: str) -> type[BasePermission]:  # noqa: N802 - reads like a permission class
    """DRF permission class admitting authenticated users with one of `roles`."""

    class _HasRole(BasePermission):
        allowed_roles: Iterable[str] = roles
        message = f"This endpoint is for: {', '.join(roles)}"

        def has_permission(self, request, view) -> bool:
            return bool(request.user and request.user.is_authenticated and user_has_role(request.user, *roles))

    _HasRole.__name__ = "HasRole_" + "_".join(roles)
    return _HasRole

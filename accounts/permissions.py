"""Role checks for API viewsets, stated per action where the viewset is defined."""

from rest_framework.permissions import BasePermission

from accounts.roles import ANNOTATOR, REVIEWER, HasRole, user_has_role


class ActionRolesMixin:
    """A viewset lists the roles each action admits in `action_roles`; "*" covers the other actions.

    Admins pass every role check (see accounts.roles.user_has_role). Which rows a role
    sees is the viewset's `get_queryset`; this mixin only decides who may call what.
    """

    action_roles: dict[str, tuple[str, ...]] = {}

    def get_permissions(self):
        roles = self.action_roles.get(getattr(self, "action", None) or "*", self.action_roles["*"])
        return [HasRole(*roles)()]


class SchemaReaders(BasePermission):
    """The OpenAPI schema and its docs page: for annotators, reviewers and admins, not for raters.

    The schema lists every field and enum of the corpus (author kinds, splits, gold answers); raters
    use the rating pages, and their few API endpoints are described in the README.
    """

    message = "The API documentation is for annotators, reviewers and admins."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and user_has_role(request.user, ANNOTATOR, REVIEWER))

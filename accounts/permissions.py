"""Role checks for API viewsets, stated per action where the viewset is defined."""

from accounts.roles import HasRole


class ActionRolesMixin:
    """A viewset lists the roles each action admits in `action_roles`; "*" covers the other actions.

    Admins pass every role check (see accounts.roles.user_has_role). Which rows a role
    sees is the viewset's `get_queryset`; this mixin only decides who may call what.
    """

    action_roles: dict[str, tuple[str, ...]] = {}

    def get_permissions(self):
        roles = self.action_roles.get(getattr(self, "action", None) or "*", self.action_roles["*"])
        return [HasRole(*roles)()]

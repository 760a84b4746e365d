from accounts.navigation import navigation_for
from accounts.roles import request_roles


def roles(request) -> dict:
    """The signed-in user's roles and navigation bar (templates/base.html)."""
    if not hasattr(request, "user"):
        return {"user_roles": set(), "nav_entries": []}
    roles = request_roles(request)
    return {"user_roles": roles, "nav_entries": navigation_for(request.user, request.path, roles=roles)}

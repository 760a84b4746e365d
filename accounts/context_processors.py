from accounts.navigation import navigation_for
from accounts.roles import user_roles


def roles(request) -> dict:
    """The signed-in user's roles and navigation bar (templates/base.html)."""
    if not hasattr(request, "user"):
        return {"user_roles": set(), "nav_entries": []}
    return {"user_roles": user_roles(request.user), "nav_entries": navigation_for(request.user, request.path)}

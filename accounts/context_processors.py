from accounts.roles import user_roles


def roles(request) -> dict:
    return {"user_roles": user_roles(request.user) if hasattr(request, "user") else set()}

"""REST endpoints of this app."""


def register_routes(router) -> None:
    pass

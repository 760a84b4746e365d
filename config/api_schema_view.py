"""The /api/schema/ view: the OpenAPI schema drawn for one role (config/api_schema.py says why).

Kept apart from config/api_schema.py, which REST framework imports while loading its settings
(DEFAULT_SCHEMA_CLASS): drf-spectacular's views and generators read those settings on import.
"""

from functools import partial

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.exceptions import ValidationError

from accounts.roles import ADMIN, ALL_ROLES, user_roles

ANONYMOUS = "anonymous"
SCHEMA_ROLES = (*ALL_ROLES, ANONYMOUS)


class RoleSchemaGenerator(SchemaGenerator):
    """Draws the schema as `role` receives it: every view it builds carries the role for the AutoSchema."""

    def __init__(self, *args, role: str = ADMIN, **kwargs):
        super().__init__(*args, **kwargs)
        self.role = role

    def create_view(self, callback, method, request=None):
        view = super().create_view(callback, method, request)
        view.schema_role = self.role
        return view


def schema_role(request) -> str:
    """The role the schema is drawn for: `?role=` if given (any of SCHEMA_ROLES), else the reader's own (an admin's
    view when they hold it, since admins see the most)."""
    asked = request.query_params.get("role")
    if asked is None:
        held = user_roles(request.user)
        return ADMIN if ADMIN in held else next((role for role in ALL_ROLES if role in held), ANONYMOUS)
    if asked not in SCHEMA_ROLES:
        raise ValidationError({"role": [f"one of {', '.join(SCHEMA_ROLES)}"]})
    return asked


class RoleSchemaView(SpectacularAPIView):
    """/api/schema/: the OpenAPI schema as one role receives it (see the module docstring)."""

    @property
    def generator_class(self):
        return partial(RoleSchemaGenerator, role=schema_role(self.request))

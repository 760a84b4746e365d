"""The OpenAPI schema's view of every endpoint: its documented errors, and the fields raters may not see.

drf-spectacular documents only the success response of an operation. Clients (and schemathesis, see
tests/api/test_api_schemathesis.py) also meet these answers, so every operation documents the ones it
can give, with DRF's bodies:
- 400 when it takes a body or query parameters (validation errors: an object of field -> messages, or a list;
  a bad query parameter is refused before use, common/web_input.py);
- 401 / 403 unless anyone may call it (no or an invalid token: 401 with a token, 403 with a session;
  a role without access: 403);
- 404 when it has path parameters (unknown or someone else's row) or is a paginated list (a page past the end);
- 409 on DELETE (other rows still refer to the row);
- 429 on the token endpoint (too many failed sign-ins, django-axes).
Views of `RaterBlindedMixin` (ratings/api.py) answer admins with their full serializer and everyone else with
a blinded one (`rater_serializer_class`, rows from ratings/projection.py) that never holds ids, a/b orientation
or the caption order. One schema cannot state both answers strictly, so the schema is drawn for one role
(`/api/schema/?role=rater`, default the reader's own): each response documents exactly the serializer that
role receives, with its required fields and types, and the admin-only fields are absent from the others'.
"""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_serializer_context, force_instance
from drf_spectacular.utils import OpenApiParameter
from rest_framework.permissions import AllowAny

from accounts.roles import ADMIN

DETAIL_BODY = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_BODY = {
    "oneOf": [{"type": "object"}, {"type": "array", "items": {}}],
    "description": "Field name (or non_field_errors) -> list of messages, or a list of messages",
}


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


class CaptionEvalAutoSchema(AutoSchema):
    def get_override_parameters(self):
        """A viewset's query parameters are its list filters (annotation.api_helpers.filter_by_params): they are
        documented on its list operation only, since its other actions ignore them."""
        parameters = super().get_override_parameters()
        if self._is_list_view():
            return parameters
        return [
            parameter
            for parameter in parameters
            if not (isinstance(parameter, OpenApiParameter) and parameter.location == OpenApiParameter.QUERY)
        ]

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, response in self._error_responses().items():
            responses.setdefault(code, response)
        return responses

    def _error_responses(self) -> dict:
        errors = {}
        takes_input = (
            self.method in ("POST", "PUT", "PATCH")
            or bool(self._get_filter_parameters())
            or any(
                isinstance(parameter, OpenApiParameter) and parameter.location == OpenApiParameter.QUERY
                for parameter in self.get_override_parameters()
            )
        )  # a query parameter is checked before use (common/web_input.py): a bad one is a 400 naming it
        if takes_input or self._is_list_view():
            errors["400"] = _json("Invalid data or parameters", VALIDATION_BODY)
        if not self._anyone_may_call():
            errors["401"] = _json("No valid credentials (token authentication)", DETAIL_BODY)
            errors["403"] = _json("Not signed in (session) or not allowed for this role", DETAIL_BODY)
        if "{" in self.path or (self._is_list_view() and self.method == "GET"):
            errors["404"] = _json("No such row visible to this account, or no such page", DETAIL_BODY)
        if self.method == "DELETE":
            errors["409"] = _json("Other rows still refer to this one (config/errors.py)", DETAIL_BODY)
        if self.path.rstrip("/").endswith("/token"):
            errors["429"] = _json("Too many failed sign-ins: locked out for a while", {})
        return errors

    def _anyone_may_call(self) -> bool:
        return all(isinstance(permission, AllowAny) for permission in self.view.get_permissions())

    def _get_serializer(self):
        """A blinded view's serializer is the one the schema's role receives (RaterBlindedMixin.get_serializer_class
        decides by the requesting user, whom schema generation does not have)."""
        rater_serializer_class = getattr(self.view, "rater_serializer_class", None)
        if rater_serializer_class is not None and getattr(self.view, "schema_role", ADMIN) != ADMIN:
            return rater_serializer_class(context=build_serializer_context(self.view))
        return super()._get_serializer()

    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        """A blinded serializer is read-only and writes every field it holds, so all of them are required: a
        response missing one is a defect schemathesis should see."""
        serializer = force_instance(serializer)
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        rater_serializer_class = getattr(self.view, "rater_serializer_class", None)
        if direction == "response" and rater_serializer_class and isinstance(serializer, rater_serializer_class):
            schema["required"] = sorted(name for name, field in serializer.fields.items() if not field.write_only)
        return schema

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
Views of `RaterBlindedMixin` (ratings/api.py) answer raters with a blinded serializer holding a subset of
the admin serializer's fields: the fields raters never get are documented as optional.
"""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import OpenApiParameter
from rest_framework.permissions import AllowAny

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
        takes_input = self.method in ("POST", "PUT", "PATCH") or bool(self._get_filter_parameters()) or any(
            isinstance(parameter, OpenApiParameter) and parameter.location == OpenApiParameter.QUERY
            for parameter in self.get_override_parameters()
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

    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        serializer = force_instance(serializer)
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        rater_serializer_class = getattr(self.view, "rater_serializer_class", None)
        if (
            direction == "response"
            and rater_serializer_class is not None
            and type(serializer) is getattr(self.view, "serializer_class", None)
            and "required" in schema
        ):
            shown_to_raters = set(rater_serializer_class().fields)
            required = [name for name in schema["required"] if name in shown_to_raters]
            if required:
                schema["required"] = required
            else:
                del schema["required"]
        return schema

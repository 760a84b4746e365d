"""Schemathesis against the OpenAPI schema (/api/schema/?role=), as each role: no server error, answers as documented.

Each role is checked against the schema drawn for it (config/api_schema.py): a rater's answers against the blinded
serializers' exact fields and types, an admin's against the full ones.

For each role (anonymous, rater, annotator, reviewer, admin) every operation of the schema is called with
requests schemathesis generates from it (valid and invalid ones, bounded: MAX_EXAMPLES per operation,
derandomized so CI sees the same cases every run), through the WSGI app in-process, signed in by the
role's API token. Each response must pass schemathesis's checks: not a 5xx, a status code the schema
documents for the operation, the documented content type, headers and body schema. Each request runs in
a savepoint rolled back afterwards, so every case sees the same small world (tests/api/conftest.py).

Excluded checks, each justified:
- `positive_data_acceptance` / `negative_data_rejection`: they expect schema-valid data to be accepted
  and invalid data refused. A role without access gets 403/404 for any data, and valid-looking ids
  point at rows that do not exist (404); both are documented outcomes, not defects.
- `ignored_auth`: roles without access are the point of this test; 401/403 for them is the expected answer.
- `unsupported_method`: the check sends methods the schema does not list and requires a 405; DRF
  answers 401/403 first for a request it would refuse anyway (authentication runs before method
  dispatch), which is the safer order.
"""

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi import checks as openapi_checks

from tests.fuzz.fuzz_helpers import rolled_back

ROLES = ("anonymous", "rater", "annotator", "reviewer", "admin")
MAX_EXAMPLES = 6
EXCLUDED_CHECKS = [
    openapi_checks.positive_data_acceptance,
    openapi_checks.negative_data_rejection,
    openapi_checks.ignored_auth,
    openapi_checks.unsupported_method,
]


def role_schema(client, world, role: str):
    """The schema drawn for `role` (/api/schema/?role=; read by an admin, raters may not read it), calling the app."""
    client.force_login(world.users["admin"])
    response = client.get("/api/schema/", {"format": "json", "role": role})
    assert response.status_code == 200
    client.logout()
    schema = schemathesis.openapi.from_dict(json.loads(response.content))
    schema.app = get_wsgi_application()
    return schema


@pytest.fixture
def api_schema(world, client, role):
    """The role's own schema, so each role's answers are checked against exactly the fields that role receives
    (a rater's blinded items, not the admin's rows).

    The app is called in-process inside the test's transaction: as Django's test client does, the
    handler must not close the database connection after each request (that would end the transaction).
    The schema is fetched first, because the test client reconnects those handlers after its request.
    """
    schema = role_schema(client, world, role)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schema
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.parametrize("role", ROLES)
def test_every_operation_answers_as_documented(world, api_schema, role):
    headers = {}
    if role != "anonymous":
        token = Token.objects.get_or_create(user=world.users[role])[0]
        headers = {"Authorization": f"Token {token.key}"}
    failures, examples = [], {"count": 0}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) > 10
    for operation in operations:

        @settings(
            max_examples=MAX_EXAMPLES,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case):
            examples["count"] += 1
            with rolled_back():
                response = case.call(headers=headers)
                case.validate_response(response, headers=headers, excluded_checks=EXCLUDED_CHECKS)

        try:
            check()
        except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001 - every operation is tried, failures reported together
            failures.append(f"{operation.label}: {str(error)[:1500]}")
    print(f"{role}: {len(operations)} operations, {examples['count']} requests, {len(failures)} failing")
    assert not failures, "\n\n".join(failures)

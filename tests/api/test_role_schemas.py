"""The schema drawn for a role (/api/schema/?role=): raters' endpoints document exactly what raters receive.

A rater's items, ratings and votes come from the blinded serializers (ratings/projection.py builds the rows): no
row ids, no a/b orientation, no caption order. The rater schema must name none of the admin serializer's other
fields and require every field a rater gets, so a rater answer with a field of the wrong type or a leaked admin
field fails schemathesis (tests/api/test_api_schemathesis.py) instead of matching the admin shape.
"""

import json

import pytest
from rest_framework.test import APIClient

from ratings.api import AssignmentItemViewSet, AssignmentViewSet, PairwiseVoteViewSet, ThumbsRatingViewSet

BLINDED = {
    "/api/assignments/": AssignmentViewSet,
    "/api/assignment-items/": AssignmentItemViewSet,
    "/api/thumbs-ratings/": ThumbsRatingViewSet,
    "/api/pairwise-votes/": PairwiseVoteViewSet,
}
# What the brief of the rater API rules out by name: an item's database ids and its hidden ordering.
NEVER_FOR_RATERS = {"a_on_left", "caption_order", "clip", "pair", "id"}


def schema_for(world, role: str) -> dict:
    client = APIClient()
    client.force_login(world.users["admin"])
    response = client.get("/api/schema/", {"format": "json", "role": role})
    assert response.status_code == 200
    return json.loads(response.content)


def row_schema(schema: dict, path: str) -> dict:
    """The schema of one row of the list at `path` (its paginated results' items)."""
    components = schema["components"]["schemas"]
    page_ref = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page = components[page_ref.rsplit("/", 1)[-1]]
    row_ref = page["properties"]["results"]["items"]["$ref"]
    return components[row_ref.rsplit("/", 1)[-1]]


def every_property_name(schema: dict) -> set[str]:
    names = set()
    for component in schema["components"]["schemas"].values():
        names |= set(component.get("properties", {}))
    return names


@pytest.mark.parametrize("path", list(BLINDED))
def test_the_rater_schema_documents_the_blinded_rows_exactly(world, path):
    view = BLINDED[path]
    rater_fields = set(view.rater_serializer_class().fields)
    admin_only = set(view.serializer_class().fields) - rater_fields
    assert admin_only, "the admin rows hold fields raters never get (else this test checks nothing)"

    rater_row = row_schema(schema_for(world, "rater"), path)
    assert set(rater_row["properties"]) == rater_fields
    assert set(rater_row["required"]) == rater_fields
    assert not admin_only & set(rater_row["properties"])

    admin_row = row_schema(schema_for(world, "admin"), path)
    assert admin_only <= set(admin_row["properties"])


def test_the_rater_schema_names_no_admin_only_field_anywhere_near_the_items(world):
    rater_schema, admin_schema = schema_for(world, "rater"), schema_for(world, "admin")
    item_fields = set(row_schema(rater_schema, "/api/assignment-items/")["properties"])
    assert not NEVER_FOR_RATERS & item_fields
    for path in BLINDED:
        assert not NEVER_FOR_RATERS & set(row_schema(rater_schema, path)["properties"]), path
    assert {"a_on_left", "caption_order", "clip", "pair"} <= set(
        row_schema(admin_schema, "/api/assignment-items/")["properties"]
    )
    assert "a_on_left" not in every_property_name(rater_schema)
    assert "caption_order" not in every_property_name(rater_schema)
    completed = row_schema(rater_schema, "/api/assignment-items/")["properties"]["completed"]
    assert completed["type"] == "boolean"


def test_a_raters_answer_holds_exactly_the_documented_fields(world):
    documented = set(row_schema(schema_for(world, "rater"), "/api/assignment-items/")["properties"])
    client = APIClient()
    client.force_login(world.users["rater"])
    response = client.get("/api/assignment-items/")
    assert response.status_code == 200
    rows = response.json()["results"]
    assert rows, "the rater has items in the test world"
    assert all(set(row) == documented for row in rows)


def test_the_role_is_checked_and_raters_still_cannot_read_the_schema(world):
    admin = APIClient()
    admin.force_login(world.users["admin"])
    assert admin.get("/api/schema/", {"format": "json", "role": "superuser"}).status_code == 400
    default = json.loads(admin.get("/api/schema/", {"format": "json"}).content)
    assert "a_on_left" in row_schema(default, "/api/assignment-items/")["properties"]  # an admin's own view
    reviewer = APIClient()
    reviewer.force_login(world.users["reviewer"])
    own = json.loads(reviewer.get("/api/schema/", {"format": "json"}).content)
    assert "a_on_left" not in row_schema(own, "/api/assignment-items/")["properties"]
    rater = APIClient()
    rater.force_login(world.users["rater"])
    assert rater.get("/api/schema/", {"role": "rater"}).status_code == 403

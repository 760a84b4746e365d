"""Token authentication, the OpenAPI schema and the offline API docs page."""

import json

import yaml
from rest_framework.test import APIClient


def test_token_from_credentials_authenticates_requests(world):
    client = APIClient()
    response = client.post("/api/token/", {"username": "ann", "password": "pass-ann"})
    assert response.status_code == 200
    token = response.json()["token"]
    assert len(token) == 40
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get("/api/datasets/")
    assert response.status_code == 200
    assert [row["name"] for row in response.json()["results"]] == ["api-test"]
    # The same token again for the same user.
    assert APIClient().post("/api/token/", {"username": "ann", "password": "pass-ann"}).json()["token"] == token


def test_token_keeps_role_checks(world):
    client = APIClient()
    token = client.post("/api/token/", {"username": "rat", "password": "pass-rat"}).json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/captions/").status_code == 403
    assert client.get("/api/assignments/").status_code == 200


def test_wrong_password_and_bad_token_are_refused(world):
    response = APIClient().post("/api/token/", {"username": "ann", "password": "wrong"})
    assert response.status_code == 400
    assert "token" not in response.json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = client.get("/api/datasets/")
    assert response.status_code == 403
    assert response.json() == {"detail": "Invalid token."}


def test_schema_is_openapi_3_in_yaml_and_json(world, client_for):
    client = client_for("annotator")
    response = client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Audio caption evaluation API"
    assert {"/api/datasets/", "/api/assignment-items/", "/api/metric-runs/", "/api/token/"} <= set(schema["paths"])
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    assert json.loads(response.content)["paths"].keys() == schema["paths"].keys()


def test_schema_needs_a_signed_in_user(world):
    assert APIClient().get("/api/schema/").status_code == 403


def test_schema_and_docs_are_not_for_raters(world, client_for):
    """They list every corpus field and enum (author kinds, splits, gold); raters use the rating pages."""
    rater = client_for("rater")
    assert rater.get("/api/schema/").status_code == 403
    assert rater.get("/api/docs/").status_code == 403


def test_docs_page_loads_swagger_from_this_server_not_a_cdn(world, client_for):
    response = client_for("annotator").get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert "/api/schema/" in html


def test_docs_page_sends_anonymous_visitors_to_login(world):
    response = APIClient().get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/api/docs/"

"""Reading the rater API as a rater's browser would: signed in as them, every page of a list."""

from django.test import Client


def rater_client(rater) -> Client:
    client = Client()
    client.force_login(rater)
    return client


def api_rows(client: Client, url: str, **params) -> list[dict]:
    """Every row of a paginated list, page after page (`next` links followed)."""
    rows, response = [], client.get(url, params)
    while True:
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        rows += body["results"]
        if not body["next"]:
            return rows
        response = client.get(body["next"].removeprefix("http://testserver"))

"""No input makes the server answer 5xx: out-of-range ids, negative numbers, words and NUL characters in every
query parameter and path id of the API schema and of every page's URL, as an admin (who reaches every endpoint).

A refused query parameter is a 400 that names the parameter (common/web_input.py); a path id that is no id
matches no route (a 404, in JSON under /api/). The pages' query parameters are the ones each view reads
(found in its source), so a parameter added later is probed without editing this test.
"""

import functools
import inspect
import json
import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter

from common.web_input import ID_REGEX, IdConverter

HUGE = "99999999999999999999"  # beyond 2^63: SQLite raised OverflowError on it (HTTP 500) before the checks
JUNK_VALUES = (HUGE, "-1", "x'\"<>", "a\x00b")
# Path segments the probe puts where a URL names a row: the largest id a route accepts and a number past it.
LARGEST_ROUTED_ID = "9" * 18


def _schema(client) -> dict:
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def _api_cases(schema: dict):
    """(method, url, query, parameter probed) for every operation: each documented query parameter set to each
    junk value, and each path id set to a number beyond any id and to a word."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            queries = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            for path_value in ("1", HUGE, "not-an-id"):
                url = re.sub(r"\{[^}]+\}", path_value, path)
                yield method, url, {}, None
                if path_value == "1":
                    for name in queries:
                        for value in JUNK_VALUES:
                            yield method, url, {name: value}, name


@pytest.mark.db_specific  # an id beyond 2^63 made SQLite (not PostgreSQL) fail with OverflowError
@pytest.mark.django_db
def test_no_api_request_answers_5xx_and_a_refused_query_parameter_is_named(world):
    client = Client(raise_request_exception=False)
    client.force_login(world.users["admin"])
    schema = _schema(client)
    calls, server_errors, unnamed = 0, [], []
    for method, url, query, param in _api_cases(schema):
        if method == "get":
            response = client.get(url, query, HTTP_ACCEPT="application/json")
        else:
            suffix = "?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else ""
            response = getattr(client, method)(url + suffix, data="{}", content_type="application/json")
        calls += 1
        if response.status_code >= 500:
            server_errors.append(f"{method.upper()} {url} {query} -> {response.status_code}")
        elif response.status_code == 400 and param and method == "get":
            body = response.json()
            if not (isinstance(body, dict) and param in body):
                unnamed.append(f"GET {url} {query}: {body}")
    assert calls > 400, "the schema lists the API's operations"
    assert server_errors == [], f"{len(server_errors)} of {calls} requests answered 5xx"
    assert unnamed == [], "a 400 that does not name the refused parameter"


@pytest.mark.db_specific
@pytest.mark.django_db
def test_an_id_beyond_the_database_range_is_refused_naming_the_parameter(world, client_for):
    """The case of the issue: `?campaign=<20 digits>` answered 500 on SQLite (OverflowError)."""
    client = client_for("admin")
    for url, param in (
        ("/api/annotation-tasks/", "campaign"),
        ("/api/annotation-reviews/", "campaign"),
        ("/api/assignment-items/", "assignment"),
        ("/api/metric-scores/", "caption"),
    ):
        response = client.get(url, {param: HUGE})
        assert response.status_code == 400, (url, response.content)
        assert "out of range" in response.json()[param][0]
        response = client.get(url, {param: "seven"})
        assert response.status_code == 400 and "not a whole number" in response.json()[param][0]
    response = client.get("/api/metric-runs/", {"status": "finished-ish"})
    assert response.status_code == 400 and "'finished-ish' is not one of: pending" in response.json()["status"][0]
    # A valid id still filters.
    response = client.get("/api/metric-scores/", {"caption": world.score.caption_id})
    assert response.status_code == 200 and [row["id"] for row in response.json()["results"]] == [world.score.pk]


def _page_patterns(patterns=None, prefix=""):
    """(route, view function) of every page URL (the API and Django's admin are probed elsewhere / are Django's)."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if route.startswith(("admin/", "api/")):
                continue
            yield from _page_patterns(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route, pattern.callback


@functools.cache
def _module_source(module) -> str:
    try:
        return inspect.getsource(module)
    except (OSError, TypeError):
        return ""


def _query_parameters_read(view) -> set[str]:
    """Every `request.GET` key read in the view's module (views read some in helpers beside them)."""
    while hasattr(view, "__wrapped__"):
        view = view.__wrapped__
    source = _module_source(inspect.getmodule(view))
    return set(re.findall(r"""request\.GET(?:\.get\(|\[)\s*["']([\w-]+)["']""", source))


def _real_ids(world) -> dict[str, int]:
    """Ids of the world's rows by URL parameter name, so that the probe gets past the row lookup of a page."""
    return {
        "clip_id": world.clips[0].pk,
        "dataset_id": world.dataset.pk,
        "object_id": world.dataset.pk,
        "run_id": world.run.pk,
        "caption_id": world.score.caption_id,
        "campaign_id": world.thumbs.pk,
        "rater_id": world.users["rater"].pk,
    }


@pytest.mark.django_db
def test_no_page_answers_5xx_for_junk_ids_or_query_parameters(world):
    client = Client(raise_request_exception=False)
    client.force_login(world.users["admin"])
    real_ids = _real_ids(world)
    calls, server_errors, probed_parameters = 0, [], set()

    def probe(url: str, query: dict) -> None:
        nonlocal calls
        response = client.get(url, query)
        calls += 1
        if response.status_code >= 500:
            server_errors.append(f"GET {url} {query} -> {response.status_code}")

    for route, view in _page_patterns():
        route = re.sub(r"<(?:str|slug|path):[^>]+>", "not-a-token", route)
        probe("/" + re.sub(r"<(?:id|int):[^>]+>", LARGEST_ROUTED_ID, route), {})
        url = "/" + re.sub(r"<(?:id|int):([^>]+)>", lambda match: str(real_ids.get(match.group(1), 1)), route)
        probe(url, {})
        parameters = _query_parameters_read(view)
        probed_parameters |= parameters
        for name in sorted(parameters):
            for value in JUNK_VALUES:
                probe(url, {name: value})
    assert calls > 60 and {"campaign", "dataset", "run"} <= probed_parameters
    assert server_errors == [], f"{len(server_errors)} of {calls} requests answered 5xx"


def test_every_page_route_takes_ids_through_the_bounded_converter():
    """`<int:>` passes any number of digits to the view (and on to the ORM); routes use `<id:>` instead."""
    offenders = []
    for route, _ in _page_patterns():
        if "<int:" in route:
            offenders.append(route)
    converters = [
        converter
        for pattern in get_resolver().url_patterns
        if isinstance(pattern, URLResolver) and not str(pattern.pattern).startswith("admin/")
        for sub in pattern.url_patterns
        for converter in getattr(sub.pattern, "converters", {}).values()
    ]
    assert offenders == [] and not any(type(converter) is IntConverter for converter in converters)
    assert any(isinstance(converter, IdConverter) for converter in converters)


def test_api_detail_routes_take_bounded_ids():
    resolver = get_resolver()
    detail = [p for p in resolver.url_patterns if str(p.pattern) == "api/"][0]
    routes = [str(sub.pattern) for sub in detail.url_patterns if "(?P<pk>" in str(sub.pattern)]
    assert routes and all(ID_REGEX in route or "A-Za-z0-9_-" in route for route in routes), routes

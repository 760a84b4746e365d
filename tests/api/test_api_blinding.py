"""A rater must never learn from the API whether a person or a model wrote a caption, nor which system.

The test walks every endpoint listed at the API root, as a rater, follows every item's detail URL (by
its token) and inspects all JSON it gets back: no authorship or id field name anywhere, and no value
that names a system, an author kind or a pair split. (tests/ratings/test_blinding_crawl.py crawls
everything else a rater can reach, pages and files included.)
"""

import pytest

from tests.api.conftest import SYSTEM_NAMES
from tests.ratings.blinding_crawl import walk_json

FORBIDDEN_KEYS = {
    "author_kind",
    "system",
    "systems",
    "role",
    "source_label",
    "split",
    "source_key",
    "gold_choice",
    "is_gold",
    "machine",
    "human",
    "id",
    "pair",
    "clip",
    "choice",
    "left_side",
    "a_on_left",
    "caption_order",
}
FORBIDDEN_VALUES = {*SYSTEM_NAMES, "human", "machine", "HC", "HI", "HM", "MM", "reference", "candidate"}


def _leaks(body) -> list[str]:
    problems = []
    for path, key, value in walk_json(body):
        if key.lower() in FORBIDDEN_KEYS:
            problems.append(f"{path}.{key} (field name)")
        if isinstance(value, str) and (value in FORBIDDEN_VALUES or "model " in value or "sys-" in value):
            problems.append(f"{path}.{key} = {value!r}")
    return problems


def _rows(body):
    return body["results"] if isinstance(body, dict) and "results" in body else []


def test_rater_responses_carry_no_authorship(world, client_for):
    client = client_for("rater")
    root = client.get("/api/")
    assert root.status_code == 200
    endpoints = root.json()
    reachable = {}
    for name, url in endpoints.items():
        response = client.get(url)
        if response.status_code == 403:
            continue
        assert response.status_code == 200, (name, response.status_code)
        reachable[name] = response.json()
    # Exactly the rater's own work is reachable; everything about the corpus is closed.
    assert sorted(reachable) == ["assignment-items", "assignments", "pairwise-votes", "thumbs-ratings"]

    inspected = 0
    for name, body in reachable.items():
        assert _leaks(body) == [], name
        rows = _rows(body)
        assert rows, f"{name}: the world gives the rater rows here, so the check is not vacuous"
        inspected += len(rows)
        if name == "assignment-items":
            for row in rows:
                detail = client.get(f"{endpoints[name]}{row['token']}/")
                assert detail.status_code == 200
                assert _leaks(detail.json()) == [], f"{name}/{row['token']}"
    assert inspected == 2 + 4 + 1 + 1  # assignments, items, one rating, one vote


def test_rater_captions_are_texts_only_even_for_machine_captions(world, client_for):
    """The MM pair shows two machine captions: the rater gets their side and text, nothing more."""
    rater = world.users["rater"]
    item = world.pairwise.assignments.get(rater=rater).items.get(pair=world.pairs["MM"])
    client = client_for("rater")
    assert client.get(f"/api/assignment-items/{item.pk}/").status_code == 404, "items go by token, not id"
    body = client.get(f"/api/assignment-items/{item.token}/").json()
    assert [caption["key"] for caption in body["captions"]] == ["left", "right"]
    assert [set(caption) for caption in body["captions"]] == [{"key", "text"}, {"key", "text"}]
    assert set(body) == {
        "token",
        "url",
        "study_id",
        "position",
        "task_type",
        "page_url",
        "audio_url",
        "duration_seconds",
        "waveform_peaks",
        "captions",
        "listened",
        "completed",
        "version",
        "answer",
    }


def test_leak_detector_catches_an_unblinded_response(world, client_for):
    """The detector itself must fail on what an annotator legitimately sees, or the test above proves nothing."""
    body = client_for("annotator").get("/api/captions/").json()
    assert any("author_kind" in problem for problem in _leaks(body))
    assert any("sys-alpha" in problem for problem in _leaks(body))
    pairs = client_for("annotator").get("/api/caption-pairs/").json()
    assert any("split" in problem for problem in _leaks(pairs))


@pytest.mark.parametrize(
    "url",
    [
        "/api/captions/",
        "/api/caption-pairs/",
        "/api/clips/",
        "/api/metric-scores/",
        "/api/campaigns/",
        "/api/datasets/",
    ],
)
def test_rater_cannot_reach_corpus_endpoints_by_id_either(world, client_for, url):
    assert client_for("rater").get(f"{url}1/").status_code == 403

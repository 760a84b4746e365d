"""A crowd participant's item page (pairwise and THumBS) is the same, byte for byte, as the page the templates gave
before their rendering was made cheaper: every visible string, attribute and their order.

The reference is tests/ratings/fixtures/item_pages.json, captured from the templates and views as they were before
that work. Only what differs between two runs of the same data is replaced by a placeholder, each for its reason:
- item tokens, the study's slug and the campaign's id are random or come from the database's sequences; each is
  replaced by its role (ITEM-1 is the share's first item), so a link to the wrong item still fails;
- CSRF tokens are masked afresh on every response;
- the study bar's time left counts down with the wall clock, and a conflict names the time of the other answer.
Every placeholder is checked to have replaced something, so the normalisation cannot hide a missing part.

Regenerate the fixture only for an intended visible change: ITEM_PAGE_FIXTURE_WRITE=1 pytest this file.
"""

import itertools
import json
import os
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.test import Client
from django.urls import reverse

from ratings.models import Assignment
from ratings.services import campaigns
from tests.ratings.study_data import (
    item_answer_post,
    item_audio_play,
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    thumbs_study,
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media", "fixed_draws")]


class _FixedShareRandom(random.Random):
    """The share's draw is seeded with the campaign's and the raters' database ids, which differ with what ran
    before (PostgreSQL's sequences are not rolled back); here it is seeded the same every run."""

    def __init__(self, seed=None):
        super().__init__("shares:fixed" if isinstance(seed, str) and seed.startswith("shares:") else seed)


@pytest.fixture
def fixed_draws(monkeypatch):
    """The same share and the same order of its items (drawn with the assignment's secret order key) every run."""
    keys = (f"fixed-order-key-{number}" for number in itertools.count(1))
    monkeypatch.setattr(Assignment._meta.get_field("order_key"), "_get_default", lambda: next(keys))
    monkeypatch.setattr(campaigns, "random", SimpleNamespace(Random=_FixedShareRandom))


FIXTURE = Path(__file__).parent / "fixtures" / "item_pages.json"
WRITE = os.environ.get("ITEM_PAGE_FIXTURE_WRITE") == "1"

CSRF_INPUT = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+(")')
CSRF_DATA = re.compile(r'( data-csrf=")[^"]+(")')
SECONDS_LEFT = re.compile(r'( data-seconds-left=")\d+(")')
TIME_LABEL = re.compile(r'(id="study-clock-time">)\d+:\d\d(<)')
ANSWERED_AT = re.compile(r"(this answer was saved at )\d\d:\d\d:\d\d(:)")


def _normalised(html: str, *, items, study, page: str) -> str:
    for number, item in enumerate(items, start=1):
        html = html.replace(item.token, f"ITEM-{number}")
    campaign_next = reverse("ratings:campaign_next", kwargs={"campaign_id": study.campaign_id})
    html = html.replace(campaign_next, "CAMPAIGN-NEXT-URL").replace(f"/study/{study.slug}/", "/study/STUDY-SLUG/")
    for pattern, placeholder in (
        (CSRF_INPUT, "CSRF"),
        (CSRF_DATA, "CSRF"),
        (SECONDS_LEFT, "SECONDS"),
        (TIME_LABEL, "M:SS"),
    ):
        html, count = pattern.subn(rf"\g<1>{placeholder}\g<2>", html)
        assert count, f"{page}: nothing matched {pattern.pattern} (the normalisation would hide its absence)"
    html, count = ANSWERED_AT.subn(r"\g<1>HH:MM:SS\g<2>", html)
    assert count == (1 if "conflict" in page else 0), page
    assert "ITEM-1" in html and "STUDY-SLUG" in html, page
    return html


def _draft_save(client: Client, item, fields: dict) -> None:
    url = reverse("ratings:item_draft", kwargs={"token": item.token})
    response = client.post(
        url, json.dumps({"version": item.version, "fields": fields}), content_type="application/json"
    )
    assert response.status_code == 200, response.content


def _pages(study, *, invalid_post: dict, draft: dict) -> dict[str, tuple[int, str]]:
    """Every state of the item page a participant meets, in the order of their path."""
    client = Client()
    prolific_arrive(study, client=client)
    participant = walk_to_items(client, study)
    items = share_items(participant)
    url = [reverse("ratings:item", kwargs={"token": item.token}) for item in items]
    pages = {}

    def keep(name: str, response) -> None:
        pages[name] = (
            response.status_code,
            _normalised(response.content.decode(), items=items, study=study, page=name),
        )

    keep("first, unanswered", client.get(url[0]))
    item_audio_play(client, items[0])
    keep("first, not listened, refused form", client.post(url[0], {"version": "0", **invalid_post}))
    assert item_answer_post(client, items[0]).status_code == 302
    keep("first, answered", client.get(url[0]))
    keep("first, changing", client.get(f"{url[0]}?change=1"))
    keep("first, stale submit: conflict", client.post(url[0], {"version": "0", **_valid_post(items[0])}))
    keep("second, unanswered with a previous one", client.get(url[1]))
    items[1].refresh_from_db()
    _draft_save(client, items[1], draft)
    keep("second, draft restored", client.get(url[1]))
    return pages


def _valid_post(item) -> dict:
    if item.pair_id is not None:
        return {"side": "right"}
    data = {"synthesized": "yes"}
    for number in range(1, len(item.caption_order) + 1):
        data.update(
            {
                f"precision_{number}": "2",
                f"recall_{number}": "5",
                f"fluency_{number}": "-0.5",
                f"conciseness_{number}": "0",
                f"irrelevance_{number}": "-1",
                f"comment_{number}": f"comment <{number}> & more",
            }
        )
    return data


def _all_pages() -> dict[str, dict[str, list]]:
    pairwise = _pages(pairwise_study(), invalid_post={"side": "sideways"}, draft={"side": "none"})
    thumbs = _pages(
        thumbs_study(),
        invalid_post={"precision_1": "9", "synthesized": "maybe", "comment_1": "<b>bold</b>"},
        draft={"precision_1": "3", "recall_2": "4", "fluency_1": "-1", "comment_2": "half done & <kept>"},
    )
    return {
        "pairwise": {name: list(page) for name, page in pairwise.items()},
        "thumbs": {name: list(page) for name, page in thumbs.items()},
    }


def test_the_item_pages_are_unchanged_byte_for_byte():
    pages = _all_pages()
    if WRITE:
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_text(json.dumps(pages, indent=1, ensure_ascii=False) + "\n")
    reference = json.loads(FIXTURE.read_text())

    assert list(pages) == list(reference)
    for kind, kind_pages in reference.items():
        assert list(pages[kind]) == list(kind_pages), kind
        for name, (status, html) in kind_pages.items():
            got_status, got_html = pages[kind][name]
            assert got_status == status, (kind, name)
            # The page parts that tell the states apart: the reference really holds these states.
            assert ("rating-form" in html) == (not name.endswith(", answered")), (kind, name)
            assert got_html == html, f"{kind} / {name}: the page changed"

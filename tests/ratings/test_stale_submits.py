"""No silent overwrite: a second tab, an old draft or an old page gets a clear 409 with the newer answer."""

import pytest
from django.test import Client
from django.urls import reverse

from ratings.models import ItemEvent, PairwiseVote, ThumbsRating
from ratings.services.campaigns import campaign_setup
from tests.ratings.campaign_data import corpus_build, headphone_pass_give
from tests.ratings.test_judgements import _listened, _thumbs_post

# db_specific: versions are checked under the item row's lock
pytestmark = [pytest.mark.django_db, pytest.mark.db_specific]


@pytest.fixture
def rater_items(make_user):
    dataset, _, systems = corpus_build(clip_count=2)
    rater = make_user("tabs", "rater")
    headphone_pass_give(rater)
    pairwise = campaign_setup(
        name="tabs-pw", dataset=dataset, task_type="pairwise", split_counts={"HM": 2}, raters=[rater]
    )
    thumbs = campaign_setup(
        name="tabs-th",
        dataset=dataset,
        task_type="thumbs",
        systems=systems[:1],
        human_captions_per_clip=1,
        raters=[rater],
    )
    pair_item = _listened(pairwise.assignments.get().items.order_by("position").first())
    thumbs_item = _listened(thumbs.assignments.get().items.order_by("position").first())
    return rater, pair_item, thumbs_item


def _tab(rater) -> Client:
    tab = Client()
    tab.force_login(rater)
    return tab


def test_a_second_tab_cannot_overwrite_the_first_without_choosing_to(rater_items):
    rater, item, _ = rater_items
    url = reverse("ratings:item", args=[item.token])
    first_tab, second_tab = _tab(rater), _tab(rater)
    assert 'name="version" value="0"' in first_tab.get(url).content.decode()
    assert 'name="version" value="0"' in second_tab.get(url).content.decode()
    assert first_tab.post(url, {"side": "left", "version": "0"}).status_code == 302

    stale = second_tab.post(url, {"side": "right", "version": "0"})

    assert stale.status_code == 409
    html = stale.content.decode()
    assert "This item was answered again in another tab or window" in html
    assert "Caption <strong>A</strong> (left) describes the clip better" in html  # the newer, saved answer
    assert 'value="right" checked' in html, "the rater's own choice is still in the form"
    assert 'name="version" value="1"' in html and 'name="replacing" value="1"' in html
    assert "Keep the saved answer" in html and "Replace it with my answer" in html
    vote = PairwiseVote.objects.get()
    assert vote.choice == ("a" if item.a_on_left else "b"), "the first answer stays"
    refused = ItemEvent.objects.get(kind="stale_refused")
    assert (refused.version, refused.answer, refused.previous_answer) == (0, {"side": "right"}, {"side": "left"})

    replaced = second_tab.post(url, {"side": "right", "version": "1", "replacing": "1"})
    assert replaced.status_code == 302
    vote.refresh_from_db()
    assert vote.choice == ("b" if item.a_on_left else "a")
    assert list(item.events.order_by("pk").values_list("kind", "version")) == [
        ("submitted", 1),
        ("stale_refused", 0),
        ("stale_replaced", 2),
    ]
    # Keeping instead: the page shows the saved answer (the submitted view), nothing is written.
    assert "Submitted" in first_tab.get(url).content.decode()


def test_a_thumbs_conflict_shows_the_newer_scores(rater_items):
    rater, _, item = rater_items
    url = reverse("ratings:item", args=[item.token])
    first_tab, second_tab = _tab(rater), _tab(rater)
    first_tab.get(url)
    second_tab.get(url)
    assert first_tab.post(url, _thumbs_post(item)).status_code == 302
    mine = {**_thumbs_post(item), "precision_1": "1", "recall_1": "1"}
    stale = second_tab.post(url, mine)
    assert stale.status_code == 409
    html = stale.content.decode()
    assert '<td>Caption 1</td><td class="num">4</td><td class="num">2</td>' in html  # the saved P/R of caption 1
    assert set(ThumbsRating.objects.values_list("precision", flat=True)) == {4}


def test_an_old_drafts_autosave_is_refused_and_says_why(rater_items):
    rater, item, _ = rater_items
    tab = _tab(rater)
    draft_url = reverse("ratings:item_draft", args=[item.token])
    assert (
        tab.post(draft_url, {"version": 0, "fields": {"side": "none"}}, content_type="application/json").status_code
        == 200
    )
    tab.post(reverse("ratings:item", args=[item.token]), {"side": "left", "version": "0"})
    late = tab.post(draft_url, {"version": 0, "fields": {"side": "right"}}, content_type="application/json")
    assert late.status_code == 409
    assert late.json()["current_version"] == 1 and late.json()["current_answer"] == {"side": "left"}
    item.refresh_from_db()
    assert item.draft == {}


def test_change_my_answer_is_explicit_and_logged(rater_items):
    rater, item, _ = rater_items
    tab = _tab(rater)
    url = reverse("ratings:item", args=[item.token])
    tab.post(url, {"side": "left", "version": "0"})
    submitted = tab.get(url).content.decode()
    assert "Submitted" in submitted and "Change my answer" in submitted and 'name="side"' not in submitted
    assert tab.get(reverse("ratings:item_change", args=[item.token])).status_code == 405, "a GET changes nothing"
    opened = tab.post(reverse("ratings:item_change", args=[item.token]))
    assert opened["Location"].endswith("?change=1")
    assert tab.post(url, {"side": "none", "version": "1"}).status_code == 302
    assert list(item.events.order_by("pk").values_list("kind", flat=True)) == ["submitted", "change_opened", "changed"]
    changed = item.events.get(kind="changed")
    assert (changed.previous_answer, changed.answer) == ({"side": "left"}, {"side": "none"})

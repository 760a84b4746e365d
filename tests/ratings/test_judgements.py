"""Saving judgements from the web: the listening rule on the server, THumBS ratings, votes, drafts, pages."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from corpus.models import Clip
from ratings.models import AssignmentItem, Campaign, PairwiseVote, ThumbsRating
from ratings.projection import item_place, next_open_after
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import (
    CaptionScores,
    JudgementError,
    StaleItemError,
    item_draft_save,
    item_mark_shown,
    pairwise_item_submit,
    thumbs_item_submit,
)
from ratings.services.listening import item_mark_listened, listening_seconds_required
from tests.ratings.campaign_data import audio_served_give, corpus_build, headphone_pass_give, listened_give

pytestmark = pytest.mark.django_db


@pytest.fixture
def thumbs_item(make_user) -> AssignmentItem:
    dataset, clips, systems = corpus_build(clip_count=2)
    rater = make_user("scorer", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="th", dataset=dataset, task_type="thumbs", systems=systems[:1], human_captions_per_clip=1, raters=[rater]
    )
    return campaign.assignments.get().items.order_by("position").first()


@pytest.fixture
def pair_item(make_user) -> AssignmentItem:
    dataset, _, _ = corpus_build(clip_count=2)
    rater = make_user("voter", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(name="pw", dataset=dataset, task_type="pairwise", split_counts={"HM": 2}, raters=[rater])
    return campaign.assignments.get().items.order_by("position").first()


def _listened(item: AssignmentItem) -> AssignmentItem:
    """Shown, its whole audio served long enough ago that the clip could have been heard, and reported heard."""
    return listened_give(item)


def _scores(item: AssignmentItem, **overrides) -> list[CaptionScores]:
    values = {
        "precision": 4,
        "recall": 3,
        "fluency": Decimal("-0.1"),
        "conciseness": Decimal("0"),
        "irrelevance": Decimal("-0.5"),
    }
    values.update(overrides)
    return [CaptionScores(caption_id=caption_id, **values) for caption_id in item.caption_order]


# --- listening rule ------------------------------------------------------------------


def test_submission_without_listening_is_refused(thumbs_item):
    item_mark_shown(item=thumbs_item)
    with pytest.raises(JudgementError, match="listen to the clip"):
        thumbs_item_submit(item=thumbs_item, scores=_scores(thumbs_item), synthesized="no", seen_version=0)
    assert not ThumbsRating.objects.exists()


def test_a_listening_report_sooner_than_the_clip_is_refused(thumbs_item):
    item_mark_shown(item=thumbs_item)  # the clip lasts 1.5 s; its audio went out just now
    audio_served_give(thumbs_item, seconds_ago=0.2)
    with pytest.raises(JudgementError, match=r"needs 1.5 s of listening"):
        item_mark_listened(item=thumbs_item)
    AssignmentItem.objects.filter(pk=thumbs_item.pk).update(
        audio_first_served_at=timezone.now() - timedelta(seconds=1.6)
    )
    assert item_mark_listened(item=thumbs_item).listened_at is not None


def test_a_report_without_the_audio_served_is_refused_however_long_the_page_was_open(thumbs_item):
    Clip.objects.filter(pk=thumbs_item.clip_id).update(rater_audio="rater-audio/stand-in.wav")
    item_mark_shown(item=thumbs_item)
    AssignmentItem.objects.filter(pk=thumbs_item.pk).update(first_shown_at=timezone.now() - timedelta(minutes=5))
    with pytest.raises(JudgementError, match="has not been played yet"):
        item_mark_listened(item=thumbs_item)


def test_must_listen_seconds_shortens_the_requirement(thumbs_item, settings):
    thumbs_item.clip.duration_seconds = 30
    assert listening_seconds_required(item=thumbs_item) == 30
    settings.MUST_LISTEN_SECONDS = 8
    assert listening_seconds_required(item=thumbs_item) == 8
    thumbs_item.clip.duration_seconds = 3
    assert listening_seconds_required(item=thumbs_item) == 3


# --- THumBS ------------------------------------------------------------------------


def test_thumbs_ratings_are_saved_per_caption_and_the_item_completes(thumbs_item):
    item = _listened(thumbs_item)
    item_draft_save(item=item, draft={"precision_1": "2"}, seen_version=0)
    thumbs_item_submit(item=item, scores=_scores(item), synthesized="yes", seen_version=0)
    rows = ThumbsRating.objects.filter(rater=item.assignment.rater).order_by("caption_id")
    assert sorted(rows.values_list("caption_id", flat=True)) == sorted(item.caption_order)
    for row in rows:
        assert (row.precision, row.recall, row.fluency, row.conciseness, row.irrelevance) == (
            4,
            3,
            Decimal("-0.1"),
            Decimal("0.0"),
            Decimal("-0.5"),
        )
        assert (row.synthesized, row.source, row.campaign_id) == ("yes", "web", item.assignment.campaign_id)
        assert row.overall == Decimal("2.9")
    item.refresh_from_db()
    assert item.completed_at is not None and item.draft == {}
    assert item.seconds_spent == pytest.approx((item.completed_at - item.first_shown_at).total_seconds())
    assert item.version == 1
    first_completion = item.completed_at
    with pytest.raises(StaleItemError):  # a late autosave from the page as it was before submitting
        item_draft_save(item=item, draft={"precision_1": "1"}, seen_version=0)
    item.refresh_from_db()
    assert item.draft == {}
    thumbs_item_submit(item=item, scores=_scores(item, precision=5), synthesized="yes", seen_version=1)
    assert set(rows.values_list("precision", flat=True)) == {5}
    assert ThumbsRating.objects.count() == 2
    item.refresh_from_db()
    assert item.completed_at == first_completion and item.version == 2
    assert list(item.events.values_list("kind", "version")) == [("submitted", 1), ("changed", 2)]


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"precision": 6}, "precision must be a whole number from 1 to 5"),
        ({"recall": 0}, "recall must be a whole number from 1 to 5"),
        ({"fluency": Decimal("-2.5")}, "fluency must be between -2 and 0"),
        ({"conciseness": Decimal("0.3")}, "conciseness must be between -2 and 0"),
        ({"irrelevance": Decimal("-0.15")}, "irrelevance allows one decimal"),
        ({"fluency": "abc"}, "fluency 'abc' is not a number"),
    ],
)
def test_invalid_scores_are_refused_and_nothing_is_written(thumbs_item, overrides, message):
    item = _listened(thumbs_item)
    scores = _scores(item)
    scores[-1] = CaptionScores(**{**scores[-1].__dict__, **overrides})
    with pytest.raises(JudgementError, match=message):
        thumbs_item_submit(item=item, scores=scores, synthesized="no", seen_version=0)
    assert not ThumbsRating.objects.exists(), "the first caption's row was rolled back"
    item.refresh_from_db()
    assert item.completed_at is None


def test_every_caption_of_the_item_must_be_rated(thumbs_item):
    item = _listened(thumbs_item)
    with pytest.raises(JudgementError, match="expected ratings for the item's 2 captions, got 1"):
        thumbs_item_submit(item=item, scores=_scores(item)[:1], synthesized="no", seen_version=0)
    with pytest.raises(JudgementError, match="synthesized"):
        thumbs_item_submit(item=item, scores=_scores(item), synthesized="maybe", seen_version=0)


def test_database_constraints_hold_too(thumbs_item):
    caption_id = thumbs_item.caption_order[0]
    with pytest.raises(IntegrityError), transaction.atomic():
        ThumbsRating.objects.create(
            rater=thumbs_item.assignment.rater,
            caption_id=caption_id,
            campaign=thumbs_item.assignment.campaign,
            precision=6,
            recall=3,
        )


def test_a_closed_campaign_takes_no_judgements(thumbs_item):
    item = _listened(thumbs_item)
    Campaign.objects.update(is_active=False)
    with pytest.raises(JudgementError, match="closed"):
        thumbs_item_submit(item=item, scores=_scores(item), synthesized="no", seen_version=0)


# --- pairwise ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a_on_left,side,choice,left_side",
    [
        (True, "left", "a", "a"),
        (True, "right", "b", "a"),
        (False, "left", "b", "b"),
        (False, "right", "a", "b"),
        (False, "none", "none", "b"),
    ],
)
def test_votes_map_the_chosen_side_to_a_or_b(pair_item, a_on_left, side, choice, left_side):
    AssignmentItem.objects.filter(pk=pair_item.pk).update(a_on_left=a_on_left)
    item = _listened(AssignmentItem.objects.get(pk=pair_item.pk))
    pairwise_item_submit(item=item, side=side, seen_version=0)
    vote = PairwiseVote.objects.get()
    assert (vote.choice, vote.left_side, vote.source, vote.pair_id) == (choice, left_side, "web", item.pair_id)
    item.refresh_from_db()
    assert item.completed_at is not None


def test_a_vote_needs_listening_and_a_known_side(pair_item):
    item_mark_shown(item=pair_item)
    with pytest.raises(JudgementError, match="listen"):
        pairwise_item_submit(item=pair_item, side="left", seen_version=0)
    item = _listened(pair_item)
    with pytest.raises(JudgementError, match="choose left, right or none"):
        pairwise_item_submit(item=item, side="a", seen_version=0)
    assert not PairwiseVote.objects.exists()


def test_drafts_must_be_small_json_objects(pair_item):
    with pytest.raises(JudgementError, match="JSON object"):
        item_draft_save(item=pair_item, draft=["left"], seen_version=0)
    with pytest.raises(JudgementError, match="larger than"):
        item_draft_save(item=pair_item, draft={"comment_1": "x" * 30_000}, seen_version=0)


@pytest.mark.parametrize(
    "draft,message",
    [
        ({"precision_1": "7"}, "precision must be a whole number from 1 to 5"),
        ({"recall_2": 0}, "recall must be a whole number from 1 to 5"),
        ({"fluency_1": "-3"}, "fluency must be between -2 and 0"),
        ({"irrelevance_2": "-0.15"}, "irrelevance allows one decimal"),
        ({"conciseness_1": "lots"}, "is not a number"),
        ({"synthesized": "perhaps"}, "synthesized must be one of"),
        ({"precision_9": "3"}, "there is no caption 9"),
        ({"caption_id": "3"}, "unknown field"),
        ({"comment_1": ["a"]}, "plain value"),
    ],
)
def test_the_draft_endpoint_validates_like_a_submission(thumbs_item, draft, message):
    with pytest.raises(JudgementError, match=message):
        item_draft_save(item=thumbs_item, draft=draft, seen_version=0)
    thumbs_item.refresh_from_db()
    assert thumbs_item.draft == {}, "a refused draft is never stored"
    partial = {"precision_1": "3", "recall_1": "", "fluency_2": "-0.5", "synthesized": ""}
    item_draft_save(item=thumbs_item, draft=partial, seen_version=0)
    thumbs_item.refresh_from_db()
    assert thumbs_item.draft == partial, "blank values are a partial answer, and fine"


def test_pairwise_drafts_take_a_side_only(pair_item):
    with pytest.raises(JudgementError, match="side must be one of"):
        item_draft_save(item=pair_item, draft={"side": "a"}, seen_version=0)
    with pytest.raises(JudgementError, match="unknown field"):
        item_draft_save(item=pair_item, draft={"precision_1": "3"}, seen_version=0)


# --- pages ---------------------------------------------------------------------------


def _thumbs_post(item: AssignmentItem, version: int = 0) -> dict:
    data = {"synthesized": "no", "version": str(version)}
    for number in range(1, len(item.caption_order) + 1):
        data.update(
            {
                f"precision_{number}": "4",
                f"recall_{number}": "2",
                f"fluency_{number}": "-0.1",
                f"conciseness_{number}": "0",
                f"irrelevance_{number}": "-1",
                f"comment_{number}": f"note {number}",
            }
        )
    return data


def test_page_refuses_a_submission_before_listening_then_accepts(client, thumbs_item):
    item = thumbs_item
    client.force_login(item.assignment.rater)
    url = reverse("ratings:item", args=[item.token])
    page = client.get(url)
    assert page.status_code == 200
    assert 'id="submit-button" disabled' in page.content.decode()
    response = client.post(url, _thumbs_post(item))
    assert response.status_code == 400
    assert "listen to the clip before submitting" in response.content.decode()
    assert not ThumbsRating.objects.exists()
    listened_url = reverse("ratings:item_listened", args=[item.token])
    listened = client.post(listened_url, "{}", content_type="application/json")
    assert listened.status_code == 400  # no audio was served (this clip has none at all)
    assert "no audio" in listened.json()["error"]
    audio_served_give(item, seconds_ago=3)
    listened = client.post(listened_url, "{}", content_type="application/json")
    assert listened.status_code == 200 and listened.json() == {"listened": True}
    assert 'id="submit-button" disabled' not in client.get(url).content.decode()
    response = client.post(url, _thumbs_post(item))
    next_item = item.assignment.items.get(position=2)
    assert response.status_code == 302 and response["Location"] == reverse("ratings:item", args=[next_item.token])
    ratings = ThumbsRating.objects.filter(rater=item.assignment.rater)
    assert ratings.count() == 2
    comments = {rating.caption_id: rating.comment for rating in ratings}
    assert [comments[caption_id] for caption_id in item.caption_order] == ["note 1", "note 2"]


def test_draft_autosave_is_restored_on_reload(client, thumbs_item):
    item = thumbs_item
    client.force_login(item.assignment.rater)
    url = reverse("ratings:item", args=[item.token])
    client.get(url)
    draft = {"precision_2": "5", "fluency_1": "-0.3", "comment_2": "a dog <b>barks</b>", "synthesized": "yes"}
    draft_url = reverse("ratings:item_draft", args=[item.token])
    response = client.post(draft_url, {"version": 0, "fields": draft}, content_type="application/json")
    assert response.status_code == 200
    html = client.get(url).content.decode()
    assert 'name="precision_2" value="5" checked' in html
    assert 'name="fluency_1" min="-2" max="0" step="0.1" value="-0.3"' in html
    assert "a dog &lt;b&gt;barks&lt;/b&gt;" in html
    assert 'value="yes" checked' in html
    bad = client.post(draft_url, "not json", content_type="application/json")
    assert bad.status_code == 400
    out_of_range = client.post(
        draft_url, {"version": 0, "fields": {"precision_1": "9"}}, content_type="application/json"
    )
    assert out_of_range.status_code == 400 and "precision" in out_of_range.json()["error"]


def test_resume_goes_to_the_first_unfinished_item_and_then_says_done(client, pair_item):
    item = pair_item
    client.force_login(item.assignment.rater)
    next_url = reverse("ratings:campaign_next", args=[item.assignment.campaign_id])
    assert client.get(next_url)["Location"] == reverse("ratings:item", args=[item.token])
    for each in item.assignment.items.all():
        pairwise_item_submit(item=_listened(each), side="none", seen_version=0)
    page = client.get(next_url)
    assert page.status_code == 200 and "All done" in page.content.decode()


def test_other_raters_items_are_invisible(client, make_user, pair_item):
    intruder = make_user("intruder", "rater")
    headphone_pass_give(intruder)
    client.force_login(intruder)
    assert client.get(reverse("ratings:item", args=[pair_item.token])).status_code == 404
    response = client.post(reverse("ratings:item_draft", args=[pair_item.token]), {}, content_type="application/json")
    assert response.status_code == 404
    assert client.get(reverse("ratings:item_audio", args=[pair_item.token])).status_code == 404
    client.force_login(make_user("annotator-only", "annotator"))
    assert client.get(reverse("ratings:item", args=[pair_item.token])).status_code == 403


def test_pairwise_page_posts_a_side(client, pair_item):
    item = _listened(pair_item)
    client.force_login(item.assignment.rater)
    response = client.post(reverse("ratings:item", args=[item.token]), {"side": "left", "version": "0"})
    assert response.status_code == 302
    vote = PairwiseVote.objects.get()
    assert vote.choice == ("a" if item.a_on_left else "b")
    page = client.get(reverse("ratings:item", args=[item.token])).content.decode()
    assert "Submitted" in page and "Caption <strong>A</strong> (left) describes the clip better" in page
    assert 'name="side"' not in page, "a submitted item shows its answer, not the form"
    change_url = reverse("ratings:item_change", args=[item.token])
    assert client.post(change_url)["Location"] == reverse("ratings:item", args=[item.token]) + "?change=1"
    form_page = client.get(reverse("ratings:item", args=[item.token]) + "?change=1").content.decode()
    assert 'value="left" checked' in form_page and 'name="version" value="1"' in form_page
    assert item.events.filter(kind="change_opened").count() == 1


def test_rater_home_lists_progress(client, pair_item):
    client.force_login(pair_item.assignment.rater)
    pairwise_item_submit(item=_listened(pair_item), side="left", seen_version=0)
    html = client.get(reverse("ratings:home")).content.decode()
    assert "Pairwise comparison study" in html and "1 / 2" in html and "Continue" in html


def _place_by_separate_queries(item: AssignmentItem) -> dict:
    """Where an item sits, computed as the page did before (three queries): the reference for item_place."""
    items = item.assignment.items
    open_items = items.filter(completed_at__isnull=True).exclude(pk=item.pk).order_by("position")
    later_open = open_items.filter(position__gt=item.position).values_list("token", flat=True).first()
    previous = items.filter(position__lt=item.position).order_by("-position").values_list("token", flat=True).first()
    return {
        "progress": {
            "number": items.filter(position__lte=item.position).count(),
            "total": items.count(),
            "completed": items.filter(completed_at__isnull=False).count(),
        },
        "neighbours": {
            "previous_token": previous,
            "next_open_token": later_open or open_items.values_list("token", flat=True).first(),
        },
    }


def test_item_place_matches_the_queries_it_replaces(make_user):
    """Progress and previous/next tokens from one query equal the aggregate queries, whatever is completed."""
    dataset, clips, systems = corpus_build(clip_count=5)
    rater = make_user("placer", "rater")
    campaign = campaign_setup(
        name="place",
        dataset=dataset,
        task_type="thumbs",
        systems=systems[:1],
        human_captions_per_clip=1,
        raters=[rater],
    )
    items = list(campaign.assignments.get().items.order_by("position"))
    assert len(items) == 5
    # Positions with a gap, as a released share leaves them (its unanswered items deleted): 1, 2, 4, 5, 6.
    for item in items[2:]:
        item.position += 1
    for item in reversed(items[2:]):
        item.save(update_fields=["position"])
    # Completion patterns: none, a middle one, the later ones (the next open item wraps to an earlier one), all.
    for completed_positions in [(), (2,), (4, 5, 6), (1, 2, 4, 5, 6)]:
        for item in items:
            item.completed_at = timezone.now() if item.position in completed_positions else None
            item.save(update_fields=["completed_at"])
        for item in items:
            assert item_place(item=item) == _place_by_separate_queries(item), (completed_positions, item.position)
            # The submit reads the next open item in its own lock statement, through next_open_after.
            next_token = next_open_after(item=item).values_list("token", flat=True).first()
            assert next_token == _place_by_separate_queries(item)["neighbours"]["next_open_token"]

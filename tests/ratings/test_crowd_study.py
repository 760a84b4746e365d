"""Crowd studies over HTTP (Django's client): arrival and ids, the path, resumption, codes, shares and release,
attention checks and exclusion, previews, the pay export."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem, CaptionPair, PairwiseVote, ThumbsRating
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent, Study, StudySlot
from ratings.selectors import included_thumbs_ratings, included_votes
from ratings.services.participants import preview_participant_create
from ratings.services.study_exclusion import participant_reinstate
from ratings.services.study_report import study_pay_csv
from ratings.services.study_shares import share_allocate, study_coverage
from tests.ratings.study_data import (
    answer_share,
    arrival_url,
    item_answer_post,
    item_audio_play,
    mturk_worker_id,
    participant_of,
    prolific_arrive,
    prolific_id,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    thumbs_study,
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]


@pytest.fixture
def pairwise_study():
    return make_pairwise_study()


def _gold_side(item: AssignmentItem) -> str:
    """The side a careful listener picks on a gold pair: the clip's own caption (the gold choice)."""
    gold = item.pair.gold_choice
    return "left" if (gold == "a") == item.a_on_left else "right"


def _good_side(item: AssignmentItem) -> str:
    return _gold_side(item) if item.pair.gold_choice else "left"


# --- Arrival ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params,named",
    [
        ({"PROLIFIC_PID": "not-hex"}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": "ab" * 11}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": "ab" * 12, "STUDY_ID": "xyz"}, "STUDY_ID"),
    ],
)
def test_a_malformed_prolific_id_is_refused_by_name_and_creates_nobody(pairwise_study, params, named):
    response = Client().get(arrival_url(pairwise_study, **params))
    assert response.status_code == 400
    assert named in response.content.decode()
    assert not Participant.objects.exists()


def test_arrival_creates_a_participant_without_password_and_drops_the_id_from_the_url(pairwise_study):
    pid = prolific_id()
    client, response = prolific_arrive(pairwise_study, pid)
    assert response.status_code == 302 and response["Location"] == f"/study/{pairwise_study.slug}/"
    participant = Participant.objects.get()
    assert (participant.platform, participant.platform_id) == ("prolific", pid)
    assert participant.platform_data == {"STUDY_ID": "a" * 24, "SESSION_ID": "b" * 24}
    assert not participant.user.has_usable_password() and pid not in participant.user.username
    assert set(participant.user.groups.values_list("name", flat=True)) == {"rater", "participant"}
    landing = client.get(response["Location"])
    assert landing.status_code == 200 and "Sound descriptions" in landing.content.decode()
    assert pid not in landing.content.decode()


def test_resuming_from_another_browser_continues_where_the_participant_was(pairwise_study):
    pid = prolific_id()
    first, _ = prolific_arrive(pairwise_study, pid)
    participant = walk_to_items(first, pairwise_study)
    item = share_items(participant)[0]
    assert item_answer_post(first, item, side=_good_side(item)).status_code == 302
    second, response = prolific_arrive(pairwise_study, pid, address="10.9.9.9")
    assert Participant.objects.count() == 1
    follow = second.get(response["Location"])
    assert follow.status_code == 302 and follow["Location"] == f"/study/{pairwise_study.slug}/items/"
    next_item = second.get(follow["Location"])
    assert next_item["Location"] == reverse("ratings:item", kwargs={"token": share_items(participant)[1].token})
    assert ParticipantEvent.objects.filter(participant=participant, kind="resumed").count() == 1


def test_the_same_id_cannot_take_part_twice(pairwise_study):
    pid = prolific_id()
    client, _ = prolific_arrive(pairwise_study, pid)
    client.post(reverse("study:entry", kwargs={"slug": pairwise_study.slug}))
    client.post(reverse("study:consent", kwargs={"slug": pairwise_study.slug}), {"decision": "decline"})
    again, response = prolific_arrive(pairwise_study, pid, address="10.2.2.2")
    end = again.get(again.get(response["Location"])["Location"])
    assert end.status_code == 200 and pairwise_study.no_consent_code in end.content.decode()
    assert Participant.objects.count() == 1
    participant = Participant.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Participant.objects.create(
            study=pairwise_study, user=make_other_user(), platform="prolific", platform_id=pid, is_preview=False
        )
    assert participant.status == "no_consent"


def make_other_user():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create(username=f"other-{prolific_id()[:6]}")


def test_participants_of_named_earlier_campaigns_are_not_eligible(pairwise_study):
    pid = prolific_id()
    prolific_arrive(pairwise_study, pid)
    later = make_pairwise_study(name="later-pairs")
    later.excluded_campaigns.add(pairwise_study.campaign)
    _, response = prolific_arrive(later, pid, address="10.3.3.3")
    assert response.status_code == 403 and "related study" in response.content.decode()
    assert not Participant.objects.filter(study=later).exists()
    _, fresh = prolific_arrive(later, prolific_id(), address="10.3.3.3")
    assert fresh.status_code == 302


def test_a_participant_of_an_excluded_campaign_who_took_part_here_too_resumes(pairwise_study):
    """The arrival's one read finds both participations of the id: its own study's wins (resumed, not refused)."""
    pid = prolific_id()
    later = make_pairwise_study(name="later-pairs")
    client, _ = prolific_arrive(later, pid)
    own = participant_of(client)
    prolific_arrive(pairwise_study, pid, address="10.4.4.4")
    later.excluded_campaigns.add(pairwise_study.campaign)
    again, response = prolific_arrive(later, pid, address="10.5.5.5")
    assert response.status_code == 302 and participant_of(again) == own
    assert ParticipantEvent.objects.filter(participant=own, kind="resumed").count() == 1


def test_new_participants_are_rate_limited_per_address(pairwise_study, settings):
    settings.STUDY_ARRIVALS_PER_ADDRESS = 2
    for _ in range(2):
        assert prolific_arrive(pairwise_study, address="10.7.7.7")[1].status_code == 302
    _, refused = prolific_arrive(pairwise_study, address="10.7.7.7")
    assert refused.status_code == 429
    assert Participant.objects.count() == 2
    assert prolific_arrive(pairwise_study, address="10.8.8.8")[1].status_code == 302
    # Resuming is never limited, and the address itself is not stored.
    first = Participant.objects.order_by("pk").first()
    _, resumed = prolific_arrive(pairwise_study, first.platform_id, address="10.7.7.7")
    assert resumed.status_code == 302
    assert "10.7.7.7" not in first.address_key and len(first.address_key) == 32


def test_mturk_preview_shows_the_instructions_only():
    study = make_pairwise_study(platforms=["mturk"], reward_currency="USD")
    response = Client().get(arrival_url(study, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H" * 30))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Accept the HIT to start" in page and 'id="start-form"' not in page
    assert not Participant.objects.exists()
    assert "frame-ancestors" in response["Content-Security-Policy"] and "X-Frame-Options" not in response


def test_mturk_submits_only_to_mturk(settings):
    study = make_pairwise_study(platforms=["mturk"], reward_currency="USD")
    params = {"workerId": mturk_worker_id(), "assignmentId": "B" * 30, "hitId": "C" * 30}
    evil = Client().get(arrival_url(study, **params, turkSubmitTo="https://evil.example"))
    assert evil.status_code == 400 and "turkSubmitTo" in evil.content.decode()
    assert not Participant.objects.exists()
    ok = Client().get(arrival_url(study, **params, turkSubmitTo="https://workersandbox.mturk.com"))
    assert ok.status_code == 200 and Participant.objects.get().platform_data["assignmentId"] == "B" * 30


# --- The path and its ends -------------------------------------------------------------------------------


def test_the_whole_prolific_path_ends_with_the_code_and_the_completion_url(pairwise_study):
    client, _ = prolific_arrive(pairwise_study)
    participant = walk_to_items(client, pairwise_study)
    assert participant.questionnaire_answers == {"age_band": "25-34", "device": ""}
    assert participant.practice_done_at is not None
    items = share_items(participant)
    assert len(items) == 3 + 2, "three items to cover and two gold checks"
    checks = AttentionCheck.objects.filter(rater=participant.user)
    assert checks.count() == 2 and all(check.pair.gold_choice for check in checks)
    assert not PairwiseVote.objects.exists(), "the practice item is not a judgement"
    answer_share(client, participant, side_for=_good_side)
    end = client.get(client.get(f"/study/{pairwise_study.slug}/items/")["Location"])
    page = end.content.decode()
    assert pairwise_study.completion_code in page
    assert f"https://app.prolific.com/submissions/complete?cc={pairwise_study.completion_code}" in page
    participant.refresh_from_db()
    assert (participant.status, participant.stage, participant.is_excluded) == ("completed", "finished", False)
    assert PairwiseVote.objects.filter(rater=participant.user).count() == 5
    # The check votes are kept but count in no figure.
    assert included_votes(PairwiseVote.objects.filter(rater=participant.user)).count() == 3
    assert list(checks.values_list("passed", flat=True)) == [True, True]
    # Items are closed afterwards: the item page sends the participant to the end.
    response = client.get(reverse("ratings:item", kwargs={"token": items[0].token}))
    assert response.status_code == 302 and response["Location"].endswith("/end/")


def test_declining_consent_ends_with_the_no_consent_code(pairwise_study):
    client, _ = prolific_arrive(pairwise_study)
    client.post(reverse("study:entry", kwargs={"slug": pairwise_study.slug}))
    response = client.post(reverse("study:consent", kwargs={"slug": pairwise_study.slug}), {"decision": "decline"})
    page = client.get(response["Location"]).content.decode()
    assert pairwise_study.no_consent_code in page and pairwise_study.completion_code not in page
    assert Participant.objects.get().status == "no_consent"


def test_a_questionnaire_answer_outside_the_choices_is_refused(pairwise_study):
    client, _ = prolific_arrive(pairwise_study)
    client.post(reverse("study:entry", kwargs={"slug": pairwise_study.slug}))
    client.post(reverse("study:consent", kwargs={"slug": pairwise_study.slug}), {"decision": "agree"})
    response = client.post(reverse("study:questionnaire", kwargs={"slug": pairwise_study.slug}), {"age_band": "99"})
    assert response.status_code == 400 and "Your age" in response.content.decode()
    assert Participant.objects.get().stage == "questionnaire"


def test_failing_the_screen_on_every_attempt_screens_out_with_its_code():
    study = make_pairwise_study(screens="antiphase", screen_attempts=1, questionnaire=[])
    client, _ = prolific_arrive(study)
    client.post(reverse("study:entry", kwargs={"slug": study.slug}))
    client.post(reverse("study:consent", kwargs={"slug": study.slug}), {"decision": "agree"})
    page = client.get(reverse("study:headphones", kwargs={"slug": study.slug}))
    assert page.status_code == 200 and "last attempt" in page.content.decode()
    participant = Participant.objects.get()
    check = participant.user.headphone_checks.get()
    for number in range(1, 7):
        assert client.get(reverse("ratings:headphone_trial_audio", args=[check.pk, number])).status_code == 200
    check.refresh_from_db()
    from ratings.services.headphone import screen

    wrong = {
        f"trial_{n}": str((screen("antiphase").trial_answer(t) + 1) % 3 + 1) for n, t in enumerate(check.trials, 1)
    }
    response = client.post(reverse("study:headphones", kwargs={"slug": study.slug}), {"check_id": check.pk, **wrong})
    end = client.get(response["Location"]).content.decode()
    assert study.screen_out_code in end and "not a rejection" in end
    participant.refresh_from_db()
    assert participant.status == "screened_out" and not AssignmentItem.objects.exists()
    # The rater screening pages are not a way round the study's attempts.
    assert client.get("/ratings/headphones/antiphase/")["Location"] == f"/study/{study.slug}/"


def test_later_steps_cannot_be_skipped(pairwise_study):
    client, _ = prolific_arrive(pairwise_study)
    for name in ("consent", "questionnaire", "instructions", "items", "end"):
        response = client.get(reverse(f"study:{name}", kwargs={"slug": pairwise_study.slug}))
        assert response.status_code == 302 and response["Location"] == f"/study/{pairwise_study.slug}/"
    assert client.post(reverse("study:start", kwargs={"slug": pairwise_study.slug})).status_code == 302
    assert not AssignmentItem.objects.exists()


# --- Shares, release, full ---------------------------------------------------------------------------------


def test_timed_out_and_returned_shares_go_to_the_next_participants(pairwise_study):
    slow, _ = prolific_arrive(pairwise_study)
    slow_participant = walk_to_items(slow, pairwise_study)
    first = next(item for item in share_items(slow_participant) if not item.pair.gold_choice)
    item_answer_post(slow, first)
    Participant.objects.filter(pk=slow_participant.pk).update(reserved_until=timezone.now() - timedelta(seconds=1))
    stale = share_items(slow_participant)[-1]
    # The next visit times the participant out: the unanswered items are gone, the answered one stays.
    response = slow.get(reverse("ratings:item", kwargs={"token": stale.token}))
    assert response.status_code == 302 and response["Location"].endswith("/end/")
    assert "time limit has passed" in slow.get(response["Location"]).content.decode()
    slow_participant.refresh_from_db()
    assert slow_participant.status == "timed_out"
    assert [item.pk for item in share_items(slow_participant)] == [first.pk]
    assert StudySlot.objects.filter(participant=slow_participant).count() == 1
    leaving, _ = prolific_arrive(pairwise_study, address="10.0.0.2")
    leaver = walk_to_items(leaving, pairwise_study)
    leaving.post(reverse("study:leave", kwargs={"slug": pairwise_study.slug}))
    leaver.refresh_from_db()
    assert leaver.status == "returned" and not share_items(leaver)
    # Every slot is free again except the one answered.
    coverage = study_coverage(study=pairwise_study)
    assert (coverage.judged, coverage.reserved, coverage.free) == (1, 0, 6 * 2 - 1)


def test_every_item_reaches_its_count_from_distinct_participants_then_the_study_is_full(pairwise_study):
    # 6 HC pairs x 2 judgements, 3 per share: four participants cover it, or five when the gold rule (no gold check
    # of a clip the share plays) drew a share among less covered items; the next finds it full.
    participants = []
    while study_coverage(study=pairwise_study).free and len(participants) < 5:
        client, _ = prolific_arrive(pairwise_study, address=f"10.1.0.{len(participants)}")
        participant = walk_to_items(client, pairwise_study)
        answer_share(client, participant, side_for=_good_side)
        participants.append(participant)
    coverage = study_coverage(study=pairwise_study)
    assert (coverage.judged, coverage.items_complete, coverage.free) == (12, 6, 0)
    per_pair = {}
    for vote in included_votes(PairwiseVote.objects.all()):
        per_pair.setdefault(vote.pair_id, []).append(vote.rater_id)
    assert sorted(len(raters) for raters in per_pair.values()) == [2] * 6
    assert all(len(set(raters)) == len(raters) for raters in per_pair.values())
    client, response = prolific_arrive(pairwise_study, address="10.1.1.1")
    page = client.get(client.get(response["Location"])["Location"]).content.decode()
    assert pairwise_study.full_code in page
    assert Participant.objects.get(user_id=client.session["_auth_user_id"]).status == "full"


# --- Attention checks and exclusion ------------------------------------------------------------------------


def test_failed_checks_exclude_the_participant_frees_their_slots_and_an_admin_can_reinstate(pairwise_study, make_user):
    client, _ = prolific_arrive(pairwise_study)
    careless = walk_to_items(client, pairwise_study)

    def wrong_on_gold(item):
        side = _gold_side(item)
        return {"left": "right", "right": "left"}[side] if item.pair.gold_choice else "left"

    answer_share(client, careless, side_for=wrong_on_gold)
    client.get(f"/study/{pairwise_study.slug}/items/")
    careless.refresh_from_db()
    assert careless.status == "completed" and careless.is_excluded
    assert careless.exclusion_reasons == ["failed 2 of 2 attention checks"]
    assert pairwise_study.campaign.excluded_raters.filter(pk=careless.user_id).exists()
    assert PairwiseVote.objects.filter(rater=careless.user).count() == 5, "answers are kept"
    assert not included_votes(PairwiseVote.objects.filter(rater=careless.user)).exists()
    assert not StudySlot.objects.filter(participant=careless).exists(), "their slots went back to the pool"
    admin = make_user("organiser", staff=True)
    participant_reinstate(participant=careless, by=admin)
    careless.refresh_from_db()
    assert not careless.is_excluded
    assert included_votes(PairwiseVote.objects.filter(rater=careless.user)).count() == 3
    assert StudySlot.objects.filter(participant=careless).count() == 3
    event = ParticipantEvent.objects.get(participant=careless, kind="reinstated")
    assert event.by == admin and event.detail["previous_reasons"] == ["failed 2 of 2 attention checks"]


def test_the_same_answer_everywhere_and_a_short_median_time_are_rules_too():
    study = make_pairwise_study(exclude_same_answer=True, exclude_failed_checks=0, exclude_median_seconds_below=60)
    client, _ = prolific_arrive(study)
    participant = walk_to_items(client, study)
    answer_share(client, participant, side_for=lambda item: "left")
    client.get(f"/study/{study.slug}/items/")
    participant.refresh_from_db()
    # Each item was shown 30 s before its answer (the helper backdates it), but answered right after the one
    # before: on the rater's one clock only the first counts 30 s, so the median is far below 60 s.
    assert re.fullmatch(r"median time per item \d\.\d s, below 60 s", participant.exclusion_reasons[0])
    assert participant.exclusion_reasons[1] == "the same answer on every item"


def test_thumbs_catch_captions_come_from_clips_the_participant_never_hears():
    study = thumbs_study(attention_checks=2)
    client, _ = prolific_arrive(study)
    participant = walk_to_items(client, study)
    items = share_items(participant)
    checks = list(AttentionCheck.objects.filter(rater=participant.user).select_related("caption", "item"))
    assert len(checks) == 2 and {check.kind for check in checks} == {"catch_caption"}
    assert len({check.item_id for check in checks}) == 2 and len({check.caption_id for check in checks}) == 2
    share_clips = {item.clip_id for item in items}
    for check in checks:
        assert check.caption.clip_id not in share_clips and check.caption.role == "reference"
        assert check.caption_id in check.item.caption_order
    for item in items:
        own = set(study.campaign.captions.filter(clip_id=item.clip_id).values_list("pk", flat=True))
        catch = {check.caption_id for check in checks if check.item_id == item.pk}
        # The catch caption takes the place of one of the clip's captions: check items show as many captions.
        assert len(item.caption_order) == len(own)
        assert set(item.caption_order) - own == catch and len(own - set(item.caption_order)) == len(catch)
    # Each slot the participant holds points at their item of the slot's clip (release frees slots by item).
    held = StudySlot.objects.filter(participant=participant).values_list("clip_id", "pair_id", "item_id")
    assert sorted(held) == sorted((item.clip_id, None, item.pk) for item in items)


def test_thumbs_catch_caption_pass_and_fail_follow_precision():
    study = thumbs_study(attention_checks=1, exclude_failed_checks=1)
    good, _ = prolific_arrive(study, address="10.4.0.1")
    careful = walk_to_items(good, study)
    check = AttentionCheck.objects.get(rater=careful.user)
    for item in share_items(careful):
        _answer_thumbs(good, item, catch=check.caption_id if item.pk == check.item_id else None, catch_precision=1)
    good.get(f"/study/{study.slug}/items/")
    check.refresh_from_db()
    careful.refresh_from_db()
    assert check.passed is True and not careful.is_excluded
    rating = ThumbsRating.objects.get(rater=careful.user, caption_id=check.caption_id)
    assert rating.precision == 1 and not included_thumbs_ratings(ThumbsRating.objects.filter(pk=rating.pk)).exists()
    bad, _ = prolific_arrive(study, address="10.4.0.2")
    sloppy = walk_to_items(bad, study)
    sloppy_check = AttentionCheck.objects.get(rater=sloppy.user)
    for item in share_items(sloppy):
        _answer_thumbs(
            bad, item, catch=sloppy_check.caption_id if item.pk == sloppy_check.item_id else None, catch_precision=5
        )
    bad.get(f"/study/{study.slug}/items/")
    sloppy.refresh_from_db()
    assert sloppy.is_excluded and sloppy.exclusion_reasons == ["failed 1 of 1 attention checks"]


def _answer_thumbs(client, item, *, catch, catch_precision):
    url = reverse("ratings:item", kwargs={"token": item.token})
    page = client.get(url)
    version = re.search(rb'name="version" value="(\d+)"', page.content).group(1).decode()
    item_audio_play(client, item)
    assert client.post(f"{url}listened/", "{}", content_type="application/json").status_code == 200
    data = {"version": version, "synthesized": "no"}
    for number, caption_id in enumerate(item.caption_order, start=1):
        precision = catch_precision if caption_id == catch else 4
        data.update({f"precision_{number}": str(precision), f"recall_{number}": "3"})
        data.update({f"{name}_{number}": "0" for name in ("fluency", "conciseness", "irrelevance")})
    assert client.post(url, data).status_code == 302


# --- Previews and pay ------------------------------------------------------------------------------------


def test_a_preview_takes_no_slot_and_counts_nowhere(pairwise_study, make_user):
    admin = make_user("organiser", staff=True)
    preview = preview_participant_create(study=pairwise_study, by=admin)
    Participant.objects.filter(pk=preview.pk).update(stage="instructions", practice_done_at=timezone.now())
    allocation = share_allocate(participant=Participant.objects.get(pk=preview.pk))
    assert len(allocation.items) == 5
    assert not StudySlot.objects.filter(participant__isnull=False).exists()
    client = Client()
    client.force_login(preview.user)
    answer_share(client, Participant.objects.get(pk=preview.pk), side_for=_good_side)
    assert PairwiseVote.objects.filter(rater=preview.user).count() == 5
    assert not included_votes().exists()
    assert study_coverage(study=pairwise_study).judged == 0
    assert preview.platform_id not in study_pay_csv(study=pairwise_study, platform=pairwise_study.platforms[0])


def test_the_pay_csv_has_one_row_per_participant_with_outcome_code_and_action(pairwise_study):
    done, _ = prolific_arrive(pairwise_study, address="10.5.0.1")
    finished = walk_to_items(done, pairwise_study)
    answer_share(done, finished, side_for=_good_side)
    done.get(f"/study/{pairwise_study.slug}/items/")
    declined, _ = prolific_arrive(pairwise_study, address="10.5.0.2")
    declined.post(reverse("study:entry", kwargs={"slug": pairwise_study.slug}))
    declined.post(reverse("study:consent", kwargs={"slug": pairwise_study.slug}), {"decision": "decline"})
    rows = list(csv.DictReader(io.StringIO(study_pay_csv(study=pairwise_study, platform=pairwise_study.platforms[0]))))
    by_id = {row["participant_id"]: row for row in rows}
    assert len(rows) == 2
    completed = by_id[finished.platform_id]
    assert (completed["status"], completed["completion_code"], completed["action"]) == (
        "completed",
        pairwise_study.completion_code,
        "approve",
    )
    assert float(completed["minutes"]) >= 0
    refused = by_id[participant_of(declined).platform_id]
    assert (refused["status"], refused["completion_code"], refused["action"]) == (
        "no_consent",
        pairwise_study.no_consent_code,
        "none",
    )


def test_gold_pairs_are_checks_not_items(pairwise_study):
    regular = StudySlot.objects.filter(study=pairwise_study).values_list("pair_id", flat=True).distinct()
    assert not CaptionPair.objects.filter(pk__in=regular).exclude(gold_choice="").exists()
    assert StudySlot.objects.filter(study=pairwise_study).count() == 6 * 2


def test_an_excluded_thumbs_participant_and_catch_captions_count_in_no_figure_or_export(make_user):
    from metrics_bridge.services.evaluation.dashboards import caption_page_data
    from metrics_bridge.services.evaluation.leaderboard import thumbs_means
    from metrics_bridge.services.evaluation.thumbs_report import campaign_rating_rows
    from ratings.services.study_exclusion import participant_exclude
    from ratings.services.study_export import study_thumbs_csv

    study = thumbs_study(judgements=2, items_per_participant=6, attention_checks=1)
    kept_client, _ = prolific_arrive(study, address="10.6.0.1")
    kept = walk_to_items(kept_client, study)
    answer_share(kept_client, kept, precision_for=lambda item: 2)
    gone_client, _ = prolific_arrive(study, address="10.6.0.2")
    gone = walk_to_items(gone_client, study)
    answer_share(gone_client, gone, precision_for=lambda item: 5)
    for client in (kept_client, gone_client):
        client.get(f"/study/{study.slug}/items/")
    participant_exclude(participant=gone, reasons=["careless"], by=make_user("organiser", staff=True))
    catch_ids = set(AttentionCheck.objects.values_list("caption_id", flat=True))
    # By hand: the kept participant's ratings of campaign captions, nothing else.
    expected = ThumbsRating.objects.filter(rater=kept.user).exclude(caption_id__in=catch_ids)
    assert expected.exists() and ThumbsRating.objects.filter(rater=gone.user).exists()
    rows = campaign_rating_rows(campaign=study.campaign)
    assert sorted((rater, caption) for rater, caption, _ in rows) == sorted(
        expected.values_list("rater_id", "caption_id")
    )
    means = thumbs_means(dataset=study.campaign.dataset)
    by_hand = {}
    for rating in expected.filter(caption__system__isnull=False).select_related("caption"):
        by_hand.setdefault(rating.caption.system_id, []).append(float(rating.overall))
    assert {system: (round(mean, 6), count) for system, (mean, count) in means.items()} == {
        system: (round(sum(values) / len(values), 6), len(values)) for system, values in by_hand.items()
    }
    exported = list(csv.DictReader(io.StringIO(study_thumbs_csv(study=study))))
    assert len(exported) == expected.count() and {row["rater"] for row in exported} == {kept.user.username}
    shared = expected.filter(caption__in=ThumbsRating.objects.filter(rater=gone.user).values("caption")).first()
    page = caption_page_data(caption=shared.caption)
    assert [rating.rater_id for rating in page["ratings"]] == [kept.user_id]


def test_the_export_study_command_writes_the_benchmark_file_and_names_what_is_wrong(tmp_path):
    import json

    from django.core.management import CommandError, call_command

    # The FENSE layout holds one HC pair per clip: of the 6 clips 2 are HI donors, so 4 HC pairs on 4 clips.
    pairwise_study = make_pairwise_study(name="export-pairs", hc=4)
    client, _ = prolific_arrive(pairwise_study)
    participant = walk_to_items(client, pairwise_study)
    answer_share(client, participant, side_for=_good_side)
    out = tmp_path / "study.json"
    call_command("export_study", "--campaign", pairwise_study.campaign.name, "--out", str(out))
    items = json.loads(out.read_text())
    assert sum(len(entry[-1]) for item in items for key, entry in item.items() if key == "HC") == 3
    assert all(set(item) <= {"raw_name", "audio_id", "references", "HC"} for item in items), "no gold check in it"
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        call_command("export_study", "--campaign", "nope")


# --- The admin's pages -----------------------------------------------------------------------------------


def test_an_admin_publishes_a_campaign_in_a_few_clicks_and_sees_refusals_named(client, make_user):
    from ratings.services.campaigns import campaign_setup
    from tests.ratings.campaign_data import corpus_build

    dataset, _, _ = corpus_build(name="publish-data", clip_count=4)
    campaign = campaign_setup(
        name="publish-me", dataset=dataset, task_type="pairwise", split_counts={"HC": 4, "HI": 1}, gold_from_hi=True
    )
    client.force_login(make_user("organiser", staff=True))
    url = reverse("ratings:study_publish", args=[campaign.pk])
    page = client.get(url)
    assert page.status_code == 200 and "age_band | Your age" in page.content.decode()
    form = {
        "platforms": "prolific",
        "estimated_minutes": "15",
        "reward": "2.50",
        "reward_currency": "gbp",
        "consent_text": "Consent.",
        "questionnaire_text": "age | Your age | young ; old *\nbad key | x",
        "screens": "antiphase",
        "screen_attempts": "2",
        "items_per_participant": "2",
        "attention_checks": "2",
        "time_limit_minutes": "30",
        "exclude_failed_checks": "2",
        "exclude_median_seconds_below": "0",
        "exclude_same_answer": "on",
    }
    refused = client.post(url, form)
    assert refused.status_code == 400 and "questionnaire line 2: key &#x27;bad key&#x27;" in refused.content.decode()
    form["questionnaire_text"] = "age | Your age | young ; old *"
    refused = client.post(url, form)
    assert refused.status_code == 400 and "2 attention checks need as many gold HI pairs" in refused.content.decode()
    assert not Study.objects.exists(), "nothing half-written"
    form["attention_checks"] = "1"
    published = client.post(url, form)
    study = Study.objects.get()
    assert published["Location"] == reverse("ratings:study_detail", args=[study.pk])
    assert study.reward_currency == "GBP" and study.questionnaire == [
        {"key": "age", "label": "Your age", "choices": ["young", "old"], "required": True}
    ]
    assert StudySlot.objects.filter(study=study).count() == 4 * campaign.judgements_per_item
    detail = client.get(published["Location"]).content.decode()
    assert f"/study/{study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in detail
    assert f"https://app.prolific.com/submissions/complete?cc={study.completion_code}" in detail


def test_an_admin_sets_the_platforms_own_codes_and_bad_codes_are_named(client, make_user):
    """Prolific shows its own completion code for a study: the experimenter pastes it, and the end page and the
    completion redirect use it; a code with other characters, or one shared by two endings, is refused."""
    from ratings.services.campaigns import campaign_setup
    from tests.ratings.campaign_data import corpus_build

    dataset, _, _ = corpus_build(name="codes-data", clip_count=4)
    campaign = campaign_setup(name="codes", dataset=dataset, task_type="pairwise", split_counts={"HC": 4})
    client.force_login(make_user("organiser", staff=True))
    url = reverse("ratings:study_publish", args=[campaign.pk])
    form = {
        "platforms": "prolific", "estimated_minutes": "15", "reward": "2.50", "reward_currency": "GBP",
        "consent_text": "Consent.", "questionnaire_text": "", "screens": "antiphase", "screen_attempts": "2",
        "items_per_participant": "2", "attention_checks": "0", "time_limit_minutes": "30",
        "exclude_failed_checks": "2", "exclude_median_seconds_below": "0",
        "completion_code": "C1A2B3C4", "screen_out_code": "c1a2b3c4",
    }  # fmt: skip
    refused = client.post(url, form)
    assert refused.status_code == 400 and "screen_out_code equals completion_code" in refused.content.decode()
    form["screen_out_code"] = "NO-GOOD!"
    refused = client.post(url, form)
    assert refused.status_code == 400 and "screen_out_code &#x27;NO-GOOD!&#x27;: use 1 to 16 letters" in (
        refused.content.decode()
    )
    assert not Study.objects.exists(), "nothing half-written"
    form["screen_out_code"] = ""  # blank: a random code
    published = client.post(url, form)
    study = Study.objects.get()
    assert study.completion_code == "C1A2B3C4" and len(study.screen_out_code) == 8
    detail = client.get(published["Location"]).content.decode()
    assert "https://app.prolific.com/submissions/complete?cc=C1A2B3C4" in detail
    # Changing the settings keeps a code left blank and takes a new one.
    settings_url = reverse("ratings:study_settings", args=[study.pk])
    kept_screen_out = study.screen_out_code
    client.post(settings_url, {**form, "completion_code": "NEWCODE9", "screen_out_code": ""})
    study.refresh_from_db()
    assert (study.completion_code, study.screen_out_code) == ("NEWCODE9", kept_screen_out)


def test_closing_the_study_stops_arrivals_and_answers_until_it_is_reopened(client, pairwise_study, make_user):
    rater_client, _ = prolific_arrive(pairwise_study)
    participant = walk_to_items(rater_client, pairwise_study)
    client.force_login(make_user("organiser", staff=True))
    client.post(reverse("ratings:study_detail", args=[pairwise_study.pk]), {"action": "close"})
    _, arrival = prolific_arrive(pairwise_study, address="10.9.0.1")
    assert arrival.status_code == 410 and "closed" in arrival.content.decode()
    item = share_items(participant)[0]
    closed = rater_client.get(reverse("ratings:item", kwargs={"token": item.token}))
    assert closed.status_code == 302
    assert rater_client.get(closed["Location"]).status_code == 410
    client.post(reverse("ratings:study_detail", args=[pairwise_study.pk]), {"action": "reopen"})
    assert item_answer_post(rater_client, item).status_code == 302


def test_the_study_pages_are_for_admins_only(client, pairwise_study, make_user):
    urls = [
        reverse("ratings:study_list"),
        reverse("ratings:study_detail", args=[pairwise_study.pk]),
        reverse("ratings:study_settings", args=[pairwise_study.pk]),
        reverse("ratings:study_live", args=[pairwise_study.pk]),
        reverse("ratings:study_pay_export", args=[pairwise_study.pk]),
        reverse("ratings:study_export", args=[pairwise_study.pk]),
        reverse("ratings:study_publish", args=[pairwise_study.campaign.pk]),
    ]
    client.force_login(make_user("someone", "rater", "annotator", "reviewer"))
    assert {client.get(url).status_code for url in urls} == {403}
    client.force_login(make_user("organiser", staff=True))
    assert {client.get(url).status_code for url in urls} == {200, 302}
    pay = client.get(reverse("ratings:study_pay_export", args=[pairwise_study.pk]))
    assert pay["Content-Type"].startswith("text/csv") and pay.content.decode().startswith("platform,participant_id")


def test_an_mturk_pay_csv_has_mturks_batch_columns_and_abandoned_arrivals_time_out(settings):
    study = make_pairwise_study(
        name="mturk-pay", platforms=["mturk"], reward_currency="USD", screens="none", questionnaire=[]
    )
    submit_to = "https://workersandbox.mturk.com"
    worker = mturk_worker_id()
    done = Client(REMOTE_ADDR="10.10.0.1")
    done.get(arrival_url(study, workerId=worker, assignmentId="Q" * 30, hitId="R" * 30, turkSubmitTo=submit_to))
    participant = walk_to_items(done, study)
    answer_share(done, participant, side_for=_good_side)
    end = done.get(done.get(f"/study/{study.slug}/items/")["Location"]).content.decode()
    assert f'action="{submit_to}/mturk/externalSubmit"' in end and 'name="assignmentId" value="' + "Q" * 30 in end
    stalled = Client(REMOTE_ADDR="10.10.0.2")
    stalled.get(
        arrival_url(study, workerId=mturk_worker_id(), assignmentId="S" * 30, hitId="R" * 30, turkSubmitTo=submit_to)
    )
    Participant.objects.filter(platform_data__assignmentId="S" * 30).update(
        updated_at=timezone.now() - timedelta(minutes=study.time_limit_minutes + 1)
    )
    from ratings.services.study_shares import expired_shares_release_now

    expired_shares_release_now(study=study)
    rows = list(csv.DictReader(io.StringIO(study_pay_csv(study=study, platform=study.platforms[0]))))
    assert list(rows[0]) == [
        "HITId", "AssignmentId", "WorkerId", "participant", "status", "completion_code", "minutes", "reasons",
        "rules", "action", "Approve", "Reject",
    ]  # fmt: skip
    by_assignment = {row["AssignmentId"]: row for row in rows}
    assert (by_assignment["Q" * 30]["WorkerId"], by_assignment["Q" * 30]["Approve"]) == (worker, "x")
    assert by_assignment["Q" * 30]["completion_code"] == study.completion_code
    assert (by_assignment["S" * 30]["status"], by_assignment["S" * 30]["Approve"]) == ("timed_out", "")


def test_participants_are_not_offered_as_raters_of_other_campaigns(client, pairwise_study, make_user):
    from ratings.forms import rater_candidates

    prolific_arrive(pairwise_study)
    participant = Participant.objects.get()
    regular = make_user("regular", "rater")
    assert list(rater_candidates()) == [regular]
    client.force_login(make_user("organiser", staff=True))
    assert participant.user.username not in client.get(reverse("ratings:rater_list")).content.decode()


def test_an_arrival_failing_another_constraint_says_so(pairwise_study, monkeypatch):
    """Only a duplicate arrival (the same id at once in two tabs) is answered with the other request's participant;
    any other constraint's failure stays that error, not a missing participant's."""
    from ratings.crowd_platforms import Arrival
    from ratings.services import participants

    def failing_create(**options):
        raise IntegrityError('duplicate key value violates unique constraint "auth_user_username_key"')

    monkeypatch.setattr(participants, "_create", failing_create)
    with pytest.raises(IntegrityError, match="auth_user_username_key"):
        participants.participant_arrive(
            study=pairwise_study, arrival=Arrival("prolific", prolific_id()), address="10.7.0.1"
        )
    assert not Participant.objects.filter(study=pairwise_study).exists()

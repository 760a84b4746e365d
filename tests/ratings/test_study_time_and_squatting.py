"""A crowd participant's time and the slots they hold: the countdown and the leave link on every page, what leaving
and the end of the time limit keep and free (coverage, figures and the pay export agree), and no reward without
work (shares that go quiet come back, reservations never make a study "full", a cap on arrivals not yet rating)."""

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratings.models import PairwiseVote
from ratings.models_study import Participant, ParticipantEvent, StudySlot
from ratings.selectors import included_votes
from ratings.services.study_report import study_pay_csv
from ratings.services.study_shares import study_coverage
from ratings.views_study import enter_token
from tests.ratings.study_data import (
    arrival_url,
    item_answer_post,
    item_audio_play,
    mturk_worker_id,
    participant_of,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)
from tests.ratings.study_data import pairwise_study as make_pairwise_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]
CLOCK = re.compile(r'id="study-clock" data-seconds-left="(\d+)"')


def _seconds_left(page: str) -> int:
    found = CLOCK.search(page)
    assert found, "no countdown on the page"
    return int(found.group(1))


def _regular(participant: Participant) -> list:
    return [item for item in share_items(participant) if not item.pair.gold_choice]


def _pay_rows(study) -> dict:
    return {
        row["participant_id"]: row
        for row in csv.DictReader(io.StringIO(study_pay_csv(study=study, platform=study.platforms[0])))
    }


def _move_back(participant: Participant, **minutes) -> None:
    """Move the participant's arrival or last request back in time (instead of waiting)."""
    now = timezone.now()
    Participant.objects.filter(pk=participant.pk).update(
        **{field: now - timedelta(minutes=value) for field, value in minutes.items()}
    )


# --- The countdown and the leave link on every page -------------------------------------------------------


def test_every_participant_page_shows_the_time_left_from_arrival_and_the_leave_link():
    study = make_pairwise_study(time_limit_minutes=60)
    client, _ = prolific_arrive(study)
    participant = participant_of(client)
    _move_back(participant, created_at=10)  # arrived ten minutes ago: 50 minutes are left, on every page
    for stage in ("entry", "consent"):  # the landing page, then (after starting) the consent page
        url = reverse(f"study:{stage}", kwargs={"slug": study.slug})
        page = client.get(url).content.decode()
        assert 50 * 60 - 5 <= _seconds_left(page) <= 50 * 60, url
        assert f'href="/study/{study.slug}/leave/"' in page
        client.post(url)
    walk_to_items(client, study)
    participant.refresh_from_db()
    # The share is reserved until the same deadline (the time limit counts from arrival, not from the start).
    assert abs((participant.reserved_until - participant.created_at).total_seconds() - 60 * 60) < 1
    item = share_items(participant)[0]
    page = client.get(reverse("ratings:item", kwargs={"token": item.token})).content.decode()
    assert 50 * 60 - 10 <= _seconds_left(page) <= 50 * 60
    assert f'href="/study/{study.slug}/leave/"' in page and "study_clock.js" in page
    # A rater who is not a participant never gets the bar.
    assert "study-clock" not in Client().get(reverse("study:entry", kwargs={"slug": study.slug})).content.decode()


# --- Leaving ----------------------------------------------------------------------------------------------


def test_leaving_mid_study_keeps_the_answers_frees_the_rest_at_once_and_coverage_and_exports_agree():
    study = make_pairwise_study()  # 6 HC pairs x 2 judgements, 3 per share
    client, _ = prolific_arrive(study)
    participant = walk_to_items(client, study)
    answered = _regular(participant)[0]
    assert item_answer_post(client, answered).status_code == 302
    before = study_coverage(study=study)
    assert (before.judged, before.reserved, before.free) == (1, 2, 9)
    # The leave link asks first (nothing is ended by a GET), then leaves.
    confirm = client.get(reverse("study:leave", kwargs={"slug": study.slug}))
    assert confirm.status_code == 200 and "Leave the study?" in confirm.content.decode()
    assert Participant.objects.get(pk=participant.pk).stage == "items"
    response = client.post(reverse("study:leave", kwargs={"slug": study.slug}))
    end = client.get(response["Location"]).content.decode()
    assert "You left the study" in end and "study-clock" not in end
    participant.refresh_from_db()
    assert participant.status == "returned"
    assert [item.pk for item in share_items(participant)] == [answered.pk]
    after = study_coverage(study=study)
    assert (after.judged, after.reserved, after.free) == (1, 0, 11)
    assert after.counted == included_votes(PairwiseVote.objects.filter(campaign=study.campaign)).count() == 1
    row = _pay_rows(study)[participant.platform_id]
    assert (row["status"], row["completion_code"], row["action"]) == ("returned", "", "none")
    # The freed items go to the next participant at once.
    nxt, _ = prolific_arrive(study, address="10.0.0.2")
    newcomer = walk_to_items(nxt, study)
    assert len(_regular(newcomer)) == 3


def test_leaving_before_rating_from_the_consent_page_and_on_mturk_asks_to_return_the_hit(settings):
    study = make_pairwise_study(platforms=["mturk"], reward_currency="USD", questionnaire=[])
    client = Client(REMOTE_ADDR="10.3.0.1")
    client.get(
        arrival_url(
            study,
            workerId=mturk_worker_id(),
            assignmentId="L" * 30,
            hitId="H" * 30,
            turkSubmitTo="https://workersandbox.mturk.com",
        )
    )
    client.post(reverse("study:entry", kwargs={"slug": study.slug}))
    consent = client.get(reverse("study:consent", kwargs={"slug": study.slug})).content.decode()
    assert f'href="/study/{study.slug}/leave/"' in consent
    response = client.post(reverse("study:leave", kwargs={"slug": study.slug}))
    end = client.get(response["Location"]).content.decode()
    assert 'id="return-hit"' in end and "completion-code" not in end and "externalSubmit" not in end
    assert participant_of(client).status == "returned"


# --- The end of the time limit ----------------------------------------------------------------------------


def test_at_expiry_the_answer_sent_by_the_countdown_counts_the_rest_is_freed_and_the_draft_is_reported(make_user):
    study = make_pairwise_study()
    client, _ = prolific_arrive(study)
    participant = walk_to_items(client, study)
    first, second, third = _regular(participant)
    assert item_answer_post(client, first).status_code == 302
    # The second item's answer is complete when the time runs out; the third has a draft only.
    third_url = reverse("ratings:item", kwargs={"token": third.token})
    page = client.get(third_url).content.decode()
    version = re.search(r'name="version" value="(\d+)"', page).group(1)
    item_audio_play(client, third)
    draft = client.post(
        f"{third_url}draft/", json.dumps({"version": int(version), "fields": {"side": "right"}}), "application/json"
    )
    assert draft.status_code == 200
    second_url = reverse("ratings:item", kwargs={"token": second.token})
    page = client.get(second_url).content.decode()
    version = re.search(r'name="version" value="(\d+)"', page).group(1)
    item_audio_play(client, second)
    assert client.post(f"{second_url}listened/", "{}", content_type="application/json").status_code == 200
    # The countdown reached 0 a few seconds ago: the page submits the complete answer, which still lands.
    Participant.objects.filter(pk=participant.pk).update(reserved_until=timezone.now() - timedelta(seconds=5))
    submitted = client.post(second_url, {"version": version, "side": "left"})
    assert submitted.status_code == 302
    assert PairwiseVote.objects.filter(rater=participant.user, pair=second.pair).count() == 1
    # Then the page goes to the study: the participation ends, the end page says so and reports the draft.
    response = client.get(reverse("study:items", kwargs={"slug": study.slug}))
    assert response.status_code == 302 and response["Location"].endswith("/end/")
    end = client.get(response["Location"]).content.decode()
    assert "time limit has passed" in end and 'id="drafts-kept"' in end
    participant.refresh_from_db()
    assert participant.status == "timed_out"
    kept = {item.pk for item in share_items(participant)}
    assert kept == {first.pk, second.pk}  # the answered ones; the rest (the draft's item, the checks) is freed
    event = ParticipantEvent.objects.get(participant=participant, kind="timed_out")
    assert event.detail["reason"] == "time_limit"
    assert event.detail["drafts_kept"] == [{"position": third.position, "draft": {"side": "right"}}]
    coverage = study_coverage(study=study)
    assert (coverage.judged, coverage.reserved, coverage.free) == (2, 0, 10)
    assert coverage.counted == included_votes(PairwiseVote.objects.filter(campaign=study.campaign)).count() == 2
    row = _pay_rows(study)[participant.platform_id]
    assert (row["status"], row["action"]) == ("timed_out", "none")
    # The admin's pages show the same: the participant's page lists the kept draft, the study page the coverage.
    admin = Client()
    admin.force_login(make_user("organiser", staff=True))
    page = admin.get(reverse("ratings:study_participant", args=[study.pk, participant.pk]))
    assert page.status_code == 200 and "drafts_kept" in page.content.decode() and "time_limit" in page.content.decode()
    assert admin.get(reverse("ratings:study_detail", args=[study.pk])).status_code == 200


def test_the_grace_for_an_answer_sent_at_the_end_is_bounded(settings):
    settings.STUDY_EXPIRY_GRACE_SECONDS = 30
    study = make_pairwise_study()
    client, _ = prolific_arrive(study)
    participant = walk_to_items(client, study)
    ready = []
    for item in _regular(participant)[:2]:
        url = reverse("ratings:item", kwargs={"token": item.token})
        version = re.search(r'name="version" value="(\d+)"', client.get(url).content.decode()).group(1)
        item_audio_play(client, item)
        assert client.post(f"{url}listened/", "{}", content_type="application/json").status_code == 200
        ready.append((item, url, version))
    (inside, inside_url, inside_version), (late, late_url, late_version) = ready
    # 29 s after the end: still within the grace, the answer lands.
    Participant.objects.filter(pk=participant.pk).update(reserved_until=timezone.now() - timedelta(seconds=29))
    assert client.post(inside_url, {"version": inside_version, "side": "left"}).status_code == 302
    assert PairwiseVote.objects.filter(rater=participant.user, pair=inside.pair).exists()
    # 31 s after: refused, the participation ends, and the answer counts nowhere.
    Participant.objects.filter(pk=participant.pk).update(reserved_until=timezone.now() - timedelta(seconds=31))
    response = client.post(late_url, {"version": late_version, "side": "left"})
    assert response.status_code == 302 and response["Location"].endswith("/end/")
    assert not PairwiseVote.objects.filter(rater=participant.user, pair=late.pair).exists()
    assert study_coverage(study=study).judged == 1


def test_the_time_limit_counts_from_arrival_before_rating_too():
    study = make_pairwise_study(time_limit_minutes=30)
    client, _ = prolific_arrive(study)
    participant = participant_of(client)
    client.post(reverse("study:entry", kwargs={"slug": study.slug}))
    _move_back(participant, created_at=31)  # still clicking around, but arrived 31 minutes ago
    response = client.get(reverse("study:consent", kwargs={"slug": study.slug}))
    assert response.status_code == 302 and response["Location"].endswith("/end/")
    assert "time limit has passed" in client.get(response["Location"]).content.decode()
    assert participant_of(client).status == "timed_out"


# --- No reward without work -------------------------------------------------------------------------------


def test_six_squatters_from_six_addresses_cannot_fill_the_study_and_their_shares_come_back():
    # 6 HC pairs x 3 judgements = 18 slots, 3 per share: six participants reserve them all, or seven when the gold
    # rule (no gold check of a clip the share plays) drew one share among less covered items and left a last slot.
    study = make_pairwise_study(name="squat", judgements=3)
    squatters = []
    while study_coverage(study=study).free and len(squatters) < 7:
        client, _ = prolific_arrive(study, address=f"10.20.{len(squatters)}.1")
        squatters.append(walk_to_items(client, study))
    coverage = study_coverage(study=study)
    assert (coverage.reserved, coverage.free, coverage.judged) == (18, 0, 0)
    assert len(squatters) in (6, 7)
    # A seventh person is not told "study full" (a paid ending): every slot is only reserved.
    late, response = prolific_arrive(study, address="10.20.9.1")
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    assert "try again" in response.content.decode().lower() and study.full_code not in response.content.decode()
    assert Participant.objects.count() == len(squatters)
    assert not Participant.objects.filter(status="full").exists()
    # Ten minutes without a request from the squatters: the next arrival frees their shares and gets one.
    for squatter in squatters:
        _move_back(squatter, updated_at=11)
    late, response = prolific_arrive(study, address="10.20.9.1")
    assert response.status_code == 302
    newcomer = walk_to_items(late, study)
    assert newcomer.stage == "items" and len(_regular(newcomer)) == 3
    assert StudySlot.objects.filter(participant=newcomer).count() == 3
    statuses = set(Participant.objects.filter(pk__in=[s.pk for s in squatters]).values_list("status", flat=True))
    assert statuses == {"timed_out"}
    rows = _pay_rows(study)
    assert {rows[s.platform_id]["action"] for s in squatters} == {"none"}
    assert not [row for row in rows.values() if row["status"] == "full"]


def test_an_inactive_share_is_released_when_someone_starts_and_an_active_one_is_kept():
    study = make_pairwise_study(name="idle", hc=3, judgements=1)  # 3 slots: one share holds them all
    waiting_client, _ = prolific_arrive(study, address="10.30.0.2")
    waiting = participant_of(waiting_client)
    holder_client, _ = prolific_arrive(study, address="10.30.0.1")
    holder = walk_to_items(holder_client, study)
    # The holder went quiet 11 minutes ago but made a request just now (an item page): still active.
    _move_back(holder, updated_at=11)
    item = share_items(holder)[0]
    assert holder_client.get(reverse("ratings:item", kwargs={"token": item.token})).status_code == 200
    walk = _walk_to_start(waiting_client, study)
    assert walk.status_code == 302 and walk["Location"].endswith("/instructions/")
    page = waiting_client.get(walk["Location"]).content.decode()
    assert "try again in a few minutes" in page
    waiting.refresh_from_db()
    assert (waiting.stage, waiting.status) == ("instructions", "in_progress")
    # Quiet for 11 minutes now: the next start takes the share back and gives it to the waiting participant.
    _move_back(holder, updated_at=11)
    # A status poll (MTurk's frame asks whether the study ended) is no sign of work: it keeps nothing alive.
    poll = Client().get(reverse("study:status", kwargs={"slug": study.slug, "token": enter_token(holder)}))
    assert poll.status_code == 200 and poll.json()["finished"] is False
    response = waiting_client.post(reverse("study:start", kwargs={"slug": study.slug}))
    assert response.status_code == 302
    waiting.refresh_from_db()
    holder.refresh_from_db()
    assert waiting.stage == "items" and holder.status == "timed_out"
    event = ParticipantEvent.objects.get(participant=holder, kind="timed_out")
    assert event.detail["reason"] == "inactive" and event.detail["slots_freed"] == 3
    # The holder's next request shows why the study ended.
    end = holder_client.get(holder_client.get(reverse("study:items", kwargs={"slug": study.slug}))["Location"])
    assert "after a long pause" in end.content.decode()


def _walk_to_start(client: Client, study):
    """walk_to_items without its checks on the start: the response of the start."""
    slug = study.slug
    client.post(reverse("study:entry", kwargs={"slug": slug}))
    client.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "agree"})
    if study.questionnaire:
        client.post(reverse("study:questionnaire", kwargs={"slug": slug}), {"age_band": "25-34"})
    from tests.ratings.study_data import practice_audio_play

    practice_audio_play(client, study)
    client.post(reverse("study:instructions", kwargs={"slug": slug}), {"side": "left"})
    return client.post(reverse("study:start", kwargs={"slug": slug}))


def test_the_cap_on_unstarted_participants_holds_against_many_addresses(settings):
    settings.STUDY_UNSTARTED_LIMIT = 3
    study = make_pairwise_study(name="capped")
    arrived = [prolific_arrive(study, address=f"10.40.{number}.1") for number in range(3)]
    assert all(response.status_code == 302 for _, response in arrived)
    # A fourth, from yet another address: try again later, nobody created, no code, nothing to pay.
    _, refused = prolific_arrive(study, address="10.40.9.1")
    assert refused.status_code == 503 and "try again" in refused.content.decode().lower()
    assert Participant.objects.count() == 3
    # One who already arrived comes back: resumed, not refused.
    first_client = arrived[0][0]
    pid = participant_of(first_client).platform_id
    _, resumed = prolific_arrive(study, pid, address="10.40.0.1")
    assert resumed.status_code == 302
    # One starts rating: no longer "unstarted", so a place opens.
    walk_to_items(first_client, study)
    _, admitted = prolific_arrive(study, address="10.40.9.2")
    assert admitted.status_code == 302 and Participant.objects.count() == 4
    # Full again; one of the unstarted goes quiet for 11 minutes: their place opens too.
    _, refused = prolific_arrive(study, address="10.40.9.3")
    assert refused.status_code == 503
    _move_back(participant_of(arrived[1][0]), updated_at=11)
    _, admitted = prolific_arrive(study, address="10.40.9.3")
    assert admitted.status_code == 302 and Participant.objects.count() == 5

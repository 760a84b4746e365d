"""The queries of a crowd participant's requests before the items, held to what they need.

A study's participants arrive within a minute or so, and each walks landing, consent, questionnaire, the headphone
screen (page, six trial sounds, answers), the instructions with the practice and the start of the share in its first
minute: these requests are the bulk of the load while the crowd arrives. The counts below are what each request
needs; a new query on this path (a repeated read, a role check a participant cannot fail, a lock or transaction
around one statement) shows up here. The item requests: test_participant_request_queries.py.
"""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ratings.crowd_platforms import Arrival
from ratings.models import Assignment, HeadphoneCheck
from ratings.models_study import Participant, Study, StudySlot
from ratings.services.headphone import screen
from ratings.services.participants import StudyBusyError, participant_arrive, participant_items_start
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    prolific_id,
    study_media,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

# Session and the user read with their participation, study and campaign (ratings.authentication.ParticipantBackend).
# With REDIS_URL set the session comes from Redis (config/settings.py), not from the database.
PER_REQUEST = 1 if settings.SESSION_ENGINE == "config.sessions" else 2
# BEGIN and COMMIT (or SAVEPOINT and RELEASE inside the test's transaction on either database).
TRANSACTION = 2

EXPECTED = {
    # The landing's POST (the study was read with the participant): the stage moved on by a conditional UPDATE, the
    # event. So are consent and the questionnaire.
    "POST start": PER_REQUEST + TRANSACTION + 2,
    "GET consent": PER_REQUEST,
    "POST consent": PER_REQUEST + TRANSACTION + 2,
    "GET questionnaire": PER_REQUEST,
    "POST questionnaire": PER_REQUEST + TRANSACTION + 2,
    # The participant's attempts in one read (which screen, its open attempt, the status), the new attempt.
    "GET headphones": PER_REQUEST + 2,
    # Nothing but the session: the participant's roles are known without reading their groups.
    "GET calibration sound": PER_REQUEST,
    # The attempt (the rater's own, open) and the compare-and-set marking its trial played.
    "GET screen sound": PER_REQUEST + 2,
    # A second request for a played trial: the attempt read says so.
    "GET screen sound again": PER_REQUEST + 1,
    # The attempts, the compare-and-set scoring the attempt, then the participant moved on with its event.
    "POST screen": PER_REQUEST + 1 + 1 + (TRANSACTION + 2),
    "GET instructions": PER_REQUEST,
    "GET practice sound": PER_REQUEST + 1,
    # The sound's time as read with the participant; the conditional UPDATE marking the practice done, its event.
    "POST practice": PER_REQUEST + TRANSACTION + 2,
    # The share (ratings/services/study_shares/allocation.py): the due-release check, then in one transaction the
    # locked participant, the assignment looked up, the slot coverage, the assignment made, the gold pool (the pairs
    # with their donors and use, one read), the claimed slots, the items (one INSERT: no read of the items already
    # there, which the assignment has none of, and no savepoint), their checks, the slots taken, the participant
    # moved on, its event. The share's pairs are not read: the plan's slots name them.
    "POST start share": PER_REQUEST + 14,
}


# A new session: its INSERT in its own transaction, after a lookup of the new key with Django's database store (not
# with the Redis one, config.sessions, whose INSERT alone finds a taken key).
NEW_SESSION = (0 if settings.SESSION_ENGINE == "config.sessions" else 1) + TRANSACTION + 1
# A new participant's arrival link (a browser with no session yet): the study; the participant of the link or one of
# a study it excludes (one read); the address's recent arrivals; then in one transaction the study's lock, whether a
# slot is free, the unstarted count, the account, its groups (one INSERT ... SELECT), the participant, its event and
# the Prolific admission check's read of the study's link (ratings/apps.py). The session is saved once, at the end,
# with no other sign-in bookkeeping (ratings.authentication.participant_sign_in).
ARRIVAL = 3 + TRANSACTION + 3 + 4 + 1 + NEW_SESSION
# The same link in another browser within the minute: the study, the participant read with their account, the
# "resumed" event, the session.
RESUMED_ARRIVAL = 3 + NEW_SESSION


def test_an_arrival_link_reads_and_writes_only_what_it_needs():
    study = pairwise_study(screens=Study.Screens.ANTIPHASE)
    prolific_arrive(study, address="10.0.0.9")  # not the first participant ever (whose arrival makes a group)
    pid = prolific_id()
    with CaptureQueriesContext(connection) as arrival:
        client, response = prolific_arrive(study, pid)
    assert response.status_code == 302 and response["Location"] == reverse("study:entry", kwargs={"slug": study.slug})
    participant = participant_of(client)
    assert participant.platform_id == pid and participant.stage == Participant.Stage.LANDING
    assert list(participant.user.groups.values_list("name", flat=True).order_by("name")) == ["participant", "rater"]
    with CaptureQueriesContext(connection) as resumed:
        other, response = prolific_arrive(study, pid, address="10.0.0.2")
    assert response.status_code == 302 and participant_of(other) == participant

    assert len(arrival) == ARRIVAL, "\n".join(query["sql"][:150] for query in arrival)
    assert len(resumed) == RESUMED_ARRIVAL, "\n".join(query["sql"][:150] for query in resumed)


def _measured(counts: dict, name: str, request):
    with CaptureQueriesContext(connection) as captured:
        response = request()
    if hasattr(response, "streaming_content"):
        b"".join(response.streaming_content)
    counts[name] = len(captured)
    return response


def test_the_requests_before_the_items_read_and_write_only_what_they_need():
    study = pairwise_study(screens=Study.Screens.ANTIPHASE)
    slug = study.slug
    client = Client()
    prolific_arrive(study, client=client)
    counts: dict[str, int] = {}

    def url(name: str) -> str:
        return reverse(f"study:{name}", kwargs={"slug": slug})

    assert _measured(counts, "POST start", lambda: client.post(url("entry"))).status_code == 302
    assert _measured(counts, "GET consent", lambda: client.get(url("consent"))).status_code == 200
    response = _measured(counts, "POST consent", lambda: client.post(url("consent"), {"decision": "agree"}))
    assert response["Location"] == url("questionnaire")
    assert _measured(counts, "GET questionnaire", lambda: client.get(url("questionnaire"))).status_code == 200
    response = _measured(counts, "POST questionnaire", lambda: client.post(url("questionnaire"), {"age_band": "35+"}))
    assert response["Location"] == url("headphones")

    page = _measured(counts, "GET headphones", lambda: client.get(url("headphones")))
    assert page.status_code == 200
    check = HeadphoneCheck.objects.get(rater=participant_of(client).user)
    assert f'name="check_id" value="{check.pk}"' in page.content.decode()
    sound_urls = re.findall(r'data-url="(/ratings/headphones/attempts/[^"]+)"', page.content.decode())
    assert len(sound_urls) == len(check.trials) == 6
    calibration_url = re.search(r'id="calibration-audio"[^>]* src="([^"]+)"', page.content.decode()).group(1)
    calibration = _measured(counts, "GET calibration sound", lambda: client.get(calibration_url))
    assert calibration.status_code == 200 and calibration.content.startswith(b"RIFF")
    for number, sound_url in enumerate(sound_urls):
        sound = _measured(counts, "GET screen sound", lambda sound_url=sound_url: client.get(sound_url))
        assert sound.status_code == 200 and sound.content.startswith(b"RIFF"), number
    again = _measured(counts, "GET screen sound again", lambda: client.get(sound_urls[0]))
    assert again.status_code == 410
    check.refresh_from_db()
    test = screen(check.kind)
    answers = {f"trial_{number}": test.trial_answer(trial) + 1 for number, trial in enumerate(check.trials, start=1)}
    answers["check_id"] = check.pk
    response = _measured(counts, "POST screen", lambda: client.post(url("headphones"), answers))
    assert response["Location"] == url("instructions")

    assert _measured(counts, "GET instructions", lambda: client.get(url("instructions"))).status_code == 200
    assert _measured(counts, "GET practice sound", lambda: client.get(url("practice_audio"))).status_code == 200
    Participant.objects.filter(pk=participant_of(client).pk).update(
        practice_audio_served_at=timezone.now() - timedelta(seconds=30)
    )

    practice = {"side": "left", "precision_1": "5"}
    response = _measured(counts, "POST practice", lambda: client.post(url("instructions"), practice))
    assert response.status_code == 200 and participant_of(client).practice_done_at is not None
    response = _measured(counts, "POST start share", lambda: client.post(url("start")))
    assert response["Location"] == url("items")
    assert participant_of(client).stage == Participant.Stage.ITEMS

    assert counts == EXPECTED


def test_a_start_refused_while_every_slot_is_reserved_writes_nothing():
    """Under a crowd about half the presses of "start" come while every slot is reserved and are pressed again
    later: the refusal reads the participant (locked), their assignment and the slot coverage, then whether
    anyone still holds a slot. No assignment is made and deleted again."""
    study = pairwise_study(name="arrival-queries-busy", hc=2, judgements=1, items_per_participant=2, attention_checks=0)
    first, second = (_ready(study, f"10.7.{index}.1") for index in range(2))
    assert participant_items_start(participant=first).stage == Participant.Stage.ITEMS
    assert not StudySlot.objects.filter(study=study, participant__isnull=True).exists()

    with CaptureQueriesContext(connection) as captured, pytest.raises(StudyBusyError):
        participant_items_start(participant=second)

    statements = [query["sql"].split()[0].upper() for query in captured]
    assert not {"INSERT", "UPDATE", "DELETE"} & set(statements), statements
    # The due-release check; in the transaction the lock, the assignment, the coverage; then the busy check.
    assert len(captured) == 1 + TRANSACTION + 3 + 1, [query["sql"] for query in captured]
    second.refresh_from_db()
    assert second.stage == Participant.Stage.INSTRUCTIONS
    assert not Assignment.objects.filter(campaign=study.campaign, rater=second.user).exists()


def _ready(study: Study, address: str) -> Participant:
    """A participant of the study at the instructions with the practice done, read as a request reads them."""
    participant = participant_arrive(study=study, arrival=Arrival("prolific", prolific_id()), address=address)
    Participant.objects.filter(pk=participant.pk).update(
        stage=Participant.Stage.INSTRUCTIONS, practice_done_at=timezone.now()
    )
    return Participant.objects.select_related("study__campaign", "user").get(pk=participant.pk)
